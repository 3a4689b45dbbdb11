"""Our cables' rod joints into Newton's builder: what the bridge's joints do not carry, their rest rotations.

The bridge (:mod:`.model_bridge`) adds a cable's segment bodies, capsules and rod joints (``JointType.ROD``: stretch,
shear, bend and twist stiffness and damping on its six DOFs) as it adds every body and joint; a rod joint's rest
pose (``joint_rest_q``: no offset, the rest rotation of its child anchor relative to its parent's) is the cable's
record's (:class:`~newton_usd.core.cables.Cable`), set here. Only Newton's VBD simulates rod joints (its XPBD,
Featherstone and semi-implicit solvers refuse them).
"""

from __future__ import annotations

from ...core.cables import rod_rest_rotations


def bridge_rods(nb, model) -> None:
    """Set the rest rotations of ``model``'s cables' rod joints in Newton's builder ``nb`` (after its joints, those
    of every world: each world's cables have records of their own)."""
    for j, rotation in rod_rest_rotations(model.cables).items():
        q0 = int(nb.joint_q_start[j])
        nb.joint_rest_q[q0 + 3 : q0 + 7] = [float(x) for x in rotation]

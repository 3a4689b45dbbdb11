"""Newton's articulations from our model's joints, for the bridge (:mod:`.model_bridge`): one per tree of joints,
the joints that close loops left out."""

from __future__ import annotations

from ...errors import NewtonUsdError


def add_articulations(nb, model, a, joints) -> None:
    """One Newton articulation per tree of ``joints`` (bodies connected through joints; our articulations are
    such trees), as Newton's solvers need: every joint in one, a tree's joints contiguous. ``a``: our model's arrays
    on the host (``joint_parent``, ``joint_child``). A joint into a body that an earlier joint already moves closes a
    loop (a closed cable's last rod joint, a cable held at a second point) and stays outside, as Newton's own builder
    leaves it (VBD solves it as any joint)."""
    moved, tree = set(), []
    for j in joints:
        if int(a["joint_child"][j]) not in moved:
            moved.add(int(a["joint_child"][j]))
            tree.append(j)
    joints = tree
    root = {}

    def find(x):
        while root.get(x, x) != x:
            root[x] = root.get(root[x], root[x])
            x = root[x]
        return x

    for j in joints:
        p, c = int(a["joint_parent"][j]), int(a["joint_child"][j])
        if p >= 0:
            root[find(p)] = find(c)
    groups = {}
    for j in joints:
        groups.setdefault(find(int(a["joint_child"][j])), []).append(int(j))
    for members in sorted(groups.values()):
        if members[-1] - members[0] + 1 != len(members):
            raise NewtonUsdError(
                f"{model.source or 'the model'}: the joints of the tree of {model.joint_label[members[0]]} are not "
                "contiguous in the model: Newton's articulations cannot be built from it"
            )
        nb.add_articulation(members)

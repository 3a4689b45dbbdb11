"""Kinematics and dynamics utilities over a Model, batched over worlds in Warp kernels (solver-independent).

``eval_fk`` (body poses from joint coordinates), ``jacobian`` (a body point's Jacobian), ``mass_matrix``
(joint space) and ``eval_ik`` (damped least squares towards link targets). Joint coordinate conventions are
the Model's (:class:`~newton_usd.core.types.JointType`); ``core.kinematics`` holds the host-side joint motions
the MuJoCo spec builder uses.
"""

from .fk import eval_fk
from .ik import IKResult, IKTarget, eval_ik
from .jacobian import jacobian, jacobians, mass_matrix

__all__ = ["IKResult", "IKTarget", "eval_fk", "eval_ik", "jacobian", "jacobians", "mass_matrix"]

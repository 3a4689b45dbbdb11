"""The interface every solver implements."""

from __future__ import annotations

import math

import numpy as np

from ..core.model import element_name
from ..errors import NewtonUsdError


class SolverBase:
    """A solver advances a State of a Model by one step.

    Args:
        model: the finalized Model it simulates.
    """

    name = ""
    """The name ``usdsim --solver`` takes."""

    kinematic_joint_q = False
    """Whether the solver takes a kinematic body's pose from its free joint's coordinates (a solver that steps joint
    coordinates): the stepping writes them with the body's pose (else its ``body_q`` row alone)."""

    def __init__(self, model):
        self.model = model
        self.device = model.device
        self.options = {}  # the constructor's keyword arguments (see rebuilt)

    @classmethod
    def options_from_scene(cls, settings: dict) -> dict:
        """The constructor's keyword arguments from a PhysicsScene's resolved settings (name -> value)."""
        return {}

    @classmethod
    def from_scene(cls, model, settings: dict, **asked) -> "SolverBase":
        """A solver for ``model`` with the scene's settings (``settings``: name -> value, see
        ``UsdImport.scene``), overridden by the arguments ``asked`` (None: not asked)."""
        options = cls.options_from_scene(settings)
        options.update({k: v for k, v in asked.items() if v is not None})
        return cls(model, **options)

    def rebuilt(self, model) -> "SolverBase":
        """A solver of the same kind and options for ``model`` (a live edit that changed the model)."""
        return type(self)(model, **self.options)

    def keyframe_index(self, key) -> int:
        """The index of keyframe ``key``: an index, a label (the MJCF key name, the MjcKeyframe prim path),
        or a keyframe's name (its prim's displayName or name: "home" for ``/robot/Keyframes/home``) when only
        one keyframe has it."""
        labels = self.model.keyframe_label
        if isinstance(key, (int, np.integer)):
            if not 0 <= key < len(labels):
                raise NewtonUsdError(f"keyframe {key} does not exist (the model has {len(labels)})")
            return int(key)
        if key in labels:
            return labels.index(key)
        by_name = [i for i, label in enumerate(labels) if element_name(self.model, label) == key]
        if len(by_name) != 1:
            raise NewtonUsdError(f"no keyframe {key!r}; the model has: {', '.join(labels) or 'none'}")
        return by_name[0]

    def step(self, state_in, state_out, control, contacts, dt: float) -> None:
        """Advance ``state_in`` by ``dt`` seconds under ``control`` and write the result to ``state_out``.

        ``state_in`` and ``state_out`` may be the same object. ``contacts`` may be None for solvers that
        detect their own contacts (see ``update_contacts``).
        """
        raise NotImplementedError

    def joint_states_written(self, state, worlds=None) -> None:
        """``state``'s joint coordinates or velocities were written (a view, a reset): make the rest of the state
        follow them where the solver steps body states, in the worlds of ``worlds`` (a bool Warp array, one per
        world; None: every world). The default does nothing: solvers that step joint coordinates, or detect edits
        themselves (SolverMuJoCo), need no word."""

    def reset_actuators(self, worlds=None) -> None:
        """The joint actuators' own state (a PID's integral, a delay's history) back to its start, in the worlds of
        ``worlds`` (a bool Warp array, one per world; None: every world), as a reset of the simulation's state does.
        The default: the actuators of :attr:`actuators` (None: the solver has none)."""
        actuators = getattr(self, "actuators", None)
        if actuators is not None:
            actuators.reset(worlds)

    @property
    def follows_joint_writes(self) -> bool:
        """Whether :meth:`joint_states_written` does something: the solver steps body states, and a joint state
        written must be carried into them (a caller with nothing else to do for the write can skip its work)."""
        return type(self).joint_states_written is not SolverBase.joint_states_written

    @classmethod
    def setup_kernel_modules(cls, device, options: dict) -> list:
        """The Warp modules a solver of this class, made on ``device`` with ``options`` (its constructor's keyword
        arguments, as far as they are known), will launch kernels of, known before it is made: compiled in parallel
        while it is made (:mod:`~newton_usd.solvers.kernel_loading`). The default: none."""
        return []

    def kernel_modules(self) -> list:
        """The Warp modules its steps launch kernels of, as far as they are known before the first step (compiled in
        parallel beside it: :mod:`~newton_usd.solvers.kernel_loading`). The default: none (a solver that runs no Warp
        kernel, or leaves them to be loaded as they are met)."""
        return []

    def stable_step(self) -> float:
        """s: the longest step estimated stable on this model (where the solver integrates stiff forces
        explicitly); inf where it has no such bound. The default: inf."""
        return math.inf

    def step_limit(self):
        """What sets :meth:`stable_step` (a :class:`~newton_usd.solvers.newton.stable_step.StableStep`: the joint or
        body, the kind of force and its gain), where the solver has such a bound; None where it has none."""
        return None

    def step_diagnostics(self, dt: float, diagnostics) -> None:
        """Add to ``diagnostics`` (:class:`~newton_usd.diagnostics.Diagnostics`) what steps of ``dt`` s risk on this
        model, as ``usdsim check`` lists it for a scene's step. The default: nothing."""

    def update_contacts(self, contacts) -> None:
        """Fill ``contacts`` (:class:`~newton_usd.core.Contacts`) with every world's contacts at the current
        state and their forces, where the solver detects its own."""
        raise NotImplementedError

    def update_parameters(self, model, names, rows=None) -> set:
        """Take the values of ``model`` named in ``names`` (Model attribute names, ``"mujoco.<name>"``
        for MuJoCo-only values) without rebuilding; ``model`` has the same bodies, joints and shapes
        as the solver's (it may be the solver's own, its arrays edited in place: a live edit, a view's write).
        ``rows``: element kind ("body", "dof", "shape") -> the rows that changed (None: any may have), where the
        solver can use it to write less. Returns the names it could not take (the caller then rebuilds the solver)."""
        return set(names)

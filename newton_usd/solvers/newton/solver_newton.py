"""Newton's Warp solvers (XPBD, Featherstone, semi-implicit Euler, Kamino) behind our solver interface.

Each is one :class:`SolverNewton` subclass that names Newton's solver and the options it takes. The model is
bridged once (:mod:`.model_bridge`); every step aliases our State and Control into Newton's (:mod:`~.newton.exchange`),
runs Newton's collision pipeline and Newton's solver on the device: no host round trip.
"""

from __future__ import annotations

import logging
import math

import newton
import numpy as np
import warp as wp

from ...core.quat import quat_rotate
from ...core.types import JointType
from ...diagnostics import Diagnostics
from ...errors import NewtonUsdError
from ..frame import FrameCapture
from ..joint_speed_bounds import speed_bounds_of
from ..solver import SolverBase
from .actuation import ACTUATED_RELAXATION, Actuation
from .contact_hold import say_soft_contacts
from .contact_pairs import SwitchedPairs
from .exchange import PendingJointState, PendingNewtonJoints, StateExchange
from .implicit_joint_forces import ImplicitJointForces
from .kamino_config import ITERATIONS, kamino_config, scene_settings_kept
from .model_bridge import ContactSettings, JointLimitSettings, bridge_model
from .stable_step import StableStep, featherstone_stable_dt, penalty_joint_stable_dt
from .support import UNLIMITED
from .warp_modules import setup_modules, step_modules

logger = logging.getLogger("newton_usd")

_CONTACT_F = newton.solvers.SolverBase.ObservableKind.CONTACT_F

_MODEL_FLAGS = newton.ModelFlags if hasattr(newton, "ModelFlags") else newton.solvers.SolverNotifyFlags

_IN_PLACE = {
    # our Model attribute -> (Newton's attribute, element kind, Newton's notify flag)
    "body_mass": ("body_mass", "body", "BODY_INERTIAL_PROPERTIES"),
    "body_inv_mass": ("body_inv_mass", "body", "BODY_INERTIAL_PROPERTIES"),
    "body_inertia": ("body_inertia", "body", "BODY_INERTIAL_PROPERTIES"),
    "body_inv_inertia": ("body_inv_inertia", "body", "BODY_INERTIAL_PROPERTIES"),
    "body_com": ("body_com", "body", "BODY_INERTIAL_PROPERTIES"),
    "joint_target_ke": ("joint_target_ke", "dof", "JOINT_DOF_PROPERTIES"),
    "joint_target_kd": ("joint_target_kd", "dof", "JOINT_DOF_PROPERTIES"),
    "joint_limit_lower": ("joint_limit_lower", "dof", "JOINT_DOF_PROPERTIES"),
    "joint_limit_upper": ("joint_limit_upper", "dof", "JOINT_DOF_PROPERTIES"),
    "joint_effort_limit": ("joint_effort_limit", "dof", "JOINT_DOF_PROPERTIES"),
    "joint_armature": ("joint_armature", "dof", "JOINT_DOF_PROPERTIES"),
    "joint_friction": ("joint_friction", "dof", "JOINT_DOF_PROPERTIES"),
    "shape_material_mu": ("shape_material_mu", "shape", "SHAPE_PROPERTIES"),
    "shape_material_restitution": ("shape_material_restitution", "shape", "SHAPE_PROPERTIES"),
    "shape_material_mu_torsional": ("shape_material_mu_torsional", "shape", "SHAPE_PROPERTIES"),
    "shape_material_mu_rolling": ("shape_material_mu_rolling", "shape", "SHAPE_PROPERTIES"),
}
"""Model values :meth:`SolverNewton.update_parameters` writes into the Newton model in place."""


class SolverNewton(SolverBase):
    """A Newton solver stepping a bridged copy of our Model.

    Args:
        model: the Model to simulate (on any Warp device; the Newton model is built on the same one).
        contact_ke, contact_kd, contact_kf, contact_ka: penalty-contact stiffness, damping, friction gain and
            adhesion distance of every shape (SI; None: Newton's defaults). Featherstone and semi-implicit
            contacts are penalty springs; XPBD and Kamino use them only as documented by Newton.
        joint_limit_ke, joint_limit_kd: stiffness and damping of every joint limit (None: Newton's defaults).
        rigid_contact_max: contact capacity of the collision pipeline (None: Newton's estimate).
        requires_grad: build the Newton model with gradients, for ``wp.Tape`` (States made with
            ``model.state(requires_grad=True)``).
        **options: the Newton solver's own keyword arguments (see each subclass's ``OPTIONS``).

    ``newton_model``, ``newton_solver`` and ``collision_pipeline`` are Newton's objects; ``newton_contacts``
    the contacts of the last step.
    """

    name = ""
    """The name ``usdsim --solver`` takes."""
    newton_class = None
    """Newton's solver class."""
    OPTIONS: dict = {}
    """Resolved scene setting name -> Newton solver keyword (see :meth:`options_from_scene`)."""
    writes_joint_state = True
    """False where Newton's solver reads and writes only body states (XPBD, semi_implicit): joint states are
    computed from them by ``newton.eval_ik`` when first read (the output State is left pending, see
    :mod:`~.newton.exchange`)."""
    ball_torque_in_world = False
    """True where Newton's solver reads a ball joint's ``joint_f`` as a torque in the world frame (XPBD), not in the
    parent joint frame (featherstone, semi_implicit, kamino): the exchange converts ours into it
    (:mod:`~.newton.exchange`)."""
    beta = False
    penalty_contacts = False
    """Whether its contacts are Newton's penalty springs (``shape_material_ke``): bodies they cannot hold up are said
    (:mod:`.contact_hold`)."""
    switches_in_place = True
    """Whether a body switched between kinematic and dynamic (``body_kinematic``) is taken in place: its Newton flag
    flipped and the solver told (False: Kamino, which decides which bodies are immovable once, when it is made)."""
    keeps_speed_bounds = False
    """How the bodies' speed bounds (PhysX's; :mod:`~newton_usd.solvers.velocity_limits`) are kept after each step:
    "bodies", "bodies and joints" (kamino), "joints" (featherstone), False: not kept (see ``speed_bounds_of``)."""
    stable_dt = math.inf
    """s: the longest step estimated stable on this model (inf: no estimate; see :meth:`step_diagnostics`)."""
    _said_dt = None

    def __init__(
        self,
        model,
        *,
        contact_ke=None,
        contact_kd=None,
        contact_kf=None,
        contact_ka=None,
        joint_limit_ke=None,
        joint_limit_kd=None,
        rigid_contact_max=None,
        requires_grad: bool = False,
        **options,
    ):
        super().__init__(model)
        self.options = dict(
            contact_ke=contact_ke, contact_kd=contact_kd, contact_kf=contact_kf, contact_ka=contact_ka,
            joint_limit_ke=joint_limit_ke, joint_limit_kd=joint_limit_kd, rigid_contact_max=rigid_contact_max,
            requires_grad=requires_grad, **options,
        )  # fmt: skip
        self.diagnostics = Diagnostics()
        if self.beta:
            self.diagnostics.add(
                f"the {self.name} solver is beta in Newton {newton.__version__}: check its results", "PhysicsScene"
            )
        bridge = bridge_model(
            model,
            self.diagnostics,
            self.name,
            contact=ContactSettings(contact_ke, contact_kd, contact_kf, contact_ka),
            limits=JointLimitSettings(joint_limit_ke, joint_limit_kd),
            requires_grad=requires_grad,
            particles=self._bridge_particles,
        )
        if self.penalty_contacts:
            say_soft_contacts(bridge.newton_model, model, self.name, self.diagnostics)
        self.diagnostics.emit(model.source)
        self.newton_model = bridge.newton_model
        self.shape_map = bridge.shape_map
        try:
            self.newton_solver = self._make_solver(self.newton_model, options)
        except TypeError as e:
            raise NewtonUsdError(f"{self.name} solver: {e}") from None
        except (ValueError, RuntimeError, NotImplementedError) as e:
            source = model.source or "the model"
            raise NewtonUsdError(f"{source}: Newton's {self.name} solver refused it: {e}") from None
        kw = {"requires_grad": requires_grad}
        if rigid_contact_max is not None:
            kw["rigid_contact_max"] = int(rigid_contact_max)
        self.collision_pipeline = newton.CollisionPipeline(self.newton_model, **kw)
        self.newton_contacts = self.collision_pipeline.contacts()
        self._pairs = SwitchedPairs.of(self.collision_pipeline, self.shape_map, model.shape_collision_enabled.numpy())
        self.contact_forces = None
        """Newton's per-contact forces of the last step (its ``CONTACT_F`` observable), where the solver reports
        them (xpbd, kamino); None where it does not (featherstone, semi_implicit: penalty contacts inside their
        force kernels)."""
        if _CONTACT_F in self.newton_solver.supported_observables:
            self.contact_forces = self.newton_solver.observables({_CONTACT_F}, contacts=self.newton_contacts)
        self.exchange = StateExchange(model, bridge, ball_torque_in_world=self.ball_torque_in_world)
        self.actuators = Actuation.of(model)
        """The model's joint actuators, their efforts added to ``joint_f`` each step (:mod:`.actuation`); None
        without."""
        self._speed_bounds = speed_bounds_of(self.keeps_speed_bounds, model, self.newton_model)
        self._cone_dofs = _cone_dofs(model, bridge)
        self._dof_order = bridge.dof_order  # (our DOF of each of Newton's)
        self.exchange.initial_state()
        self._scratch = None  # our State to step into when state_in is state_out
        self.frame_capture = FrameCapture(model.device, f"the {self.name} solver")
        """How :meth:`simulate_frame` runs (eagerly, or one CUDA graph per frame): its counters say what it did."""
        why = self._eager_reason(requires_grad, options)
        if why is not None:
            self.frame_capture.never_capture(why)

    def _eager_reason(self, requires_grad: bool, options: dict):
        """Why this solver's frames must run eagerly on CUDA (None: they can be captured)."""
        if requires_grad:  # (XPBD re-binds its outputs' arrays under gradients; a wp.Tape records eager launches)
            return "the model has gradients (requires_grad): a differentiable run steps eagerly"
        return None

    _bridge_particles = None  # (nb, world) -> a world's particles into Newton's builder (None: takes none; see .vbd)

    def _make_solver(self, newton_model, options):
        return self.newton_class(newton_model, **options)

    @classmethod
    def setup_kernel_modules(cls, device, options: dict) -> list:
        """Newton's model finalize's kernels (the bridge's), and :meth:`kernel_modules`'s (:mod:`.warp_modules`)."""
        return setup_modules(cls.name)

    def kernel_modules(self) -> list:
        """Newton's collision pipeline's modules, the solver's and our exchange's (:mod:`.warp_modules`): what the
        first frame would load one after the other (``tests/test_kernel_loading.py`` checks that it loads nothing else
        that could be loaded before it; the generic kernels of Newton's narrow phase get their code when launched, and
        compile then)."""
        actuators = self.actuators.actuators.kernel_modules() if self.actuators is not None else []
        bounds = self._speed_bounds.kernel_modules() if self._speed_bounds is not None else []
        return step_modules(self.name) + actuators + bounds

    @classmethod
    def options_from_scene(cls, settings: dict) -> dict:
        """The constructor's keyword arguments from a scene's resolved settings (name -> value; None and
        absent: the solver's default)."""
        out = {}
        for setting, keyword in {**_COMMON_OPTIONS, **cls.OPTIONS}.items():
            value = settings.get(setting)
            if value is not None:
                out[keyword] = value
        return out

    @classmethod
    def from_scene(cls, model, settings: dict, *, backend=None, **asked) -> "SolverNewton":
        if backend not in (None, "auto"):
            raise NewtonUsdError(
                f"--backend {backend} is MuJoCo's; the {cls.name} solver runs on the model's Warp device (--device)"
            )
        return super().from_scene(model, settings, **asked)

    def stable_step(self) -> float:
        return self.stable_dt

    def _before_solver_step(self, newton_state, dt: float) -> None:
        """Kernels before each of Newton's steps of ``dt`` from ``newton_state`` (captured with the frame). The
        default: none."""

    def step(self, state_in, state_out, control, contacts, dt: float) -> None:
        if dt > self.stable_dt and dt != self._said_dt:  # (said once per step size, before the first such step)
            self._said_dt = dt
            diag = Diagnostics()
            self.step_diagnostics(dt, diag)
            diag.emit(self.model.source)
        if state_in is state_out:
            if self._scratch is None:
                self._scratch = self.model.state()
            self.step(state_in, self._scratch, control, contacts, dt)
            for name in ("body_q", "body_qd", "joint_q", "joint_qd"):
                wp.copy(getattr(state_out, name), getattr(self._scratch, name))
            return
        if self.actuators is not None:
            control = self.actuators.control(state_in, control, dt)
        ns_in, ns_out, nc = self.exchange.inputs(state_in, state_out, control, self.writes_joint_state)
        self.collision_pipeline.collide(ns_in, self.newton_contacts)
        self._before_solver_step(ns_in, dt)
        if self.contact_forces is None:
            self.newton_solver.step(ns_in, ns_out, nc, self.newton_contacts, dt)
        else:
            self.newton_solver.step(ns_in, ns_out, nc, self.newton_contacts, dt, observables=self.contact_forces)
        if self._speed_bounds is not None:
            self._speed_bounds.apply_to(ns_out)
        self.exchange.outputs(state_out, joints_written=self.writes_joint_state)

    simulates_frames = True
    """A frame's steps run as one function (:meth:`simulate_frame`), captured on CUDA."""

    def simulate_frame(self, state_0, state_1, control, dt: float, substeps: int, after=None, after_key=()) -> None:
        """``substeps`` steps of ``dt`` from ``state_0``, the result left in ``state_0`` (``state_1`` is scratch;
        an odd number of steps ends with a copy of the last output into ``state_0``, so that the same arrays
        start and end every frame), then ``after(state_0)`` (kernels only, e.g. a bounds check; ``after_key``:
        what it bakes in). Each step is :meth:`step`'s: collision, the solver, our exchange kernels.

        On CUDA the frame is one graph, captured once per (states, control, dt, substeps) and replayed
        (:attr:`frame_capture`, :class:`.frame.FrameCapture`); :meth:`update_parameters` of another model drops it
        (of the running one, its arrays written in place, it does not). On the CPU, with gradients, or where a
        capture is not possible, it runs eagerly: the same kernels."""
        if substeps < 1:
            return
        self._frame_start(state_0, state_1)
        key = (_arrays_key(state_0), _arrays_key(state_1), _arrays_key(control), float(dt), int(substeps), after_key)
        saved = (state_0.__dict__.get("_pending"), state_1.__dict__.get("_pending"))

        def frame():
            self._frame(state_0, state_1, control, dt, substeps)
            if after is not None:
                after(state_0)

        def restore():
            for state, pending in zip((state_0, state_1), saved, strict=True):
                state.__dict__.pop("_pending", None)
                if pending is not None:
                    state.__dict__["_pending"] = pending

        if self.frame_capture.run(key, frame, restore):
            # A replay ran the kernels only: the states' pending joint states as the captured frame left them (XPBD
            # and semi_implicit leave state_0's to be computed from its bodies when read; without this a replayed
            # frame's joint states read back as those of the frame read last: `--write-joint-states` under xpbd on
            # CUDA wrote one joint angle over and over)
            for state, pending in zip((state_0, state_1), self._pending_after_frame, strict=True):
                state.__dict__.pop("_pending", None)
                if pending is not None:
                    state.__dict__["_pending"] = pending
        else:
            self._pending_after_frame = (state_0.__dict__.get("_pending"), state_1.__dict__.get("_pending"))

    def _frame_start(self, state_0, state_1) -> None:
        """The host-side start of every frame alike (a graph replays what its capture saw): ``state_0`` holds its
        values or leaves its joint states to be computed from its bodies (this solver's :class:`PendingJointState`);
        ``state_1`` is scratch."""
        pending = state_0.__dict__.get("_pending")
        if pending is not None and not (isinstance(pending, PendingJointState) and pending.exchange is self.exchange):
            pending.release(state_0)
        pending = state_1.__dict__.get("_pending")
        if pending is not None:
            if isinstance(pending, PendingNewtonJoints | PendingJointState) and pending.exchange is self.exchange:
                del state_1.__dict__["_pending"]  # (scratch: its values are about to be stepped over)
            else:
                pending.release(state_1)

    def _frame(self, state_0, state_1, control, dt, substeps) -> None:
        """The frame function (see :meth:`simulate_frame`): no host read."""
        a, b = state_0, state_1
        for _ in range(substeps):
            self.step(a, b, control, None, dt)
            a, b = b, a
        pending = a.__dict__.get("_pending")
        if isinstance(pending, PendingNewtonJoints):  # (Newton's joint states into ours: the next frame reads ours)
            pending.release(a)
            pending = None
        if a is not state_0:  # an odd number of steps: the output into state_0
            names = ("body_q", "body_qd") if pending is not None else ("body_q", "body_qd", "joint_q", "joint_qd")
            for name in names:
                wp.copy(state_0.__dict__[name], a.__dict__[name])
            a.__dict__.pop("_pending", None)
            state_0.__dict__.pop("_pending", None)
            if pending is not None:
                state_0.__dict__["_pending"] = pending
        else:
            state_1.__dict__.pop("_pending", None)

    def _gains_changed(self, names) -> None:
        """:meth:`update_parameters` wrote ``names`` into the Newton model. The default: nothing more."""

    def step_limit(self) -> StableStep:
        """What sets :attr:`stable_dt` (:class:`.stable_step.StableStep`; its ``dt`` inf where nothing does)."""
        return StableStep()

    def reset_to_keyframe(self, state, key, control=None) -> None:
        """Put every world into keyframe ``key`` (index or label): joint coordinates and velocities, and the body
        poses and velocities they give (``newton.eval_fk``). MuJoCo-only keyframe values (activations,
        controls of MjcActuators, mocap poses) have nothing to act on here."""
        k = self.keyframe_index(key)
        arrays = state.__dict__  # (not the attributes: a pending joint state is overwritten, not computed)
        arrays["joint_q"].assign(self.model.keyframe_joint_q[k].astype(np.float32))
        arrays["joint_qd"].assign(self.model.keyframe_joint_qd[k].astype(np.float32))
        self.joint_states_written(state)

    def joint_states_written(self, state, worlds=None) -> None:
        """The body poses and velocities of ``state``'s joint coordinates and velocities (``newton.eval_fk``):
        XPBD, semi-implicit and Kamino step body states, so a joint state written by a view or a reset moves
        the bodies here; with ``worlds`` (a bool Warp array, one per world) those worlds' bodies only, the others'
        left as stepped (their bodies need not satisfy the joints exactly: forward kinematics of the joint states
        computed from them would move them)."""
        state.__dict__.pop("_pending", None)  # (the joint arrays hold what was written)
        self.exchange.bodies_from_joints(state, worlds)

    def update_contacts(self, contacts) -> None:
        """Copy the last step's contacts (every world) into ``contacts``, up to its capacity; shape indices are
        ours, points in world at the middle of the two surfaces, depth positive when penetrating. Forces (the
        force shape0 exerts on shape1, friction included) are the solver's (xpbd, kamino: :attr:`contact_forces`);
        featherstone and semi_implicit do not report theirs: NaN there (unknown, never a false zero)."""
        c = self.newton_contacts
        n = min(int(c.rigid_contact_count.numpy()[0]), contacts.capacity)
        inverse = np.full(self.newton_model.shape_count, -1, dtype=np.int32)
        inverse[self.shape_map] = np.arange(len(self.shape_map), dtype=np.int32)
        s0, s1 = c.rigid_contact_shape0.numpy()[:n], c.rigid_contact_shape1.numpy()[:n]
        body_q = self.exchange.state_out.body_q.numpy()
        shape_body = self.newton_model.shape_body.numpy()
        normal = c.rigid_contact_normal.numpy()[:n]
        points = []
        for shapes, local in ((s0, c.rigid_contact_point0), (s1, c.rigid_contact_point1)):
            local = local.numpy()[:n].astype(np.float64)
            world = local.copy()
            bodies = shape_body[shapes]
            moving = bodies >= 0
            if moving.any():
                on = bodies[moving]
                world[moving] = body_q[on, :3] + quat_rotate(body_q[on, 3:], local[moving])
            points.append(world)
        depth = -np.einsum("ij,ij->i", points[1] - points[0], normal)
        ours0, ours1 = inverse[s0], inverse[s1]
        shape_world = self.model.shape_world.numpy()
        world = np.maximum(np.where(ours0 >= 0, shape_world[ours0], -1), np.where(ours1 >= 0, shape_world[ours1], -1))
        if self.contact_forces is None:
            force = np.full((n, 3), np.nan)
        else:  # (Newton's: the force on shape0 by shape1)
            force = -self.contact_forces.contact_f.numpy()[:n, :3]
        contacts.rigid_contact_count = n
        for name, values in (
            ("rigid_contact_shape0", ours0),
            ("rigid_contact_shape1", ours1),
            ("rigid_contact_world", np.maximum(world, 0)),
            ("rigid_contact_force", force),
            ("rigid_contact_point", 0.5 * (points[0] + points[1])),
            ("rigid_contact_normal", normal),
            ("rigid_contact_depth", depth),
        ):
            array = getattr(contacts, name)
            full = array.numpy()
            full[:n] = values
            array.assign(full)

    def update_parameters(self, model, names, rows=None) -> set:
        """Write the values ``names`` of ``model`` into Newton's model, in place, and notify Newton's solver
        (``notify_model_changed``: what it derives from them, e.g. Featherstone's spatial inertias, follows). A frame
        captured on CUDA keeps replaying when ``model`` is the running one (its arrays edited in place: the graph
        reads the same arrays); another model's arrays drop it. ``rows``: not needed (whole arrays are copied on the
        device)."""
        names = set(names)
        leftover = names - set(_IN_PLACE) - {"gravity", "joint_target_pos", "joint_target_vel"}
        leftover -= {"body_kinematic"} if self.switches_in_place else set()
        if "shape_collision_enabled" in leftover and self._pairs is not None:
            if self._pairs.switch(model.shape_collision_enabled.numpy()):  # (else: a collider that had no pairs)
                leftover.discard("shape_collision_enabled")
        if leftover:
            return leftover
        nm = self.newton_model
        flags = 0
        if "body_kinematic" in names:  # (Newton's solvers read the flags each step, and are told)
            kinematic = model.body_kinematic.numpy().astype(bool)
            nm.body_flags.assign(np.where(kinematic, int(newton.BodyFlags.KINEMATIC), int(newton.BodyFlags.DYNAMIC)))
            flags |= int(_MODEL_FLAGS.BODY_PROPERTIES)
            names.add("body_flags")
        if "gravity" in names:
            nm.set_gravity(tuple(float(g) for g in model.gravity))
            flags |= int(_MODEL_FLAGS.MODEL_PROPERTIES)
        for name in names & set(_IN_PLACE):
            theirs, kind, flag = _IN_PLACE[name]
            values = getattr(model, name)
            target = getattr(nm, theirs, None)
            if target is None:
                continue
            if kind == "shape":
                full = target.numpy()
                full[self.shape_map] = values.numpy()
                target.assign(full)
            elif kind == "dof" and self._cone_dofs is not None:  # (a cone D6's DOFs are ordered and limited apart)
                full = values.numpy()[self._cone_dofs[0]]
                if name in ("joint_limit_lower", "joint_limit_upper"):
                    keep = self._cone_dofs[1]
                    full[keep] = target.numpy()[keep]
                target.assign(full)
            else:
                wp.copy(target, values)
            flags |= int(getattr(_MODEL_FLAGS, flag))
        if flags:
            self.newton_solver.notify_model_changed(flags)
        self._gains_changed(names)
        if model is not self.model:
            self.frame_capture.invalidate(f"update_parameters({', '.join(sorted(names))}) of another model")
        self.model = model
        return set()


def _arrays_key(obj) -> tuple:
    """The device pointers of a State's or Control's arrays (what a graph bakes in), in a stable order."""
    if obj is None:
        return ()
    return tuple((name, value.ptr) for name, value in sorted(vars(obj).items()) if isinstance(value, wp.array))


def _cone_dofs(model, bridge):
    """For a model with cone joints bridged as D6 joints: (our DOF of each Newton DOF, Newton's DOFs whose limits
    are the bridge's, the cones'); None without."""
    cones = np.nonzero(bridge.cone_first_axis >= 0)[0]
    if not len(cones):
        return None
    start = model.joint_qd_start.numpy()
    return bridge.dof_order, np.concatenate([np.arange(start[j], start[j] + 3) for j in cones])


_COMMON_OPTIONS = {
    "newton.contact_ke": "contact_ke",
    "newton.contact_kd": "contact_kd",
    "newton.contact_kf": "contact_kf",
    "newton.contact_ka": "contact_ka",
    "newton.joint_limit_ke": "joint_limit_ke",
    "newton.joint_limit_kd": "joint_limit_kd",
}


class SolverXPBD(SolverNewton):
    """Newton's SolverXPBD: extended position-based dynamics in maximal coordinates (hard joint limits,
    restitution when enabled; no armature, joint friction or effort limits)."""

    name = "xpbd"
    keeps_speed_bounds = "bodies"
    newton_class = newton.solvers.SolverXPBD
    writes_joint_state = False
    ball_torque_in_world = True
    OPTIONS = {
        "newton.iterations": "iterations",
        "xpbd.soft_body_relaxation": "soft_body_relaxation",
        "xpbd.soft_contact_relaxation": "soft_contact_relaxation",
        "xpbd.joint_linear_relaxation": "joint_linear_relaxation",
        "xpbd.joint_angular_relaxation": "joint_angular_relaxation",
        "xpbd.joint_linear_compliance": "joint_linear_compliance",
        "xpbd.joint_angular_compliance": "joint_angular_compliance",
        "xpbd.rigid_contact_relaxation": "rigid_contact_relaxation",
        "xpbd.rigid_contact_con_weighting": "rigid_contact_con_weighting",
        "xpbd.angular_damping": "angular_damping",
        "xpbd.enable_restitution": "enable_restitution",
    }

    def __init__(self, model, **options):
        if options.get("iterations") is None:
            chosen = xpbd_iterations(model)
            if chosen is not None:
                options["iterations"] = chosen
        if getattr(model, "actuator_count", 0):
            for name in ("joint_linear_relaxation", "joint_angular_relaxation"):
                if options.get(name) is None:
                    options[name] = ACTUATED_RELAXATION
        super().__init__(model, **options)
        self._report(model)

    def _report(self, model):
        diag = Diagnostics()
        restitution = model.shape_material_restitution.numpy()
        if not self.options.get("enable_restitution") and (restitution > 0).any():
            for s in np.nonzero(restitution > 0)[0]:
                diag.add(
                    "restitution is not simulated by the xpbd solver unless newton:xpbd:restitutionEnabled is true",
                    model.shape_label[s],
                )
        for kind, paths in diag.kinds.items():
            for p in paths:
                self.diagnostics.add(kind, p)
        diag.emit(model.source)


LIMIT_ITERATIONS = 16
"""XPBD iterations where the scene sets none (``newton:maxSolverIterations``) and the model limits a joint: a
30 deg limit (a cone, or a revolute limit) swung onto by a body 0.5 m out reaches 35.9 deg at Newton's default of 2
iterations where the body's own inertia is 250 times below its inertia about the joint (a 5 cm ball; 32.6 deg for a
point mass), 32.5 at 8, 32.0 at 12, 31.8 at 16 (30.4 for the point mass), 31.0 at 32: 16 is the smallest count that
holds it within 2 deg, at about twice the cost of a step (docs/solvers.md)."""

LIMIT_ITERATIONS_REASON = (
    f"xpbd: {LIMIT_ITERATIONS} where the stage sets none and limits a joint (Newton's default, 2, lets a 30 deg "
    f"limit reach 35.9 deg; {LIMIT_ITERATIONS} hold it within 2 deg); other Newton solvers: their default"
)
"""How :func:`xpbd_iterations` chose, as ``usdsim explain`` says it."""


def xpbd_iterations(model) -> int | None:
    """The iterations :class:`SolverXPBD` takes where none is asked: :data:`LIMIT_ITERATIONS` for a ``model`` that
    limits a joint (a finite limit on a DOF, or a spherical joint's cone), else None (Newton's default)."""
    if model.joint_dof_count:
        limited = model.joint_limited.numpy().astype(bool)
        lower, upper = model.joint_limit_lower.numpy(), model.joint_limit_upper.numpy()
        if np.any(limited & ((np.abs(lower) < UNLIMITED) | (np.abs(upper) < UNLIMITED))):
            return LIMIT_ITERATIONS
    for j in np.nonzero(model.joint_type.numpy() == int(JointType.BALL))[0]:
        if model.joint_cone(int(j)) is not None:
            return LIMIT_ITERATIONS
    return None


class SolverFeatherstone(SolverNewton):
    """Newton's SolverFeatherstone: generalized coordinates (CRBA, symplectic Euler), penalty contacts, limits."""

    name = "featherstone"
    keeps_speed_bounds = "joints"
    penalty_contacts = True
    newton_class = newton.solvers.SolverFeatherstone
    kinematic_joint_q = True  # (its state is the joint coordinates: a kinematic root's free joint is pinned there)
    OPTIONS = {"newton.angular_damping": "angular_damping"}

    def __init__(self, model, **options):
        super().__init__(model, **options)
        implicit = not self.options["requires_grad"]  # (a differentiable run keeps Newton's own explicit forces)
        self.implicit_joint_forces = ImplicitJointForces(self.newton_model, self.newton_solver) if implicit else None
        """The joints' drives, passive springs and limit springs taken implicitly (:mod:`.implicit_joint_forces`);
        None under gradients (``requires_grad``): explicitly there, as in Newton."""
        gains = self.actuators.gains(self.newton_model.joint_dof_count, self._dof_order) if self.actuators else None
        self._stable = featherstone_stable_dt(
            self.newton_model, self.newton_model.state(), implicit_joints=implicit, actuator_gains=gains
        )
        self.stable_dt = self._stable.dt
        """s: the longest step at which the penalty contacts (and under gradients the joint forces) stay stable,
        estimated at the start (inf without them; :func:`.stable_step.featherstone_stable_dt`)."""

    def _before_solver_step(self, newton_state, dt: float) -> None:
        if self.implicit_joint_forces is not None:
            self.implicit_joint_forces.launch(newton_state, dt)

    def _gains_changed(self, names) -> None:
        if self.implicit_joint_forces is not None and self.implicit_joint_forces.model_changed(names):
            self.frame_capture.invalidate("Newton's solver factors H with a new armature array")

    def step_limit(self) -> StableStep:
        return self._stable

    def step_diagnostics(self, dt: float, diagnostics) -> None:
        """Steps longer than :attr:`stable_dt` risk blowing up: said with the joint or the body that sets it."""
        if dt > self.stable_dt:
            s = self._stable
            prim = self.model.body_label[s.body] if s.body >= 0 else self.model.joint_label[s.joint]
            diagnostics.add(
                f"the featherstone solver integrates {s.what} explicitly: estimated stable at steps up to "
                f"{self.stable_dt:.3g} s on this model, not {dt:.3g} s: it may blow up (usdsim --substeps auto, or a "
                "smaller --dt)",
                prim,
            )

    def _eager_reason(self, requires_grad: bool, options: dict):
        interval = options.get("update_mass_matrix_interval", 1)
        if interval != 1:  # (counted on the host each step: a graph would replay the capture's choice)
            return f"update_mass_matrix_interval {interval} is decided on the host each step"
        return super()._eager_reason(requires_grad, options)


class SolverSemiImplicit(SolverNewton):
    """Newton's SolverSemiImplicit: semi-implicit Euler in maximal coordinates with penalty joints and
    contacts (small steps); differentiable.

    Its joints are springs (``joint_attach_ke``/``joint_attach_kd``, Newton's defaults unless given through
    ``solver_options``) that semi-implicit Euler integrates stably only below a step set by the bodies they pull
    on: :attr:`stable_dt` (an estimate, :func:`penalty_joint_stable_dt`). A longer step is said once per step
    size, naming the joint that sets it."""

    name = "semi_implicit"
    keeps_speed_bounds = "bodies"
    penalty_contacts = True
    newton_class = newton.solvers.SolverSemiImplicit
    writes_joint_state = False  # (it integrates body states only: its joint_q/joint_qd are left as they were)
    OPTIONS = {"newton.angular_damping": "angular_damping"}

    def __init__(self, model, **options):
        super().__init__(model, **options)
        ke, kd = self.newton_solver.joint_attach_ke, self.newton_solver.joint_attach_kd
        gains = self.actuators.gains(self.newton_model.joint_dof_count, self._dof_order) if self.actuators else None
        self._stable = penalty_joint_stable_dt(self.newton_model, ke, kd, actuator_gains=gains)
        self.stable_dt = self._stable.dt
        """s: the longest step at which the penalty joints, the drives and the joint actuators stay stable (inf
        without joints)."""

    def step_limit(self) -> StableStep:
        return self._stable

    def step_diagnostics(self, dt: float, diagnostics) -> None:
        """Steps longer than :attr:`stable_dt` risk blowing up: said with the joint that sets it."""
        if dt > self.stable_dt:
            ke = self.newton_solver.joint_attach_ke
            diagnostics.add(
                f"the semi_implicit solver's penalty joints (joint_attach_ke {ke:g}) and drives are estimated stable "
                f"at steps up to {self.stable_dt:.3g} s on this model, not {dt:.3g} s: it may blow up (a smaller --dt, "
                "a lower joint_attach_ke in solver_options, or featherstone or xpbd)",
                self.model.joint_label[self._stable.joint],
            )


class SolverKamino(SolverNewton):
    """Newton's SolverKamino (beta upstream): maximal coordinates, loop closures, frictional contacts, restitution."""

    name = "kamino"
    keeps_speed_bounds = "bodies and joints"  # (its state is the bodies' twists, its joint velocities from them)
    newton_class = newton.solvers.SolverKamino
    beta = True
    switches_in_place = False
    OPTIONS = {
        "newton.iterations": ITERATIONS,
        "kamino.padmm.primal_tolerance": "padmm_primal_tolerance",
        "kamino.padmm.dual_tolerance": "padmm_dual_tolerance",
        "kamino.padmm.complementarity_tolerance": "padmm_compl_tolerance",
        "kamino.padmm.warmstarting": "padmm_warmstart_mode",
        "kamino.padmm.use_acceleration": "padmm_use_acceleration",
        "kamino.constraints.use_preconditioning": "dynamics_preconditioning",
        "kamino.constraints.alpha": "constraints_alpha",
        "kamino.constraints.beta": "constraints_beta",
        "kamino.constraints.gamma": "constraints_gamma",
        "kamino.joint_correction": "rotation_correction",
    }
    """NewtonKaminoSceneAPI's settings (and ``newton:maxSolverIterations``) -> the flat keywords of
    :func:`.kamino_config.kamino_config`, which puts each into its part of ``SolverKamino.Config``."""

    @classmethod
    def from_scene(cls, model, settings: dict, *, backend=None, **asked) -> "SolverKamino":
        """As :meth:`SolverNewton.from_scene`; a whole part of Kamino's config asked for (``padmm=PADMMSolverConfig(
        ...)`` in ``solver_options``) wins over the scene's settings of that part."""
        settings = scene_settings_kept(settings, cls.OPTIONS, asked)
        return super().from_scene(model, settings, backend=backend, **asked)

    def _make_solver(self, newton_model, options):
        return self.newton_class(newton_model, kamino_config(options) if options else None)

    def _eager_reason(self, requires_grad: bool, options: dict):
        if wp.get_device(self.model.device).is_cuda and not wp.is_conditional_graph_supported():
            return "Kamino's loops (wp.capture_while) need conditional graph nodes: a CUDA 12.4+ driver and toolkit"
        return super()._eager_reason(requires_grad, options)


NEWTON_SOLVERS = {cls.name: cls for cls in (SolverXPBD, SolverFeatherstone, SolverSemiImplicit, SolverKamino)}
"""Newton's solvers by the name ``usdsim --solver`` takes."""

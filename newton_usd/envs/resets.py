"""Resets of environments: each starts from the authored state or a keyframe, with USD attributes randomized by prim
pattern and range, applied in place (never by importing the stage again).

``randomize`` maps ``"/prim/pattern.attribute"`` to a range: ``(low, high)`` draws the value itself in the
attribute's own units (as authored on the stage: degrees for angles, the stage's meters and kilograms per unit),
``{"add": (low, high)}`` adds the draw to the authored value, ``{"scale": (low, high)}`` multiplies it. Two kinds:

- **Joint start states** (PhysicsJointStateAPI names: ``state:angular:physics:position``, ``state:linear:physics:
  position`` and their ``velocity``) of single-DOF joints: drawn on the device at every reset of an environment
  (Warp's random numbers, from the seed and how many starts that environment drew: a run is repeatable);
- **Model values** (``physics:mass`` of a body, the inertia scaled with it; ``physics:dynamicFriction`` of a
  collider; a joint's ``drive:angular|linear:physics:stiffness``, ``damping``, ``maxForce``,
  ``physics:lowerLimit``, ``physics:upperLimit``, ``newton:armature``): drawn on the host for the environments
  being reset, written into the Model's arrays and handed to the solver (``update_parameters``).
"""

from __future__ import annotations

import math

import numpy as np
import warp as wp

from ..core.types import JointType
from ..errors import NewtonUsdError
from ..selection.pattern import match_prims
from ..selection.source import ViewSource
from .kernels import Launches, reset_worlds

OPS = {"value": 0, "add": 1, "scale": 2}
_DEG = math.pi / 180.0

# attribute -> (element kind, [model arrays], unit: "mass" | "length" | "angle" | "gain" | "force" | "none")
MODEL_ATTRIBUTES = {
    "physics:mass": ("body", ["body_mass"], "mass"),
    "physics:dynamicFriction": ("shape", ["shape_material_mu"], "none"),
    "drive:angular:physics:stiffness": ("dof", ["joint_target_ke"], "gain"),
    "drive:linear:physics:stiffness": ("dof", ["joint_target_ke"], "gain"),
    "drive:angular:physics:damping": ("dof", ["joint_target_kd"], "gain"),
    "drive:linear:physics:damping": ("dof", ["joint_target_kd"], "gain"),
    "drive:angular:physics:maxForce": ("dof", ["joint_effort_limit"], "force"),
    "drive:linear:physics:maxForce": ("dof", ["joint_effort_limit"], "force"),
    "physics:lowerLimit": ("dof", ["joint_limit_lower"], "length"),
    "physics:upperLimit": ("dof", ["joint_limit_upper"], "length"),
    "newton:armature": ("dof", ["joint_armature"], "inertia"),
}
START_ATTRIBUTES = {
    "state:angular:physics:position": ("q", True),
    "state:linear:physics:position": ("q", False),
    "state:angular:physics:velocity": ("qd", True),
    "state:linear:physics:velocity": ("qd", False),
}


def parse_range(key, value):
    """``(op, low, high)`` of a randomize entry, a clear error otherwise."""
    op = "value"
    if isinstance(value, dict):
        if len(value) != 1 or next(iter(value)) not in ("add", "scale"):
            raise NewtonUsdError(f"randomize[{key!r}]: give (low, high), {{'add': (low, high)}} or "
                                 f"{{'scale': (low, high)}}, got {value!r}")  # fmt: skip
        op, value = next(iter(value.items()))
    try:
        low, high = (float(v) for v in value)
    except (TypeError, ValueError):
        raise NewtonUsdError(f"randomize[{key!r}]: a range is (low, high), got {value!r}") from None
    if not (math.isfinite(low) and math.isfinite(high) and low <= high):
        raise NewtonUsdError(f"randomize[{key!r}]: need finite low <= high, got ({low}, {high})")
    return op, low, high


def split_key(key: str):
    path, dot, attribute = key.rpartition(".")
    if not dot or not path.startswith("/") or "/" in attribute:
        raise NewtonUsdError(f"randomize key {key!r}: give '/prim/pattern.attribute' (e.g. "
                             "'/World/envs/*/Robot/base.physics:mass')")  # fmt: skip
    if attribute not in MODEL_ATTRIBUTES and attribute not in START_ATTRIBUTES:
        raise NewtonUsdError(f"randomize key {key!r}: {attribute!r} cannot be randomized; valid: "
                             f"{', '.join([*START_ATTRIBUTES, *MODEL_ATTRIBUTES])}")  # fmt: skip
    return path, attribute


def matched(model, pattern: str, labels, what: str, key: str) -> np.ndarray:
    """Indices of the elements whose label a pattern matches exactly (every world's), or a clear error."""
    hits = set(match_prims(pattern, labels))
    index = np.array([i for i, label in enumerate(labels) if label in hits], dtype=np.int64)
    if not len(index):
        raise NewtonUsdError(f"randomize[{key!r}]: {pattern!r} matches no {what} of {model.source}")
    return index


class Starts:
    """Where each environment starts: a row ``[q..., qd...]`` per environment (the authored state or a keyframe),
    joint start randomization drawn into :attr:`start` and written into a State by :meth:`reset`."""

    def __init__(self, sim, base_q: np.ndarray, base_qd: np.ndarray, entries):
        model = sim.model
        n = model.num_worlds
        self.num_envs, self.nq, self.nv = n, base_q.size // n, base_qd.size // n
        base = np.concatenate([base_q.reshape(n, -1), base_qd.reshape(n, -1)], axis=1).astype(np.float32)
        device = model.device
        self.base = wp.array(base, dtype=wp.float32, device=device)
        self.start = wp.array(base, dtype=wp.float32, device=device)
        columns, ops, lows, highs = [], [], [], []
        q_start, qd_start = model.joint_q_start.numpy(), model.joint_qd_start.numpy()
        jtype = model.joint_type.numpy()
        mpu = sim.imported.frame.meters_per_unit
        per_joint = model.joint_count // n
        for key, (pattern, attribute, op, low, high) in entries:
            which, angular = START_ATTRIBUTES[attribute]
            joints = matched(model, pattern, model.joint_label, "joint", key)
            want = JointType.REVOLUTE if angular else JointType.PRISMATIC
            local = sorted({int(j) % per_joint for j in joints})
            for j in local:
                if jtype[j] != want:
                    kind = "revolute" if angular else "prismatic"
                    raise NewtonUsdError(f"randomize[{key!r}]: {model.joint_label[j]} is not a {kind} joint "
                                         f"({attribute} is a {kind} joint's start state)")  # fmt: skip
                column = int(q_start[j]) if which == "q" else self.nq + int(qd_start[j])
                scale = 1.0 if op == "scale" else (_DEG if angular else mpu)
                columns.append(column)
                ops.append(OPS[op])
                lows.append(low * scale)
                highs.append(high * scale)
        self.randomized = bool(columns)
        self.columns = wp.array(np.array(columns, dtype=np.int32), dtype=wp.int32, device=device)
        self.ops = wp.array(np.array(ops, dtype=np.int32), dtype=wp.int32, device=device)
        self.low = wp.array(np.array(lows, dtype=np.float32), dtype=wp.float32, device=device)
        self.high = wp.array(np.array(highs, dtype=np.float32), dtype=wp.float32, device=device)
        self.seed = wp.zeros(1, dtype=wp.int32, device=device)
        self.draws = wp.zeros(n, dtype=wp.int32, device=device)
        self._launch = Launches()

    def reseed(self, seed: int) -> None:
        """Start the draws over from ``seed`` (every environment's count of starts drawn back to 0)."""
        self.seed.assign(np.array([seed], dtype=np.int32))
        self.draws.zero_()

    def reset(self, state, mask: wp.array, draw: bool = True) -> None:
        """The environments in ``mask`` take their starts in ``state`` (joint coordinates and velocities): new ones
        drawn first (``draw``), or the ones drawn last (a next-step autoreset puts them back after the frames)."""
        self._launch(
            reset_worlds, self.num_envs, (mask, int(draw), self.base, self.columns, self.ops, self.low, self.high,
                                          self.seed), (self.draws, self.start, state.joint_q, state.joint_qd),
            self.base.device,
        )  # fmt: skip


class ModelValues:
    """Model values randomized at each reset of an environment, on the host (see the module's docstring)."""

    def __init__(self, sim, entries):
        model = sim.model
        self.sim = sim
        self.terms = []  # (key, element indices (num_envs, n), arrays, op, low, high in SI)
        frame = sim.imported.frame
        mpu, kgpu = frame.meters_per_unit, frame.kilograms_per_unit
        n_env = model.num_worlds
        jtype = model.joint_type.numpy()
        qd_start = model.joint_qd_start.numpy()
        for key, (pattern, attribute, op, low, high) in entries:
            kind, arrays, unit = MODEL_ATTRIBUTES[attribute]
            if kind == "body":
                elements = matched(model, pattern, model.body_label, "body", key)
            elif kind == "shape":
                elements = matched(model, pattern, model.shape_label, "collider", key)
            else:
                joints = matched(model, pattern, model.joint_label, "joint", key)
                elements = np.array([d for j in joints for d in range(qd_start[j], qd_start[j + 1])], dtype=np.int64)
                angular = {bool(jtype[j] in (JointType.REVOLUTE, JointType.BALL)) for j in joints}
                if (
                    len(angular) != 1
                    or (":angular:" in attribute and not angular.pop())
                    or (":linear:" in attribute and angular.pop())
                ):
                    raise NewtonUsdError(f"randomize[{key!r}]: {pattern!r} matches joints of another kind than the "
                                         f"attribute's (angular: revolute joints, linear: prismatic)")  # fmt: skip
                angular = bool(jtype[joints[0]] in (JointType.REVOLUTE, JointType.BALL))
            if len(elements) % n_env:
                raise NewtonUsdError(f"randomize[{key!r}]: {pattern!r} matches prims of some environments only")
            if op != "scale":
                factor = _unit(unit, mpu, kgpu, kind == "dof" and angular)
                low, high = low * factor, high * factor
            self.terms.append((key, np.sort(elements).reshape(n_env, -1), arrays, op, low, high))
        self.authored = {a: getattr(model, a).numpy().copy() for t in self.terms for a in t[2]}
        if any("body_mass" in t[2] for t in self.terms):
            self.authored["body_inertia"] = model.body_inertia.numpy().copy()

    def apply(self, worlds: np.ndarray, rng: np.random.Generator) -> None:
        """Draw the values of the environments ``worlds`` and hand them to the solver."""
        if not self.terms or not len(worlds):
            return
        model = self.sim.model
        names = set()
        for _key, elements, arrays, op, low, high in self.terms:
            rows = elements[worlds]
            draw = rng.uniform(low, high, size=rows.shape)
            for name in arrays:
                values = getattr(model, name).numpy()
                authored = self.authored[name][rows]
                values[rows] = draw if op == "value" else authored + draw if op == "add" else authored * draw
                self._store(model, name, values)
                names.add(name)
                if name == "body_mass":
                    ratio = values[rows] / np.where(authored > 0, authored, 1.0)
                    self._mass_follows(model, rows, ratio)
                    names |= {"body_inv_mass", "body_inertia", "body_inv_inertia"}
        ViewSource(self.sim).push_parameters(names)

    def _mass_follows(self, model, rows, ratio) -> None:
        """Inverse masses, and the inertia scaled with the mass (the same shape, denser or lighter)."""
        mass = model.body_mass.numpy()
        inv = model.body_inv_mass.numpy()
        inv[rows] = np.where(mass[rows] > 0, 1.0 / np.maximum(mass[rows], 1e-30), 0.0)
        self._store(model, "body_inv_mass", inv)
        inertia = model.body_inertia.numpy()
        inertia[rows] = self.authored["body_inertia"][rows] * ratio[..., None, None]
        self._store(model, "body_inertia", inertia)
        inv_inertia = model.body_inv_inertia.numpy()
        flat = inertia[rows].reshape(-1, 3, 3).astype(np.float64)
        det = np.linalg.det(flat)
        safe = np.where(np.abs(det)[:, None, None] > 0, flat, np.eye(3))
        inv_inertia[rows] = np.where(np.abs(det)[:, None, None] > 0, np.linalg.inv(safe), 0.0).reshape(
            inertia[rows].shape
        )
        self._store(model, "body_inv_inertia", inv_inertia)

    @staticmethod
    def _store(model, name, values) -> None:
        array = getattr(model, name)
        if not array.device.is_cpu:  # (numpy() was a copy)
            array.assign(values)


def _unit(unit: str, mpu: float, kgpu: float, angular: bool) -> float:
    """The factor from a stage value to SI (degrees for angular joints' values)."""
    per_deg = 1.0 / _DEG if angular else 1.0  # (a gain per degree is 180/pi times one per radian)
    if unit == "mass":
        return kgpu
    if unit == "length":
        return _DEG if angular else mpu
    if unit == "force":
        return kgpu * mpu * mpu if angular else kgpu * mpu
    if unit == "gain":
        return kgpu * mpu * mpu * per_deg if angular else kgpu
    if unit == "inertia":
        return kgpu * mpu * mpu if angular else kgpu
    return 1.0


def split_randomize(randomize) -> tuple:
    """``(joint start entries, model value entries)``: ``[(key, (pattern, attribute, op, low, high))]`` each."""
    starts, values = [], []
    for key, value in (randomize or {}).items():
        pattern, attribute = split_key(key)
        op, low, high = parse_range(key, value)
        (starts if attribute in START_ATTRIBUTES else values).append((key, (pattern, attribute, op, low, high)))
    return starts, values

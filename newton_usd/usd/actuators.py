"""NewtonActuator prims (newton-usd-schemas 0.6): a control law (PD, PID or a neural network), its clampings and
delay, driving the one DOF of the revolute or prismatic joint its ``newton:targets`` names, into
``builder.add_actuator``.

The schemas' properties are read by name from the prim and its applied API schemas as the prim's type info lists
them, so that a stage is read alike whether or not the schemas are registered here. Values are in joint space
and radians (the schema's convention, not UsdPhysics' degrees); stage units are converted to SI. The target
joint's own drive (``PhysicsDriveAPI``) gives the actuator's targets (``targetPosition``/``targetVelocity``, in
the joint's units: degrees for a revolute joint), authored with or without gains
(:func:`~newton_usd.usd.joint_axes.joint_axis` reads them).
"""

from __future__ import annotations

import math
import os

from pxr import Sdf

from ..core.actuators import ActuatorSpec
from ..errors import UsdInputError

ACTUATOR_TYPE = "NewtonActuator"

_DRIVES = {"NewtonPDControlAPI": "pd", "NewtonPIDControlAPI": "pid", "NewtonNeuralControlAPI": "neural"}
_CLAMPS = {
    "NewtonMaxEffortClampingAPI": "max_effort",
    "NewtonDCMotorClampingAPI": "dc_motor",
    "NewtonPositionBasedClampingAPI": "position_based",
}
_DELAY = "NewtonActuatorDelayAPI"
_JOINT_TYPES = {"PhysicsRevoluteJoint": True, "PhysicsPrismaticJoint": False}  # type -> angular

# attribute -> (fallback, kind of quantity: how stage units scale it; "hard" lower bound or None)
_DRIVE_ATTRS = {
    "kp": (0.0, "stiffness", 0.0),
    "kd": (0.0, "damping", 0.0),
    "ki": (0.0, "integral_gain", 0.0),
    "constEffort": (0.0, "effort", None),
    "integralMax": (math.inf, "integral", 0.0),
}
_CLAMP_ATTRS = {
    "max_effort": {"maxEffort": (math.inf, "effort", 0.0)},
    "dc_motor": {
        "saturationEffort": (math.inf, "effort", 0.0),
        "velocityLimit": (math.inf, "velocity", 0.0),
        "maxMotorEffort": (math.inf, "effort", 0.0),
    },
}


def _snake(name: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in name)


class _Reader:
    """One actuator prim's values, SI, each read marked used (for ``usdsim check``)."""

    def __init__(self, prim, result, angular: bool):
        self.prim, self.path, self.result = prim, str(prim.GetPath()), result
        s, k = result.frame.meters_per_unit, result.frame.kilograms_per_unit
        effort = k * s * s if angular else k * s  # N·m or N in stage units -> SI
        length = 1.0 if angular else s  # rad, or stage units
        self.scale = {
            "effort": effort,
            "stiffness": effort / length,
            "damping": effort / length,
            "integral_gain": effort / length,
            "integral": length,
            "velocity": length,
            "position": length,
        }

    def value(self, name: str, fallback, kind: str, lower):
        attr = self.prim.GetAttribute(f"newton:{name}")
        value = attr.Get() if attr and attr.HasAuthoredValue() else None
        if value is None:
            return fallback
        self.result.resolver.used.add((self.path, f"newton:{name}"))
        value = float(value)
        if math.isnan(value) or (lower is not None and value < lower):
            valid = f"a number >= {lower:g}" if lower is not None else "a number"
            self.fail(f"must be {valid}, got {value}", f"newton:{name}")
        return value * self.scale[kind]

    def array(self, name: str, kind: str):
        attr = self.prim.GetAttribute(f"newton:{name}")
        values = attr.Get() if attr and attr.HasAuthoredValue() else None
        if values is None:
            return ()
        self.result.resolver.used.add((self.path, f"newton:{name}"))
        return tuple(float(v) * self.scale[kind] for v in values)

    def fail(self, message: str, attribute: str | None = None):
        raise UsdInputError(message, file=self.result.file, prim=self.path, attribute=attribute)


def import_actuators(builder, prims, result) -> None:
    """Each ``NewtonActuator`` prim of ``prims`` into ``builder.add_actuator``, labelled by its path.

    Raises:
        UsdInputError: naming the actuator prim: no target, a target that is not a revolute or prismatic joint of
            this import (or one left without its DOF), no control law or two, a neural model file missing, unreadable,
            not ONNX or not a network Newton's neural drives run, a value out of its schema's range, a lookup table
            whose lists differ in length or whose positions decrease.
    """
    for prim in prims:
        if not prim.IsActive():
            continue
        path = str(prim.GetPath())
        joint, angular = _target_joint(builder, prim, result)
        reader = _Reader(prim, result, angular)
        applied = list(prim.GetPrimTypeInfo().GetAppliedAPISchemas())
        drives = [s for s in applied if s in _DRIVES]
        if len(drives) != 1:
            found = f"two or more ({', '.join(drives)})" if drives else "none"
            reader.fail(
                f"an actuator needs exactly one control law (NewtonPDControlAPI, NewtonPIDControlAPI or "
                f"NewtonNeuralControlAPI applied), it has {found}"
            )
        drive = _DRIVES[drives[0]]
        if drive == "neural":  # (the network is the law: no gains)
            values = dict(zip(("model_path", "network", "sample_dt"), neural_model(reader), strict=True))
        else:
            names = [
                n for n in _DRIVE_ATTRS if drive == "pid" or n not in ("ki", "integralMax")
            ]  # (a PD reads no more)
            values = {_snake(name): reader.value(name, *_DRIVE_ATTRS[name]) for name in names}
        clamps = []
        for schema in applied:
            kind = _CLAMPS.get(schema)
            if kind == "position_based":
                clamps.append((kind, _lookup_table(reader)))
            elif kind is not None:
                clamps.append(
                    (kind, {_snake(name): reader.value(name, *spec) for name, spec in _CLAMP_ATTRS[kind].items()})
                )
                if kind == "dc_motor":
                    _check_dc_motor(reader, clamps[-1][1])
        delay = 0
        if _DELAY in applied:
            attr = prim.GetAttribute("newton:delaySteps")
            delay = 1  # (the schema's fallback)
            if attr and attr.HasAuthoredValue():
                result.resolver.used.add((path, "newton:delaySteps"))
                delay = attr.Get()
                if delay is None or delay < 0:
                    reader.fail(f"must be an integer >= 0, got {delay}", "newton:delaySteps")
        spec = ActuatorSpec(drive=drive, clamps=tuple(clamps), delay_steps=int(delay), **values)
        builder.add_actuator(joint, spec, label=path)


def _targets(prim) -> list:
    rel = prim.GetRelationship("newton:targets")
    return [str(t) for t in rel.GetTargets()] if rel else []


def _target_joint(builder, prim, result):
    """(builder joint index, angular) of the joint the actuator drives; a one-line error when it has none."""
    path = str(prim.GetPath())
    targets = _targets(prim)

    def fail(message):
        raise UsdInputError(message, file=result.file, prim=path, attribute="newton:targets")

    if not targets:
        fail("an actuator needs a target: author newton:targets to a revolute or prismatic joint (or deactivate it)")
    result.resolver.used.add((path, "newton:targets"))
    if len(targets) > 1:
        result.diagnostics.add("NewtonActuator with several newton:targets: only the first is driven", path)
    target = prim.GetStage().GetPrimAtPath(targets[0])
    if not target or not target.IsValid():
        fail(f"its target {targets[0]} does not exist on the stage")
    type_name = target.GetTypeName()
    if type_name not in _JOINT_TYPES:
        fail(
            f"its target {targets[0]} is a {type_name or 'typeless prim'}, not a 1-DOF joint: an actuator drives a "
            "PhysicsRevoluteJoint or PhysicsPrismaticJoint"
        )
    joint = result.joint_index.get(targets[0])
    if joint is None:
        fail(f"its target {targets[0]} is not a joint this import simulates (disabled, or of another scene)")
    if sum(builder.joint_dof_dim[joint]) != 1:
        fail(f"its target {targets[0]} has no free DOF (its limits lock it): an actuator drives one DOF")
    return joint, _JOINT_TYPES[type_name]


def _model_file(reader) -> str:
    attr = reader.prim.GetAttribute("newton:modelPath")
    value = attr.Get() if attr and attr.HasAuthoredValue() else None
    path = (value.resolvedPath or value.path) if isinstance(value, Sdf.AssetPath) else value
    if not path:
        reader.fail(
            "a neural actuator needs its model file: author newton:modelPath (an .onnx file)", "newton:modelPath"
        )
    reader.result.resolver.used.add((reader.path, "newton:modelPath"))
    if not (os.path.isfile(path) and os.access(path, os.R_OK)):
        reader.fail(f"the neural model file {path} cannot be read (missing or unreadable)", "newton:modelPath")
    return os.path.abspath(path)


def neural_model(reader) -> tuple[str, str, float]:
    """(path, network kind, the step it runs at only or 0) of a ``NewtonNeuralControlAPI`` actuator's model file,
    checked as Newton 1.8 reads it (:mod:`newton_usd.usd.neural_models`); a one-line error naming the prim and
    ``newton:modelPath`` where Newton could not run it."""
    from .neural_models import NeuralModelError, check_model

    path = _model_file(reader)
    try:
        return path, *check_model(path)
    except NeuralModelError as err:
        reader.fail(f"the neural model file {path} {err}", "newton:modelPath")


def _check_dc_motor(reader, values) -> None:
    if values["velocity_limit"] <= 0:
        reader.fail(f"must be > 0, got {values['velocity_limit']}", "newton:velocityLimit")
    if math.isinf(values["saturation_effort"]) and math.isfinite(values["velocity_limit"]):
        reader.fail("a finite newton:velocityLimit needs a finite newton:saturationEffort", "newton:saturationEffort")


def _lookup_table(reader) -> dict:
    positions = reader.array("lookupPositions", "position")
    efforts = reader.array("lookupEfforts", "effort")
    if not positions or len(positions) != len(efforts):
        reader.fail(
            f"newton:lookupPositions ({len(positions)}) and newton:lookupEfforts ({len(efforts)}) must be non-empty "
            "lists of the same length",
            "newton:lookupPositions",
        )
    if any(b < a for a, b in zip(positions, positions[1:], strict=False)):
        reader.fail("must be non-decreasing", "newton:lookupPositions")
    if any(e < 0 for e in efforts):
        reader.fail("must all be >= 0 (the clamp is symmetric)", "newton:lookupEfforts")
    return {"lookup_positions": positions, "lookup_efforts": efforts}

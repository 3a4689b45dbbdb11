"""What ``usdsim explain`` and ``usdsim check`` report: resolved values with their sources, and what
the stage authors that the runtime does not use."""

from __future__ import annotations

import math
import re
from collections import defaultdict

import numpy as np
from pxr import Sdf, Usd, UsdGeom, UsdPhysics, UsdShade

from .core.types import GeoType, JointType
from .usd.honored import schema_rows
from .usd.importer import UsdImport
from .usd.joint_states import D6_AXIS_TOKENS
from .usd.mass import SHAPELESS_RADIUS

READ_NAMESPACES = ("newton:", "mjc:", "physx")
"""Attribute namespaces whose authored values the resolver could read."""


def format_value(value) -> str:
    if value is None:
        return "(engine default)"
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, (tuple, list)):
        return "(" + ", ".join(format_value(v) for v in value) + ")"
    return str(value)


def _imports(imports) -> list:
    return [imports] if isinstance(imports, UsdImport) else list(imports)


def explain_rows(imports, prims=(), models=None) -> list[tuple[str, str, str, str, str]]:
    """(prim, property, value in SI, unit, source) for every resolved property of ``imports`` (a
    :class:`UsdImport`, or several: one per PhysicsScene), optionally only for ``prims`` and their
    descendants, in prim then property order (a row that several imports resolve alike, once).
    ``models``: each import's builder, finalized (a Model, or a list in the order of ``imports``): adds the
    rows of what UsdPhysics authors, as the model simulates it (see :func:`physics_rows`). A prim that applies a
    schema some engine does not honor has a ``schema`` row naming the engines that do
    (:func:`~newton_usd.usd.honored.schema_rows`)."""
    units = {}
    from .usd import properties as props  # noqa: PLC0415

    for value in vars(props).values():
        if hasattr(value, "candidates") and hasattr(value, "unit"):
            units[value.name] = value.unit
    for value in list(props.SCENE_OPTIONS.values()) + list(props.SCENE_FLAGS.values()):
        units[value.name] = value.unit
    roots = [Sdf.Path(p) for p in prims]
    rows = {}
    imports = _imports(imports)
    if models is not None and not isinstance(models, (list, tuple)):
        models = [models]
    for k, imported in enumerate(imports):
        found = [((path, name, format_value(r.value), units.get(name, ""), r.source)) for (path, name), r in
                 imported.resolver.provenance.items()]  # fmt: skip
        if models is not None:
            found = _chosen_iterations(found, models[k]) + physics_rows(imported, models[k])
        found += schema_rows(imported)
        for row in found:
            if roots and not any(Sdf.Path(row[0]).HasPrefix(root) for root in roots):
                continue
            rows[row] = None
    return sorted(rows, key=lambda row: row[:2])


def _chosen_iterations(rows, model) -> list:
    """``rows`` with the scene's unset ``newton.iterations`` given as the xpbd solver chooses it for ``model``
    (:func:`~newton_usd.solvers.newton.solver_newton.xpbd_iterations`), where it chooses."""
    from .solvers.newton.solver_newton import LIMIT_ITERATIONS_REASON, xpbd_iterations  # noqa: PLC0415

    out = []
    for row in rows:
        chosen = xpbd_iterations(model) if row[1] == "newton.iterations" and row[2] == format_value(None) else None
        out.append(row if chosen is None else (row[0], row[1], format_value(chosen), row[3], LIMIT_ITERATIONS_REASON))
    return out


# ---- what UsdPhysics authors, as the simulation uses it (read from the finalized Model)

DEFAULT_DENSITY_TEXT = "default density 1000 kg/m^3"
_D6_NAMES = (D6_AXIS_TOKENS[:3], D6_AXIS_TOKENS[3:])  # (linear, angular)


def physics_rows(imported, model) -> list[tuple[str, str, str, str, str]]:
    """(prim, property, value in SI, unit, source) of what UsdPhysics authors, as ``model`` (``imported``'s
    builder, finalized) simulates it: the scene's gravity; each body's mass, center of mass and inertia; each
    joint's type, axis, limits and drive; each collider's friction and restitution. The source is the authored
    attribute that gave the value, or how it was derived when nothing is authored."""
    stage, frame = imported.stage, imported.frame
    rows = [_gravity_row(imported, model)]
    shape_body = model.shape_body.numpy()
    shape_type = model.shape_type.numpy()
    colliders = defaultdict(list)  # body -> [collider prim] (what gives it mass: no planes, no visual geoms)
    for s, label in enumerate(model.shape_label):
        prim = stage.GetPrimAtPath(label) if Sdf.Path.IsValidPathString(label) else Usd.Prim()
        if not prim or not prim.HasAPI(UsdPhysics.CollisionAPI):
            continue
        if shape_body[s] >= 0 and shape_type[s] != GeoType.PLANE:
            colliders[int(shape_body[s])].append(prim)
        rows += _material_rows(prim, label, model, s)
    mass, com, inertia = model.body_mass.numpy(), model.body_com.numpy(), model.body_inertia.numpy()
    for b, label in enumerate(model.body_label):
        rows += _body_rows(stage, frame, label, float(mass[b]), com[b], inertia[b], colliders.get(b, []))
    arrays = {
        name: getattr(model, name).numpy()
        for name in (
            "joint_type", "joint_qd_start", "joint_dof_dim", "joint_axis", "joint_limited", "joint_limit_lower",
            "joint_limit_upper", "joint_target_ke", "joint_target_kd", "joint_target_pos", "joint_target_vel",
            "joint_effort_limit", "joint_drive_acceleration",
        )
    }  # fmt: skip
    for j, label in enumerate(model.joint_label):
        prim = stage.GetPrimAtPath(label) if Sdf.Path.IsValidPathString(label) else Usd.Prim()
        if prim and prim.IsA(UsdPhysics.Joint):
            rows += _joint_rows(prim, label, j, arrays, frame)
            if int(arrays["joint_type"][j]) == JointType.BALL and prim.IsA(UsdPhysics.SphericalJoint):
                cone = model.joint_cone(j)
                rows.append(_cone_row(prim, label, None if cone is None else cone.limit))
    rows += _actuator_rows(stage, model, arrays)
    return rows


_ACTUATOR_VALUES = (  # (the spec's field, the attribute, unit of an angular DOF, of a linear one)
    ("kp", "newton:kp", "N*m/rad", "N/m"),
    ("kd", "newton:kd", "N*m*s/rad", "N*s/m"),
    ("ki", "newton:ki", "N*m/(rad*s)", "N/(m*s)"),
    ("const_effort", "newton:constEffort", "N*m", "N"),
    ("integral_max", "newton:integralMax", "rad*s", "m*s"),
    ("delay_steps", "newton:delaySteps", "steps", "steps"),
)


_CLAMP_UNITS = {  # a clamping value -> (unit of an angular DOF, of a linear one)
    "velocity_limit": ("rad/s", "m/s"),
    "lookup_positions": ("rad", "m"),
}


def _actuator_rows(stage, model, arrays) -> list:
    """Each joint actuator (NewtonActuator prim, world 0's) as the model simulates it: its joint, law, values and
    clampings, SI, with the attribute that gave each (else the schema's fallback)."""
    rows = []
    per_world = model.actuator_count // max(model.num_worlds, 1)
    joints = model.actuator_joint.numpy() if per_world else ()
    for label, j, spec in zip(model.actuator_label[:per_world], joints, model.actuator_spec, strict=False):
        prim = stage.GetPrimAtPath(label) if Sdf.Path.IsValidPathString(label) else Usd.Prim()
        side = 0 if int(arrays["joint_dof_dim"][j][1]) > 0 else 1  # (angular, linear)
        rows.append((label, "actuator.joint", model.joint_label[j], "", "newton:targets"))
        rows.append((label, "actuator.drive", spec.drive.upper(), "", "the control law applied"))
        if spec.drive == "neural":  # (its network is the law: no gains)
            rows.append(
                (label, "actuator.network", f"{spec.network.upper()} {spec.model_path}", "", "newton:modelPath")
            )
        for name, attribute, *units in _ACTUATOR_VALUES:
            if (name in ("ki", "integral_max") and spec.drive != "pid") or (
                spec.drive == "neural" and name != "delay_steps"
            ):
                continue
            source = _actuator_source(prim, attribute)
            if name == "delay_steps" and not spec.delay_steps and source != attribute:
                source = "none (no NewtonActuatorDelayAPI)"
            rows.append((label, f"actuator.{name}", format_value(getattr(spec, name)), units[side], source))
        for kind, values in spec.clamps:
            for name, value in values.items():
                camel = name.split("_")[0] + "".join(w.title() for w in name.split("_")[1:])
                unit = _CLAMP_UNITS.get(name, ("N*m", "N"))[side]
                rows.append((label, f"actuator.{kind}.{name}", format_value(value), unit,
                             _actuator_source(prim, f"newton:{camel}")))  # fmt: skip
    return rows


def _actuator_source(prim, attribute: str) -> str:
    attr = prim.GetAttribute(attribute) if prim else None
    return attribute if attr and attr.HasAuthoredValue() else "schema fallback"


def _cone_row(prim, label, cone):
    """A spherical joint's cone limit as MuJoCo's ball range (rad): the smaller authored cone angle."""
    if cone is None or math.isnan(cone):
        return (label, "cone_limit", "inf", "rad", "free (no cone limit)")
    authored = [(n, _authored(prim, n)) for n in ("physics:coneAngle0Limit", "physics:coneAngle1Limit")]
    authored = [(n, v) for n, v in authored if v is not None and math.isfinite(v) and v >= 0]
    source = ", ".join(f"{n} ({v:g} deg)" for n, v in authored)
    if len(authored) > 1:
        source = "the smaller of " + source
        if authored[0][1] != authored[1][1] and "MjcJointAPI" not in prim.GetAppliedSchemas():
            source += " (Newton's solvers: each angle in its own swing plane)"
    if "MjcJointAPI" in prim.GetAppliedSchemas():
        source += "; MuJoCo's ball range (the whole rotation angle)"
    else:
        source += "; bounds the whole rotation angle, twist included (MuJoCo's ball range)"
    return (label, "cone_limit", format_value(cone), "rad", source)


def _authored(prim, name):
    """The authored value of ``name`` on ``prim``, or None."""
    attr = prim.GetAttribute(name)
    return attr.Get() if attr and attr.HasAuthoredValue() else None


def _gravity_row(imported, model):
    frame = imported.frame
    g = tuple(float(x) for x in model.gravity)
    up = f"-upAxis ({frame.up_axis}" + (", -Z in the simulation's Z-up axes)" if frame.up_axis != "Z" else ")")
    if imported.scene_path is None:
        return ("/", "gravity", format_value(g), "m/s^2", f"Earth gravity along {up} (no PhysicsScene)")
    path = imported.scene_path
    enabled = imported.scene.get("gravity_enabled")
    if enabled is not None and not enabled.value:
        return (path, "gravity", format_value(g), "m/s^2", f"zero: gravity disabled ({enabled.source})")
    prim = imported.stage.GetPrimAtPath(path)
    direction = _authored(prim, "physics:gravityDirection")
    magnitude = _authored(prim, "physics:gravityMagnitude")
    if magnitude is not None and not math.isfinite(magnitude):
        magnitude = None
    if direction is not None and not any(direction):
        direction = None
    units = " m" if frame.meters_per_unit == 1 else " stage units"
    if direction is not None and magnitude is not None:
        source = f"physics:gravityMagnitude ({magnitude:g}{units}/s^2) along physics:gravityDirection"
    elif magnitude is not None:
        source = f"physics:gravityMagnitude ({magnitude:g}{units}/s^2) along {up}"
    elif direction is not None:
        source = "Earth gravity 9.81 m/s^2 along physics:gravityDirection"
    else:
        source = f"Earth gravity along {up}"
    if frame.up_axis != "Z" and direction is not None:
        source += " (turned into the simulation's Z-up axes)"
    return (path, "gravity", format_value(g), "m/s^2", source)


def _material_rows(prim, label, model, s):
    """A collider's sliding friction and restitution, from its bound physics material (purpose physics)."""
    material = UsdShade.MaterialBindingAPI(prim).ComputeBoundMaterial("physics")[0]
    material = material.GetPrim() if material else None
    if material is not None and not material.HasAPI(UsdPhysics.MaterialAPI):
        material = None
    rows = []
    for name, array, attr, default in (
        ("friction", model.shape_material_mu, "physics:dynamicFriction", "0.5 default (PhysX's)"),
        ("restitution", model.shape_material_restitution, "physics:restitution", "0 default"),
    ):
        value = float(array.numpy()[s])
        if material is None:
            source = f"{default}: no physics material"
        elif material.GetAttribute(attr).HasAuthoredValue():
            source = f"{material.GetPath()} {attr}"
        else:
            source = f"{material.GetPath()}: {attr} not authored (fallback)"
        if name == "restitution" and value > 0:
            source += "; not simulated by MuJoCo"
        rows.append((label, name, format_value(value), "", source))
    return rows


def _mass_api(prim, name):
    """A MassAPI value authored on ``prim`` (mass and density: > 0 only, 0 means not set), or None."""
    if not prim.HasAPI(UsdPhysics.MassAPI):
        return None
    value = _authored(prim, name)
    if name in ("physics:mass", "physics:density") and (value is None or not value > 0):
        return None
    return value


def _collider_mass_source(body, collider) -> str:
    """Which rule gives a collider its mass (importer: its mass > its density > the body's density > its
    physics material's density > 1000 kg/m^3)."""
    where = f"collider {collider.GetPath()}"
    if _mass_api(collider, "physics:mass") is not None:
        return f"physics:mass ({where})"
    if _mass_api(collider, "physics:density") is not None:
        return f"physics:density ({where})"
    if _mass_api(body, "physics:density") is not None:
        return f"body physics:density ({where})"
    material = UsdShade.MaterialBindingAPI(collider).ComputeBoundMaterial("physics")[0]
    if material and material.GetPrim().HasAPI(UsdPhysics.MaterialAPI):
        density = _authored(material.GetPrim(), "physics:density")
        if density is not None and density > 0:
            return f"{material.GetPath()} physics:density ({where})"
    return None  # the default density


def _cable_of(stage, label: str) -> str | None:
    """The cable prim (a BasisCurves) whose segment body is labelled ``label`` (``<path>[_curveN]_edge_body_<i>``,
    as ``core/cables`` labels them), or None."""
    match = re.match(r"^(.*?)(_curve\d+)?_edge_body_\d+$", label)
    prim = stage.GetPrimAtPath(match.group(1)) if match and Sdf.Path.IsValidPathString(match.group(1)) else None
    return match.group(1) if prim and prim.IsA(UsdGeom.BasisCurves) else None


def _body_rows(stage, frame, label, mass, com, inertia, colliders):
    prim = stage.GetPrimAtPath(label) if Sdf.Path.IsValidPathString(label) else Usd.Prim()
    com, inertia = tuple(float(x) for x in com), np.asarray(inertia, dtype=np.float64)
    if not prim:  # a PointInstancer instance (/Instancer[i]): its prototype's mass properties; or a cable's segment
        cable = _cable_of(stage, label)
        source = f"a segment of cable {cable}" if cable else "as its PointInstancer prototype"
        return [
            (label, "mass", format_value(mass), "kg", source),
            (label, "com", format_value(com), "m", source),
            (label, "inertia", _inertia_text(inertia), "kg*m^2", source),
        ]
    b_mass = _mass_api(prim, "physics:mass")
    b_com = _mass_api(prim, "physics:centerOfMass")
    if b_com is not None and not all(math.isfinite(c) for c in b_com):
        b_com = None
    b_inertia = _mass_api(prim, "physics:diagonalInertia")
    if b_inertia is not None and not any(b_inertia):
        b_inertia = None
    sources = [_collider_mass_source(prim, c) for c in colliders]
    if b_mass is not None:
        m_source = "physics:mass"
    elif sources and mass > 0:
        if all(s is None for s in sources):
            m_source = f"from colliders, {DEFAULT_DENSITY_TEXT}"
        elif len(sources) == 1:
            m_source = sources[0]
        else:
            m_source = f"computed from its {len(sources)} colliders"
    elif mass == 0:
        m_source = "massless: no collider, no mass, welded by a fixed joint"
    else:
        m_source = "1 kg default (no collider, no mass)"
    if b_com is not None:
        c_source = "physics:centerOfMass"
    elif colliders and mass > 0:
        c_source = "from colliders"
    else:
        c_source = "body origin (no collider, no physics:centerOfMass)"
    if b_inertia is not None:
        i_source = "physics:diagonalInertia"
        if _mass_api(prim, "physics:principalAxes") is not None:
            i_source += " along physics:principalAxes"
    elif colliders and mass > 0:
        i_source = "from colliders" + (", scaled to physics:mass" if b_mass is not None else "")
        if b_com is not None:
            i_source += ", moved to physics:centerOfMass"
    elif mass == 0:
        i_source = "massless"
    else:
        i_source = f"a {SHAPELESS_RADIUS:g} m solid sphere's (no collider, no physics:diagonalInertia; as UsdPhysics)"
    return [
        (label, "mass", format_value(mass), "kg", m_source),
        (label, "com", format_value(com), "m", c_source + " (body frame)"),
        (label, "inertia", _inertia_text(inertia), "kg*m^2", i_source + " (about the COM, body axes)"),
    ]


def _inertia_text(inertia) -> str:
    """A 3x3 inertia: its diagonal when the rest is zero (to float32 round-off), else its rows."""
    inertia = np.asarray(inertia, dtype=np.float64).reshape(3, 3)
    off = inertia - np.diag(np.diag(inertia))
    if not np.any(np.abs(off) > 1e-6 * max(1e-30, np.abs(inertia).max())):
        return "diag" + format_value(tuple(float(x) for x in np.diag(inertia)))
    return format_value(tuple(tuple(float(x) for x in row) for row in inertia))


_JOINT_NAMES = {t: t.name.lower() for t in JointType}


def _joint_rows(prim, label, j, a, frame):
    jt = JointType(int(a["joint_type"][j]))
    type_source = prim.GetTypeName() or "PhysicsJoint"
    if jt == JointType.FIXED and prim.GetTypeName() in ("PhysicsRevoluteJoint", "PhysicsPrismaticJoint"):
        type_source += ": locked, physics:lowerLimit > physics:upperLimit"
    elif jt == JointType.FIXED and prim.GetTypeName() == "PhysicsJoint":
        type_source += ": every axis locked"
    elif jt == JointType.BALL and prim.GetTypeName() == "PhysicsJoint":
        type_source += ": the three rotations free, the translations locked"
    rows = [(label, "type", _JOINT_NAMES[jt], "", type_source)]
    if jt not in (JointType.REVOLUTE, JointType.PRISMATIC, JointType.D6):
        return rows
    start = int(a["joint_qd_start"][j])
    n_lin, n_ang = (int(x) for x in a["joint_dof_dim"][j])
    if jt != JointType.D6:
        n_lin, n_ang = (0, 1) if jt == JointType.REVOLUTE else (1, 0)
    many = jt == JointType.D6 and n_lin + n_ang > 1
    for k in range(n_lin + n_ang):
        d = start + k
        angular = k >= n_lin
        axis = tuple(float(x) for x in a["joint_axis"][d])
        i = int(np.argmax(np.abs(axis)))
        if jt == JointType.D6:
            token = _D6_NAMES[angular][i]
            limit_ns, drive_ns, suffix = f"limit:{token}:physics:", f"drive:{token}:physics:", f"[{token}]" * many
            lower_attr, upper_attr = "low", "high"
        else:
            limit_ns, drive_ns, suffix = "physics:", f"drive:{'angular' if angular else 'linear'}:physics:", ""
            lower_attr, upper_attr = "lowerLimit", "upperLimit"
        axis_source = (
            f"D6 axis {token}" if jt == JointType.D6 else "physics:axis" if _authored(prim, "physics:axis") else
            "physics:axis fallback X"
        )  # fmt: skip
        if axis[i] < 0:
            axis_source += ", negated: body1 is the parent in the joint tree"
        rows.append((label, "axis" + suffix, format_value(axis), "", axis_source + " (joint frame)"))
        unit, authored_unit = ("rad", "deg") if angular else ("m", "stage units" if frame.meters_per_unit != 1 else "m")
        for name, key, attr, free in (
            ("limit_lower", "joint_limit_lower", lower_attr, "free (no limit)"),
            ("limit_upper", "joint_limit_upper", upper_attr, "free (no limit)"),
        ):
            value = float(a[key][d])
            if not a["joint_limited"][d] or abs(value) >= 1e10:
                text = "-inf" if name == "limit_lower" else "inf"
                rows.append((label, name + suffix, text, unit, free))
            else:
                authored = _authored(prim, limit_ns + attr)
                source = limit_ns + attr + (f" ({authored:g} {authored_unit})" if authored is not None else "")
                rows.append((label, name + suffix, format_value(value), unit, source))
        if not prim.HasAPI(UsdPhysics.DriveAPI, drive_ns.split(":")[1]):
            continue
        ke, kd = float(a["joint_target_ke"][d]), float(a["joint_target_kd"][d])
        accel = bool(a["joint_drive_acceleration"][d])
        if accel:
            ke_unit, kd_unit = "1/s^2", "1/s"
        else:
            ke_unit, kd_unit = ("N*m/rad", "N*m*s/rad") if angular else ("N/m", "N*s/m")
        active = ke > 0 or kd > 0
        for name, value, unit_, attr, scale in (
            ("drive_stiffness", ke, ke_unit, "stiffness", "per deg" if angular and not accel else None),
            ("drive_damping", kd, kd_unit, "damping", "per deg/s" if angular and not accel else None),
            ("drive_target_pos", float(a["joint_target_pos"][d]), unit, "targetPosition", authored_unit),
            ("drive_target_vel", float(a["joint_target_vel"][d]), unit + "/s", "targetVelocity", authored_unit + "/s"),
        ):
            authored = _authored(prim, drive_ns + attr)
            if authored is None:
                source = f"{drive_ns}{attr} not authored (fallback 0)"
            else:
                source = drive_ns + attr + (f" ({authored:g} {scale})" if scale else "")
            if name.startswith("drive_target") and not active:
                source += "; unused: no stiffness or damping"
            if accel and name in ("drive_stiffness", "drive_damping"):
                source += "; acceleration drive, times the DOF's effective inertia"
            rows.append((label, name + suffix, format_value(value), unit_, source))
        effort = float(a["joint_effort_limit"][d])
        authored = _authored(prim, drive_ns + "maxForce")
        if effort >= 1e10:
            source = f"no limit ({drive_ns}maxForce " + ("not authored)" if authored is None else f"{authored:g})")
            rows.append((label, "effort_limit" + suffix, "inf", "N*m" if angular else "N", source))
        else:
            source = drive_ns + "maxForce"
            rows.append((label, "effort_limit" + suffix, format_value(effort), "N*m" if angular else "N", source))
    return rows


_INSTANCED_APIS = {"limit": UsdPhysics.LimitAPI, "drive": UsdPhysics.DriveAPI}
"""UsdPhysics' multiple-apply schemas whose ``<kind>:<instance>:physics:*`` values count only where applied."""


def _without_api(prim, name) -> str | None:
    """``name`` with a note when it is a ``limit:*`` or ``drive:*`` value of an instance whose API (PhysicsLimitAPI,
    PhysicsDriveAPI) is not applied to ``prim``: UsdPhysics gives it no effect; else None."""
    parts = name.split(":")
    if len(parts) < 4 or parts[0] not in _INSTANCED_APIS or parts[2] != "physics":
        return None
    api = _INSTANCED_APIS[parts[0]]
    if prim.HasAPI(api, parts[1]):
        return None
    return f"{name} (no effect: Physics{api.__name__}:{parts[1]} is not applied)"


def unused_attributes(imports) -> dict[str, list[str]]:
    """Authored ``newton:*``, ``mjc:*`` and ``physx*`` attributes that the runtime read in none of
    ``imports`` (a :class:`UsdImport`, or several of one stage: one per PhysicsScene), and ``limit:*`` and
    ``drive:*`` values authored without their API applied: attribute name (with why, for the latter) ->
    prim paths."""
    imports = _imports(imports)
    used = set().union(*(imported.resolver.used for imported in imports))
    out = defaultdict(list)
    for prim in Usd.PrimRange(imports[0].stage.GetPseudoRoot(), Usd.TraverseInstanceProxies()):
        path = str(prim.GetPath())
        for name in prim.GetAuthoredPropertyNames():
            unapplied = _without_api(prim, name)
            if unapplied is not None:
                out[unapplied].append(path)
            elif name.startswith(READ_NAMESPACES) and (path, name) not in used:
                if prim.GetRelationship(name):
                    continue  # relationships (mjc:target, ...) are not values
                out[name].append(path)
    return dict(sorted(out.items()))


START_OVERLAP = 0.01
"""m: colliders that start deeper than this in each other are listed by ``usdsim check`` (:func:`start_overlaps`):
their contacts push them apart at once, which a stiff solver turns into a blow-up."""


def start_overlaps(model, solver=None) -> list[tuple[str, str, float]]:
    """``(collider, collider, m)``: the pairs of colliders that start more than :data:`START_OVERLAP` deep in each
    other, deepest first, as MuJoCo's collision detection finds them at ``model``'s initial state (with the stage's
    filters: joints, filtered pairs, collision groups). ``solver``: ``model``'s C MuJoCo solver where there is one
    (else one is built)."""
    from .solvers.mujoco import SolverMuJoCo  # noqa: PLC0415

    if not isinstance(solver, SolverMuJoCo) or solver.backend != "cpu":
        solver = SolverMuJoCo(model, backend="cpu")
    contacts = model.contacts(max(1024, 8 * model.shape_count))
    solver.update_contacts(contacts)  # (at the state the solver holds: the initial one, before any step)
    n = contacts.rigid_contact_count
    depth = contacts.rigid_contact_depth.numpy()[:n]
    shapes = zip(contacts.rigid_contact_shape0.numpy()[:n], contacts.rigid_contact_shape1.numpy()[:n], strict=True)
    deepest = {}
    for (a, b), d in zip(shapes, depth, strict=True):
        if d > START_OVERLAP and min(a, b) >= 0:
            key = (model.shape_label[a], model.shape_label[b])
            deepest[key] = max(deepest.get(key, 0.0), float(d))
    return sorted(((a, b, d) for (a, b), d in deepest.items()), key=lambda row: -row[2])


def table(rows, headers) -> str:
    """A plain text table with aligned columns."""
    widths = [max(len(str(x)) for x in col) for col in zip(headers, *rows, strict=False)]
    lines = ["  ".join(str(h).ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    for row in rows:
        lines.append("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    return "\n".join(lines)

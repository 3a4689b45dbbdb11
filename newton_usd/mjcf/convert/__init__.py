"""MJCF to a USD asset: UsdPhysics bodies, joints and colliders, plus the mjc:* schemas for what only
MuJoCo has, so that the asset simulates as the MJCF does (here and in tools that read the same
schemas).

The compiled model at qpos0 is written out: one Xform per body, nested as in the MJCF tree, with a
PhysicsRigidBodyAPI and its compiled inertial (PhysicsMassAPI); one gprim per geom with
PhysicsCollisionAPI and MjcCollisionAPI (a height field: a Mesh of its surface with
NewtonUsdHeightfieldAPI holding MuJoCo's grid); physics materials for the friction triples; one UsdPhysics
joint per MJCF joint (several per body stay several, in order; a body without joints gets a fixed
joint; free joints need none), with MjcJointAPI values; MjcActuator prims; connect and weld
equalities as joints excluded from articulations; a PhysicsScene with MjcSceneAPI and every option
and flag, the time step exact; contact pairs, keyframes, cameras and lights. The bodies are placed at
qpos0, so a joint's USD coordinate is MuJoCo's qpos minus the joint's ref (``mjc:ref``, kept with
``mjc:springref`` as MuJoCo's values; the physics limits beside it are MuJoCo's range, in qpos, as
mujoco-usd-converter writes them).

:func:`convert` tells the conversion in order; each kind of element is written by the module named for it:
:mod:`.scene`, :mod:`.geoms`, :mod:`.joints` (and collision filters), :mod:`.mujoco_elements` (sites,
tendons, actuators, equalities, keyframes, contact pairs), :mod:`.cameras_lights`; :mod:`.prims` holds what
they share (prim names, attributes, transforms).
"""

from __future__ import annotations

import os

import mujoco
import numpy as np
from pxr import Gf, Sdf, Tf, Usd, UsdGeom, UsdPhysics

from ...core.quat import transform_inverse, transform_multiply, wxyz_to_xyzw
from ...diagnostics import Diagnostics
from ...errors import UsdInputError
from ..importer import load_mjcf
from ..options import MjcfOptions
from .cameras_lights import write_cameras, write_lights
from .geoms import heightfield_surface, write_geom
from .joints import write_collision_filters, write_joints
from .mujoco_elements import (
    write_actuators,
    write_contact_pairs,
    write_equalities,
    write_keyframes,
    write_sites,
    write_tendons,
)
from .prims import MjcfName, PrimNames, T, gf_quat, mjcf_name, set_attr, set_xform
from .scene import write_scene

__all__ = ["convert", "heightfield_surface"]


def convert(
    source,
    output,
    *,
    diagnostics: Diagnostics | None = None,
    **import_options,
) -> str:
    """Convert the MJCF ``source`` (path or XML text) to the USD file ``output``; returns its path.

    The stage is built in memory and written to a temporary file next to ``output``, renamed to
    ``output`` once complete: a failure leaves no file behind (and an existing ``output`` as it was).
    ``import_options`` are :func:`newton_usd.mjcf.add_mjcf`'s (``fix_base``, ``import_scene``,
    ``self_collision``, ``collision_from_visuals``, ``merge_meshes``, ``decomposition``: the fields of
    :class:`newton_usd.mjcf.options.MjcfOptions`);
    with ``import_scene=False`` no PhysicsScene is written (usdsim then uses its defaults)."""
    output = os.fspath(output)
    _check_output(output)
    diag = diagnostics if diagnostics is not None else Diagnostics()
    options = MjcfOptions(**import_options)
    m, file = load_mjcf(source, options, diag)
    if m.nbody <= 1:  # an include fragment (<mujoco> holding a <body> outside <worldbody>) or a template
        diag.add("the MJCF has no bodies: the USD has nothing to simulate", file)
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    stage = Usd.Stage.CreateInMemory()
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    UsdPhysics.SetStageKilogramsPerUnit(stage, 1.0)
    names = PrimNames()
    model_name = m.names[: m.names.find(b"\0")].decode() if m.names else "model"
    root = names.child(Sdf.Path.absoluteRootPath, MjcfName(model_name) if model_name else "model")
    stage.SetDefaultPrim(UsdGeom.Xform.Define(stage, root).GetPrim())
    stage.GetRootLayer().customLayerData = {"newton_usd:source": os.path.basename(file)}

    if options.import_scene:
        write_scene(stage, m)
    world = [(d.xpos[b].copy(), wxyz_to_xyzw(d.xquat[b])) for b in range(m.nbody)]
    body_path = {0: root}
    for b in range(1, m.nbody):
        parent = int(m.body_parentid[b])
        path = names.child(body_path[parent], mjcf_name(m, mujoco.mjtObj.mjOBJ_BODY, b, "body"))
        body_path[b] = path
        prim = UsdGeom.Xform.Define(stage, path).GetPrim()
        local = transform_multiply(transform_inverse(world[parent]), world[b]) if parent else world[b]
        set_xform(prim, local)
        if parent == 0 and any(int(m.body_parentid[c]) == b for c in range(1, m.nbody)):
            UsdPhysics.ArticulationRootAPI.Apply(prim)
        body = UsdPhysics.RigidBodyAPI.Apply(prim)
        if m.body_mocapid[b] >= 0:  # a mocap body: moved by its (animated) transform
            body.CreateKinematicEnabledAttr(True)
        if m.body_gravcomp[b]:
            set_attr(prim, "mjc:body:gravcomp", T.Double, float(m.body_gravcomp[b]))  # as mujoco-usd-converter
        if m.body_mass[b] <= 0:  # UsdPhysics reads mass 0 as "not set": author nothing
            continue
        mass = UsdPhysics.MassAPI.Apply(prim)
        mass.CreateMassAttr(float(m.body_mass[b]))
        mass.CreateCenterOfMassAttr(Gf.Vec3f(*map(float, m.body_ipos[b])))
        if (m.body_inertia[b] <= 0).any():  # UsdPhysics takes positive inertias only; none: from the colliders
            diag.add("a zero inertia has no UsdPhysics form (positive only): not written, so from the colliders", path)
            continue
        mass.CreateDiagonalInertiaAttr(Gf.Vec3f(*map(float, m.body_inertia[b])))
        mass.CreatePrincipalAxesAttr(gf_quat(wxyz_to_xyzw(m.body_iquat[b])))

    materials = {}
    geom_path = {}
    paired = {int(g) for g in np.concatenate([m.pair_geom1, m.pair_geom2])}
    for g in range(m.ngeom):
        path = write_geom(stage, m, g, body_path, names, materials, root, diag, paired)
        if path is not None:
            geom_path[g] = path
    write_collision_filters(stage, m, body_path, diag)
    joint_path = {}
    for b in range(1, m.nbody):
        write_joints(stage, m, b, world, body_path, names, joint_path, diag)
    site_path = write_sites(stage, m, body_path, names)
    tendon_paths = write_tendons(stage, m, root, names, joint_path, site_path, geom_path, diag)
    write_actuators(stage, m, root, names, joint_path, body_path, diag, tendon_paths, site_path)
    write_equalities(stage, m, world, body_path, site_path, joint_path, tendon_paths, root, names, diag)
    write_keyframes(stage, m, root, names, diag)
    write_contact_pairs(stage, m, root, names, geom_path, diag)
    write_cameras(stage, m, body_path, names, diag)
    write_lights(stage, m, body_path, names, diag)
    if m.nsensor:
        diag.add("MJCF sensors are not converted yet", file)
    names.set_display_names(stage)
    _save(stage, output)
    diag.emit(file)
    return output


def _check_output(output: str) -> None:
    folder = os.path.dirname(os.path.abspath(output))
    ext = os.path.splitext(output)[1][1:].lower()
    if ext not in ("usd", "usda", "usdc"):
        raise UsdInputError("cannot write the output: not a .usd, .usda or .usdc file name", file=output)
    if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
        raise UsdInputError(f"cannot write the output: {folder} is not a writable directory", file=output)


def _save(stage, output: str) -> None:
    """Export ``stage`` to a temporary file beside ``output``, then rename it to ``output``."""
    folder, name = os.path.split(os.path.abspath(output))
    stem, ext = os.path.splitext(name)
    tmp = os.path.join(folder, f".{stem}.{os.getpid()}.tmp{ext}")
    try:
        try:
            written = stage.GetRootLayer().Export(tmp)
        except Tf.ErrorException as e:
            raise UsdInputError(f"cannot write the output: {str(e).strip()}", file=output) from None
        if not written:
            raise UsdInputError("cannot write the output", file=output)
        os.replace(tmp, output)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    layer = Sdf.Layer.Find(output)  # a layer of that name open in this process: show it the new file
    if layer:
        layer.Reload()

"""SDF colliders: a mesh collider that applies NewtonSDFCollisionAPI collides through Newton's SDF (and hydroelastic)
contacts under Newton's solvers, with the schema's settings as authored (stage units converted); under MuJoCo it
keeps its mesh collider, and a run says so once.

Newton 1.8 builds SDFs with CUDA only (its ``ModelBuilder.finalize`` refuses a model that asks for one on the CPU):
on Warp's CPU device the shape collides as its triangle mesh and the run says so once. The comparison with Newton's
own run of the stage needs CUDA (``gpu``-marked, skipped without one).
"""

from __future__ import annotations

import logging

import newton
import numpy as np
import pytest
import warp as wp
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics

import newton_usd  # noqa: F401  (registers the codeless schemas)
from newton_usd.cli import main
from newton_usd.core.builder import ModelBuilder
from newton_usd.diagnostics import Diagnostics
from newton_usd.errors import UsdInputError
from newton_usd.solvers.newton import model_bridge
from newton_usd.usd.honored import HONORED, message

from stages import add_ground, new_stage

BOX_FACES = [0, 2, 3, 1, 4, 5, 7, 6, 0, 1, 5, 4, 2, 6, 7, 3, 0, 4, 6, 2, 1, 3, 7, 5]
TABLE_TOP = 0.1
"""m: the top of the static table mesh (0.4 x 0.4 x 0.1, on the ground)."""
BLOCK_HALF = 0.05
"""m: half the edge of the falling block mesh."""

AUTHORED = {  # (the block's settings, in stage units; the table keeps the schema's fallbacks but its resolution)
    "newton:sdfMaxResolution": (Sdf.ValueTypeNames.Int, 16),
    "newton:sdfNarrowBandInner": (Sdf.ValueTypeNames.Float, -0.02),
    "newton:sdfNarrowBandOuter": (Sdf.ValueTypeNames.Float, 0.03),
    "newton:sdfTextureFormat": (Sdf.ValueTypeNames.Token, "float32"),
    "newton:sdfPadding": (Sdf.ValueTypeNames.Float, 0.01),
    "newton:hydroelasticEnabled": (Sdf.ValueTypeNames.Bool, True),
    "newton:hydroelasticStiffness": (Sdf.ValueTypeNames.Float, 2.0e9),
}


def box_mesh(stage, path, half, pos, *, body: bool, values=None, scale=1.0):
    """A box-shaped Mesh collider applying NewtonSDFCollisionAPI (``half``, ``pos`` in meters, authored in stage
    units by ``scale`` = 1 / metersPerUnit), with ``values`` (attribute -> (type, value)) authored on it."""
    hx, hy, hz = half
    points = [Gf.Vec3f(x, y, z) * scale for z in (-hz, hz) for y in (-hy, hy) for x in (-hx, hx)]
    mesh = UsdGeom.Mesh.Define(stage, path)
    mesh.CreatePointsAttr(points)
    mesh.CreateFaceVertexCountsAttr([4] * 6)
    mesh.CreateFaceVertexIndicesAttr(BOX_FACES)
    mesh.AddTranslateOp().Set(Gf.Vec3d(*pos) * scale)
    prim = mesh.GetPrim()
    if body:
        UsdPhysics.RigidBodyAPI.Apply(prim)
    assert prim.ApplyAPI("NewtonSDFCollisionAPI")  # (brings NewtonCollisionAPI and PhysicsCollisionAPI)
    for name, (type_name, value) in (values or {}).items():
        prim.CreateAttribute(name, type_name).Set(value)
    return prim


def sdf_stage(path=None, *, meters_per_unit=1.0, block=None, table=None, drop=0.01):
    """The ground, a static table mesh and a block mesh ``drop`` m above it, both applying NewtonSDFCollisionAPI:
    ``block`` and ``table`` the values authored on each (the table: a coarse 16 cells, by default)."""
    stage = new_stage(path, meters_per_unit=meters_per_unit)
    add_ground(stage)
    k = 1.0 / meters_per_unit
    table = {"newton:sdfMaxResolution": (Sdf.ValueTypeNames.Int, 16)} if table is None else table
    box_mesh(stage, "/Table", (0.2, 0.2, 0.05), (0, 0, 0.05), body=False, values=table, scale=k)
    z = TABLE_TOP + BLOCK_HALF + drop
    box_mesh(stage, "/Block", (BLOCK_HALF,) * 3, (0, 0, z), body=True, values=block, scale=k)
    if path:
        stage.Save()
    return stage


def imported(stage):
    builder = ModelBuilder()
    builder.add_usd(stage)
    model = builder.finalize("cpu")
    return model, {label: model.shape_sdf[i] for i, label in enumerate(model.shape_label)}


# ---------------------------------------------------------------- values as authored, in SI
@pytest.mark.parametrize("meters_per_unit", (1.0, 0.01))
def test_the_settings_reach_the_model_in_si(meters_per_unit):
    _, sdf = imported(sdf_stage(meters_per_unit=meters_per_unit, block=AUTHORED))
    s = meters_per_unit
    block = sdf["/Block"]
    assert block.max_resolution == 16 and block.target_voxel_size is None
    assert block.narrow_band == pytest.approx((-0.02 * s, 0.03 * s))
    assert block.texture_format == "float32"
    assert block.padding == pytest.approx(0.01 * s)
    assert block.hydroelastic is True
    # force / distance^3 in stage units: kg*unit/s^2 / unit^3 -> N/m^3 (metersPerUnit 0.01: 1e4 times less per m^3)
    assert block.hydroelastic_stiffness == pytest.approx(2.0e9 * s / s**3)
    table = sdf["/Table"]  # the schema's fallbacks (the narrow band's 0.1 is in stage units too)
    assert table.max_resolution == 16 and table.texture_format == "uint16" and table.padding is None
    assert table.narrow_band == pytest.approx((-0.1 * s, 0.1 * s))
    assert table.hydroelastic is False and table.hydroelastic_stiffness == pytest.approx(1.0e10 * s / s**3)
    assert sdf["/Ground"] is None


def test_a_voxel_size_takes_precedence_over_the_resolution():
    voxel = {"newton:sdfTargetVoxelSize": (Sdf.ValueTypeNames.Float, 0.5), **AUTHORED}
    _, sdf = imported(sdf_stage(meters_per_unit=0.01, block=voxel))
    assert sdf["/Block"].target_voxel_size == pytest.approx(0.005) and sdf["/Block"].max_resolution is None


def test_the_settings_reach_newtons_builder_as_newtons_own_importer_gives_them(monkeypatch):
    """The bridge's Newton builder (as it is made on a CUDA device) holds, for each SDF mesh, the settings that
    Newton's ``ModelBuilder.add_usd`` gives the same stage's shape."""
    stage = sdf_stage(block=AUTHORED)
    model, _ = imported(stage)
    monkeypatch.setattr(model_bridge, "sdf_device", lambda device: True)
    made = {}

    def keep(nb, **kw):  # (finalize would build the SDFs: CUDA only)
        made["nb"] = nb
        raise StopIteration

    monkeypatch.setattr(newton.ModelBuilder, "finalize", keep)
    said = Diagnostics()
    with pytest.raises(StopIteration):
        model_bridge.bridge_model(model, said, "xpbd")
    assert [k for k in said.kinds if "CUDA" in k] == []
    # (xpbd collides the hydroelastic block with its own contacts: the stiffness is said unread, for the block only)
    assert [paths for k, paths in said.kinds.items() if "newton:hydroelasticStiffness" in k] == [["/Block"]]
    ours = made["nb"]
    theirs = newton.ModelBuilder()
    theirs.add_usd(stage)
    lists = ("shape_sdf_max_resolution", "shape_sdf_target_voxel_size", "shape_sdf_narrow_band_range",
             "shape_sdf_texture_format", "shape_sdf_padding", "shape_material_kh")  # fmt: skip
    for label in ("/Block", "/Table"):
        i, j = ours.shape_label.index(label), theirs.shape_label.index(label)
        for name in lists:
            a, b = getattr(ours, name)[i], getattr(theirs, name)[j]
            assert a == b if a is None or isinstance(a, str) else a == pytest.approx(b), (label, name, a, b)
        hydro = int(newton.ShapeFlags.HYDROELASTIC)
        assert bool(ours.shape_flags[i] & hydro) == bool(theirs.shape_flags[j] & hydro) == (label == "/Block")


# ---------------------------------------------------------------- bad values: one line, naming prim and attribute
@pytest.mark.parametrize(
    ("attribute", "type_name", "value", "said"),
    [
        ("newton:sdfMaxResolution", Sdf.ValueTypeNames.Int, -8, "multiple of 8"),
        ("newton:sdfMaxResolution", Sdf.ValueTypeNames.Int, 12, "multiple of 8"),
        ("newton:sdfTargetVoxelSize", Sdf.ValueTypeNames.Float, -0.01, "> 0"),
        ("newton:sdfNarrowBandInner", Sdf.ValueTypeNames.Float, 0.01, "< 0"),
        ("newton:sdfNarrowBandOuter", Sdf.ValueTypeNames.Float, -0.01, "> 0"),
        ("newton:sdfPadding", Sdf.ValueTypeNames.Float, -0.01, ">= 0"),
        ("newton:hydroelasticStiffness", Sdf.ValueTypeNames.Float, -1.0e9, "> 0"),
        ("newton:sdfTextureFormat", Sdf.ValueTypeNames.Token, "half", "allowed values"),
    ],
)
def test_a_bad_value_is_one_line_naming_prim_and_attribute(tmp_path, capsys, attribute, type_name, value, said):
    path = tmp_path / "bad.usda"
    sdf_stage(path, block={attribute: (type_name, value)})
    with pytest.raises(UsdInputError) as e:
        imported(Usd.Stage.Open(str(path)))
    assert e.value.prim == "/Block" and e.value.attribute == attribute and said in str(e.value)
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("usdsim: error:")]
    assert len(errors) == 1 and "Traceback" not in err, err
    assert f"/Block.{attribute}: " in errors[0] and said in errors[0], err


# ---------------------------------------------------------------- runs: what each engine does, said once
def _said(caplog, text):
    return [r.getMessage() for r in caplog.records if text in r.getMessage()]


def _block_z(out, frame):
    stage = Usd.Stage.Open(str(out))  # (kept: a prim does not keep its stage open)
    prim = stage.GetPrimAtPath("/Block")
    return UsdGeom.Xformable(prim).ComputeLocalToWorldTransform(frame).ExtractTranslation()[2]


def test_under_mujoco_the_meshes_collide_as_meshes_and_a_run_says_so_once(tmp_path, caplog):
    path = tmp_path / "s.usda"
    sdf_stage(path)
    with caplog.at_level(logging.WARNING, logger="newton_usd"):
        assert main([str(path), "-q", "-n", "20", "--solver", "mujoco"]) == 0
    text = message("NewtonSDFCollisionAPI", "mujoco")
    assert "honored by the xpbd, featherstone, semi_implicit, kamino, vbd solvers" in text
    lines = _said(caplog, text)
    assert len(lines) == 1 and "/Block" in lines[0] and "/Table" in lines[0], caplog.text
    assert abs(_block_z(tmp_path / "s.sim.usda", 20) - (TABLE_TOP + BLOCK_HALF)) < 2e-3  # (on the table's hull)


def test_what_is_not_used_is_said(tmp_path, capsys):
    """The field is built from the mesh: an authored approximation is not used; on a Cube the schema is not used."""
    path = tmp_path / "s.usda"
    stage = sdf_stage(path)
    UsdPhysics.MeshCollisionAPI.Apply(stage.GetPrimAtPath("/Block")).CreateApproximationAttr("convexDecomposition")
    cube = UsdGeom.Cube.Define(stage, "/Crate")
    cube.AddTranslateOp().Set(Gf.Vec3d(1, 0, 0.5))
    assert cube.GetPrim().ApplyAPI("NewtonSDFCollisionAPI")
    stage.Save()
    assert main(["check", str(path)]) == 0
    out = capsys.readouterr().out
    assert (
        "physics:approximation is not used on a NewtonSDFCollisionAPI collider: it collides as its mesh: /Block" in out
    )
    assert "NewtonSDFCollisionAPI is honored on mesh colliders only: this collider collides as its shape: /Crate" in out
    model, sdf = imported(Usd.Stage.Open(str(path)))
    assert sdf["/Crate"] is None and sdf["/Block"] is not None
    assert "/Block:part1" not in model.shape_label  # (one shape: not CoACD's parts)


def test_the_table_names_newtons_solvers():
    assert set(HONORED["NewtonSDFCollisionAPI"].engines) == {"xpbd", "featherstone", "semi_implicit", "kamino", "vbd"}


def test_on_the_cpu_newtons_solvers_collide_the_meshes_and_say_so_once(tmp_path, caplog):
    """Newton 1.8 refuses to build an SDF on the CPU (its own run of this stage stops at finalize); ours runs the
    meshes as triangle meshes there, and says so once, naming both prims."""
    path = tmp_path / "s.usda"
    sdf_stage(path)
    theirs = newton.ModelBuilder()
    theirs.add_usd(Usd.Stage.Open(str(path)))
    with pytest.raises(ValueError, match="CUDA"):
        theirs.finalize("cpu")
    with caplog.at_level(logging.WARNING, logger="newton_usd"):
        assert main([str(path), "-q", "-n", "20", "--solver", "xpbd", "--device", "cpu"]) == 0
    lines = _said(caplog, "NewtonSDFCollisionAPI needs a CUDA device")
    assert len(lines) == 1 and "/Block" in lines[0] and "/Table" in lines[0], caplog.text
    assert not _said(caplog, "NewtonSDFCollisionAPI is not honored")
    assert abs(_block_z(tmp_path / "s.sim.usda", 20) - (TABLE_TOP + BLOCK_HALF)) < 2e-3


# ---------------------------------------------------------------- on CUDA: as Newton's own run rests it
@pytest.mark.gpu
@pytest.mark.parametrize("hydroelastic", (False, True))
def test_the_block_rests_as_newtons_own_run_rests_it(tmp_path, caplog, hydroelastic):
    """Our xpbd run of the stage and Newton's (``ModelBuilder.add_usd``, SolverXPBD, its CollisionPipeline, the
    same step) leave the block at the same height on the table, through SDF contacts (hydroelastic ones where both
    meshes enable them)."""
    solver = "xpbd"
    from newton_usd import Simulation  # noqa: PLC0415

    on = {"newton:hydroelasticEnabled": (Sdf.ValueTypeNames.Bool, True)} if hydroelastic else {}
    coarse = {"newton:sdfMaxResolution": (Sdf.ValueTypeNames.Int, 16), **on}
    path = tmp_path / "s.usda"
    sdf_stage(path, block=coarse, table=coarse)
    frames = 30
    with caplog.at_level(logging.WARNING, logger="newton_usd"):
        sim = Simulation.open(str(path), solver=solver, live=False, device="cuda")
    assert not _said(caplog, "NewtonSDFCollisionAPI needs a CUDA device")
    nm = sim.solver.newton_model
    block = nm.shape_label.index("/Block")
    assert nm._shape_sdf_index.numpy()[block] >= 0  # (an SDF was built for it)
    dt, steps = sim.dt, sim.substeps * frames
    sim.run(frames)
    ours = float(sim.state.body_q.numpy()[0, 2])
    sim.close()

    builder = newton.ModelBuilder()
    builder.add_usd(Usd.Stage.Open(str(path)))
    model = builder.finalize("cuda")
    pipeline = newton.CollisionPipeline(model)
    contacts = pipeline.contacts()
    newton_solver = newton.solvers.SolverXPBD(model)
    s0, s1, control = model.state(), model.state(), model.control()
    for _ in range(steps):
        s0.clear_forces()
        pipeline.collide(s0, contacts)
        newton_solver.step(s0, s1, control, contacts, dt)
        s0, s1 = s1, s0
    wp.synchronize()
    theirs = float(s0.body_q.numpy()[0, 2])
    assert abs(theirs - (TABLE_TOP + BLOCK_HALF)) < 5e-3, theirs  # (Newton's own run rests it on the table)
    assert abs(ours - theirs) < 1e-3, (ours, theirs)
    assert np.isfinite(ours)

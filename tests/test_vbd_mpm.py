"""Grains and a soft volume in one PhysicsScene: the vbd_mpm engine (solvers/newton/vbd_mpm.py), Newton's VBD + MPM
proxy coupling, run as Newton 1.8's own coupled loop runs the same stage; the soft body rests on the grains and
presses them."""

from __future__ import annotations

import newton
import numpy as np
import pytest
import warp as wp
from newton.solvers.experimental.coupled import SolverCoupledProxy
from pxr import Gf, Sdf, Usd, UsdGeom, UsdShade
from test_deformables import block
from test_granular import sand_stage

from newton_usd.errors import NewtonUsdError
from newton_usd.sim import Simulation

FPS, SUBSTEPS, ITERATIONS, FRAMES = 30, 2, 10, 7
SOFT = "/World/Soft"


def sand_and_soft(path, soft=True, x=0.0):
    """test_granular's block of 6 x 6 x 4 grains (5 cm) on the ground, owned by an MPM scene (10 cm voxels), and a
    0.2 m soft cube (27 points, 48 tetrahedra, E 50 kPa, 400 kg/m^3) owned by that scene too, its bottom 0.35 m up,
    centred over ``x`` (m)."""
    path = str(sand_stage(path, layers=4))
    if soft:
        stage = Usd.Stage.Open(path)
        points, tets = block(cells=2, size=0.2)
        mesh = UsdGeom.TetMesh.Define(stage, SOFT)
        mesh.CreatePointsAttr([Gf.Vec3f(*p) for p in points])
        mesh.CreateTetVertexIndicesAttr([Gf.Vec4i(*map(int, t)) for t in tets])
        mesh.AddTranslateOp().Set(Gf.Vec3d(x - 0.1, -0.1, 0.35))
        prim = mesh.GetPrim()
        for api in ("PhysicsDeformableBodyAPI", "PhysicsVolumeDeformableSimAPI"):
            prim.AddAppliedSchema(api)
        material = UsdShade.Material.Define(stage, "/World/Rubber").GetPrim()
        material.AddAppliedSchema("PhysicsVolumeDeformableMaterialAPI")
        for name, value in (("youngsModulus", 5.0e4), ("poissonsRatio", 0.3), ("density", 400.0)):
            material.CreateAttribute(f"physics:{name}", Sdf.ValueTypeNames.Float).Set(value)
        UsdShade.MaterialBindingAPI.Apply(prim)
        prim.CreateRelationship("material:binding:physics").SetTargets([material.GetPath()])
        stage.GetRootLayer().Save()
    return path


def newton_coupled_run(path, steps):
    """Newton 1.8's own loop, as its example_vbd_mpm_coupled_solver: add_usd (the MPM attributes registered), the MPM
    Config from the scene (``create_from_usd``), SolverCoupledProxy of SolverVBD owning the soft body's particles and
    SolverImplicitMPM the grains, the soft particles MPM's proxies (lagged), the soft body's surface triangles a mesh
    collider of the MPM step beside the static colliders (margin 0, friction 0.5); collide, step, swap."""
    builder = newton.ModelBuilder()
    newton.solvers.SolverImplicitMPM.register_custom_attributes(builder)
    stage = Usd.Stage.Open(str(path))
    result = builder.add_usd(stage)
    config = newton.solvers.SolverImplicitMPM.Config.create_from_usd(stage.GetPrimAtPath(result["particle_scene_path"]))
    builder.color(include_bending=True)
    model = builder.finalize(device="cpu")
    tris = model.tri_indices.numpy()
    soft = list(range(int(tris.min()), model.particle_count))  # (the soft body's particles: after the grains)
    grains = list(range(soft[0]))
    solver = SolverCoupledProxy(
        model,
        [
            SolverCoupledProxy.Entry(
                name="vbd", solver=lambda v: newton.solvers.SolverVBD(v, iterations=ITERATIONS), particles=soft
            ),
            SolverCoupledProxy.Entry(
                name="mpm", solver=lambda v: newton.solvers.SolverImplicitMPM(v, config), particles=grains
            ),
        ],
        SolverCoupledProxy.Config([SolverCoupledProxy.Proxy(source="vbd", destination="mpm", particles=soft)], 1),
    )
    mesh = wp.Mesh(
        points=wp.array(model.particle_q.numpy()[soft], dtype=wp.vec3),
        indices=wp.array((tris - soft[0]).reshape(-1), dtype=wp.int32),
        velocities=wp.zeros(len(soft), dtype=wp.vec3),
    )
    solver.solver("mpm").setup_collider(
        collider_meshes=[mesh, None],
        collider_body_ids=[None, -1],
        collider_margins=[0.0, None],
        collider_friction=[0.5, None],
        collider_particle_ids=[soft, None],
        model=solver.view("mpm"),
    )
    pipeline = newton.CollisionPipeline(model)
    contacts = pipeline.contacts()
    s0, s1, control = model.state(), model.state(), model.control()
    for _ in range(steps):
        s0.clear_forces()
        pipeline.collide(s0, contacts)
        solver.step(s0, s1, control, contacts, 1.0 / (FPS * SUBSTEPS))
        s0, s1 = s1, s0
    return s0.particle_q.numpy()


def our_run(path, frames=FRAMES, options=None, **kw):
    options = {"iterations": ITERATIONS} if options is None else options
    sim = Simulation.open(path, fps=FPS, substeps=SUBSTEPS, solver_options=options, **kw)
    for _ in range(frames):
        sim.step_frame()
    return sim, sim.physics.state.particle_q.numpy()


def test_grains_and_a_soft_body_run_coupled_as_newton_runs_them(tmp_path):
    """As Newton's loop while the cube lands (7 frames: 5e-5 m seen; the first frame 6e-8 m, the import's float
    differences, which MPM's iterative contact solve then grows: 1.4e-3 m at 10 frames, 8e-3 m at 20), then at rest
    on the grains, pressing those under it."""
    path = sand_and_soft(tmp_path / "sand_and_soft.usda")
    sim, ours = our_run(path)
    assert type(sim.solver).__name__ == "SolverVBDMPM"
    assert type(sim.solver.newton_solver).__name__ == "SolverCoupledProxy"
    np.testing.assert_allclose(ours, newton_coupled_run(path, FRAMES * SUBSTEPS), atol=1e-4)
    for _ in range(8):
        sim.step_frame()
    q = sim.physics.state.particle_q.numpy()
    first, end = sim.model.particle_groups[SOFT]
    soft, grains = q[first:end], q[:first]
    assert soft[:, 2].min() > grains[:, 2].max() - 0.05  # (resting on the grains, not sunk to the floor)
    # the grains feel it: those under the cube pressed lower than with the cube dropped 1 m aside, on the floor
    _, aside = our_run(sand_and_soft(tmp_path / "aside.usda", x=1.0), FRAMES + 8)
    alone = aside[:first]
    under = (np.abs(grains[:, 0]) < 0.1) & (np.abs(grains[:, 1]) < 0.1)
    assert grains[under, 2].max() < alone[under, 2].max() - 0.005


def test_a_reset_starts_it_over(tmp_path):
    sim, first = our_run(sand_and_soft(tmp_path / "r.usda"), 4)
    sim.reset()
    for _ in range(4):
        sim.step_frame()
    np.testing.assert_array_equal(sim.physics.state.particle_q.numpy(), first)


@pytest.mark.parametrize("solver", ["mujoco", "xpbd", "featherstone"])
def test_other_engines_are_refused_naming_the_grains_and_the_soft_body(tmp_path, solver):
    with pytest.raises(NewtonUsdError) as e:
        Simulation.open(sand_and_soft(tmp_path / "s.usda"), solver=solver)
    said = str(e.value)
    assert "\n" not in said and f"/World/Pile, {SOFT}: grains and deformable bodies in one PhysicsScene" in said


def test_contact_forces_can_be_asked_for(tmp_path):
    """SolverVBD's contact forces are computed once asked (a contact view, update_contacts): vbd_mpm, built past
    SolverVBD's constructor, takes the same request (it raised AttributeError)."""
    sim = Simulation.open(sand_and_soft(tmp_path / "s.usda"), fps=FPS, substeps=SUBSTEPS, device="cpu")
    assert type(sim.solver).__name__ == "SolverVBDMPM"
    sim.solver.want_contact_forces()
    sim.step_frame()
    sim.close()

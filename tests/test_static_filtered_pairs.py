"""FilteredPairsAPI between a body and a static collider: the two never touch, the rest still does."""

import numpy as np
import pytest
from pxr import Gf, Sdf, UsdGeom, UsdPhysics

from newton_usd import ModelBuilder
from newton_usd.solvers import SolverMuJoCo

from stages import add_box, add_ground, new_stage


def shelf_stage(filter_on):
    """Two 0.2 m cubes dropped onto a static 1 m shelf whose top is at 0.7 m, above the ground: the
    first is filtered against the shelf (FilteredPairsAPI on ``filter_on``: "body" or "shelf")."""
    stage = new_stage()
    add_ground(stage)
    shelf = UsdGeom.Cube.Define(stage, "/Shelf")
    shelf.CreateSizeAttr(1.0)
    shelf.AddTranslateOp().Set(Gf.Vec3d(0, 0, 0.2))
    UsdPhysics.CollisionAPI.Apply(shelf.GetPrim())
    add_box(stage, "/Ghost", 0.2, (-0.2, 0, 1.2), mass=1.0)
    add_box(stage, "/Plain", 0.2, (0.2, 0, 1.2), mass=1.0)
    holder, target = ("/Ghost", "/Shelf") if filter_on == "body" else ("/Shelf", "/Ghost")
    UsdPhysics.FilteredPairsAPI.Apply(stage.GetPrimAtPath(holder)).CreateFilteredPairsRel().SetTargets(
        [Sdf.Path(target)]
    )
    return stage


@pytest.mark.parametrize("filter_on", ["body", "shelf"])
def test_filtered_body_passes_through_the_static_box_and_rests_on_the_ground(filter_on):
    builder = ModelBuilder()
    imported = builder.add_usd(shelf_stage(filter_on))
    assert not [k for k in imported.diagnostics.kinds if "filtered" in k]  # simulated, not warned
    model = builder.finalize("cpu")
    solver = SolverMuJoCo(model, backend="cpu")
    s0, s1, control = model.state(), model.state(), model.control()
    for _ in range(int(2.0 * 480)):
        solver.step(s0, s1, control, None, 1.0 / 480.0)
        s0, s1 = s1, s0
    z = dict(zip(model.body_label, s0.body_q.numpy()[:, 2].tolist(), strict=True))
    assert z["/Ghost"] == pytest.approx(0.1, abs=0.01)  # through the shelf, onto the ground
    assert z["/Plain"] == pytest.approx(0.8, abs=0.01)  # the other cube lands on the shelf
    assert np.isfinite(s0.body_q.numpy()).all()


def test_each_world_filters_its_own_copy():
    """A builder replicated into worlds: every world's body passes through its own copy of the shelf."""
    b = ModelBuilder()
    ghost = b.add_body(((0.0, 0.0, 1.2), (0, 0, 0, 1)), label="/e0/ghost")
    b.add_shape_box(ghost, hx=0.1, hy=0.1, hz=0.1, density=1000.0, label="/e0/ghost")
    b.add_joint_free(ghost, label="/e0/ghost")
    shelf = b.add_shape_box(-1, ((0.0, 0.0, 0.2), (0, 0, 0, 1)), hx=0.5, hy=0.5, hz=0.5, label="/e0/shelf")
    b.add_shape_plane(label="/ground")
    b.body_shape_collision_filter_pairs.append((ghost, shelf))
    b.replicate(2)
    model = b.finalize("cpu")
    assert model.body_shape_collision_filter_pairs == [(0, shelf), (1, shelf + 3)]  # (3 shapes per world)
    solver = SolverMuJoCo(model, backend="cpu")
    s0, s1, control = model.state(), model.state(), model.control()
    for _ in range(int(2.0 * 480)):
        solver.step(s0, s1, control, None, 1.0 / 480.0)
        s0, s1 = s1, s0
    np.testing.assert_allclose(s0.body_q.numpy()[:, 2], [0.1, 0.1], atol=0.01)

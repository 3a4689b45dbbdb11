"""PhysX tendons (issue 43): PhysxSchema's fixed tendons (PhysxTendonAxisRootAPI, PhysxTendonAxisAPI) and spatial
tendons (PhysxTendonAttachmentRootAPI, PhysxTendonAttachmentAPI, PhysxTendonAttachmentLeafAPI) become MuJoCo
tendons; the Newton solvers say they do not simulate them. The stages author PhysxSchema's attributes by name (the
schema is not installed here), as a stage written by Isaac Sim holds them."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics
from test_newton_solvers import usdsim

from newton_usd import ModelBuilder
from newton_usd.cli import main
from newton_usd.solvers import SolverMuJoCo

from stages import add_hinge, new_stage

F = Sdf.ValueTypeNames
DT = 1.0 / 480.0
DEG = 180.0 / math.pi


def _api(prim, api, instance, **values):
    """Apply a PhysX tendon API instance to ``prim`` and author its ``physxTendon:<instance>:*`` values."""
    prim.AddAppliedSchema(f"{api}:{instance}")
    for name, value in values.items():
        if name == "parentLink":
            prim.CreateRelationship(f"physxTendon:{instance}:parentLink").SetTargets([Sdf.Path(value)])
            continue
        kind = {list: F.FloatArray, tuple: F.Float3, str: F.Token, bool: F.Bool}.get(type(value), F.Float)
        prim.CreateAttribute(f"physxTendon:{instance}:{name}", kind).Set(value)


def _link(stage, path, x, mass=1.0):
    """A 1 kg link at (x, 0, 1) whose COM is 0.5 m out along X (inertia about it 0.01 kg*m^2)."""
    body = UsdGeom.Xform.Define(stage, path)
    body.AddTranslateOp().Set(Gf.Vec3d(x, 0, 1))
    mass_api = UsdPhysics.MassAPI.Apply(body.GetPrim())
    UsdPhysics.RigidBodyAPI.Apply(body.GetPrim())
    mass_api.CreateMassAttr(mass)
    mass_api.CreateCenterOfMassAttr(Gf.Vec3f(0.5, 0, 0))
    mass_api.CreateDiagonalInertiaAttr(Gf.Vec3f(0.01, 0.01, 0.01))
    return body.GetPrim()


def _hinge(stage, path, body0, body1, local0, angle=None):
    """A hinge about Y from ``body0`` (None: the world) at ``local0`` to ``body1``'s origin; ``angle``: its start
    (PhysicsJointStateAPI, degrees)."""
    prim = add_hinge(stage, path, body0, body1, local0, (0, 0, 0)).GetPrim()
    if angle is not None:
        prim.AddAppliedSchema("PhysicsJointStateAPI:angular")
        prim.CreateAttribute("state:angular:physics:position", F.Float).Set(angle)
    return prim


def _side_by_side(stage, mjcf, steps, every, start=None):
    """Joint coordinates every ``every`` steps of ``steps``: ours (``stage`` through SolverMuJoCo) and native MuJoCo's
    (``mjcf``, its first joint started at ``start`` rad), as two arrays; and our import."""
    builder = ModelBuilder()
    imported = builder.add_usd(stage)
    model = builder.finalize("cpu")
    solver = SolverMuJoCo(model, backend="cpu")
    native = mujoco.MjModel.from_xml_string(mjcf)
    data = mujoco.MjData(native)
    if start is not None:
        data.qpos[0] = start
    s0, s1, control = model.state(), model.state(), model.control()
    ours, theirs = [], []
    for step in range(steps):
        solver.step(s0, s1, control, None, DT)
        s0, s1 = s1, s0
        mujoco.mj_step(native, data)
        if step % every == every - 1:
            ours.append(s0.joint_q.numpy()[: native.nq].copy())
            theirs.append(data.qpos.copy())
    return np.array(ours), np.array(theirs), imported, solver.mj_model, native


TENDON = dict(stiffness=0.05, damping=0.002, gearing=(1.0, -2.0), force=(1.0, 2.0), rest=3.0, offset=1.0)
"""The coupled chain's tendon: PhysX's gearing per degree, its force coefficients in m (the same multiple of the
gearing on both axes), stiffness N/m, damping N*s/m, rest length and offset m."""


def _chain(path=None):
    """Two 1 kg links hinged about Y in a row, the first to the world at (0, 0, 1), started 20 degrees up; a fixed
    tendon rooted at the first hinge couples them as PhysX's gearing says."""
    stage = new_stage(path)
    _link(stage, "/Link1", 0.0)
    _link(stage, "/Link2", 1.0)
    root = _hinge(stage, "/Hinge1", None, "/Link1", (0, 0, 1), angle=20.0)
    axis = _hinge(stage, "/Hinge2", "/Link1", "/Link2", (1, 0, 0))
    t = TENDON
    _api(root, "PhysxTendonAxisRootAPI", "Couple", stiffness=t["stiffness"], damping=t["damping"],
         restLength=t["rest"], offset=t["offset"], gearing=[t["gearing"][0]],
         forceCoefficient=[t["force"][0]])  # fmt: skip
    _api(axis, "PhysxTendonAxisAPI", "Couple", gearing=[t["gearing"][1]], forceCoefficient=[t["force"][1]])
    if path:
        stage.Save()
    return stage


def _chain_mjcf():
    """The same chain and tendon in MJCF, as the mapping says: coefficients the gearings per radian, stiffness and
    damping PhysX's times forceCoefficient / |coefficient|, spring length the rest length less the offset."""
    t = TENDON
    coef = [g * DEG for g in t["gearing"]]
    scale = t["force"][0] / abs(coef[0])
    stiffness, damping, length = t["stiffness"] * scale, t["damping"] * scale, t["rest"] - t["offset"]
    return f"""<mujoco><option timestep="{DT}" integrator="implicitfast"/><worldbody>
      <body name="Link1" pos="0 0 1"><joint name="Hinge1" type="hinge" axis="0 1 0"/>
        <inertial pos="0.5 0 0" mass="1" diaginertia="0.01 0.01 0.01"/>
        <body name="Link2" pos="1 0 0"><joint name="Hinge2" type="hinge" axis="0 1 0"/>
          <inertial pos="0.5 0 0" mass="1" diaginertia="0.01 0.01 0.01"/></body></body></worldbody>
      <tendon><fixed name="Couple" stiffness="{stiffness}" damping="{damping}" springlength="{length}">
        <joint joint="Hinge1" coef="{coef[0]}"/><joint joint="Hinge2" coef="{coef[1]}"/></fixed></tendon>
    </mujoco>"""


def test_a_fixed_tendon_couples_two_joints_as_the_same_tendon_in_mjcf():
    ours, theirs, imported, mj, native = _side_by_side(_chain(), _chain_mjcf(), 480, 48, math.radians(20.0))
    assert not [k for k in imported.diagnostics.kinds if "tendon" in k], imported.diagnostics.kinds
    assert np.ptp(theirs[:, 1]) > 0.1  # (the tendon moves the second joint)
    np.testing.assert_allclose(ours, theirs, atol=2e-4)
    np.testing.assert_allclose(mj.tendon_lengthspring, native.tendon_lengthspring)


def test_physx_fixed_tendon_holds_a_link_at_its_deflection(tmp_path):
    """PhysX's own test (omni.physx PhysxFixedTendon): a 5 cm link on a hinge of a fixed base, in a centimeter
    stage with gravity 1000 cm/s^2, a one-axis tendon of stiffness gravity torque / 3.8 (per degree: gearing 1)
    holds it 3.8 degrees down; PhysX's test allows 2 degrees."""
    stage = new_stage(tmp_path / "deflect.usda", meters_per_unit=0.01)
    UsdPhysics.Scene.Get(stage, "/PhysicsScene").CreateGravityMagnitudeAttr(1000.0)
    density, length, width = 1000.0 * 0.01**3, 5.0, 0.5  # kg/cm^3, cm
    for name, y in (("Base", 0.0), ("Link", length)):
        cube = UsdGeom.Cube.Define(stage, f"/{name}")
        cube.CreateSizeAttr(1.0)
        cube.AddTranslateOp().Set(Gf.Vec3d(0, y, 0))
        cube.AddScaleOp().Set(Gf.Vec3f(width, length, width))
        UsdPhysics.RigidBodyAPI.Apply(cube.GetPrim())
        UsdPhysics.CollisionAPI.Apply(cube.GetPrim())
        UsdPhysics.MassAPI.Apply(cube.GetPrim()).CreateDensityAttr(density)
    UsdPhysics.FixedJoint.Define(stage, "/Fixed").CreateBody1Rel().SetTargets([Sdf.Path("/Base")])
    hinge = UsdPhysics.RevoluteJoint.Define(stage, "/Link/Hinge")
    hinge.CreateBody0Rel().SetTargets([Sdf.Path("/Base")])
    hinge.CreateBody1Rel().SetTargets([Sdf.Path("/Link")])
    hinge.CreateAxisAttr("X")
    hinge.CreateLowerLimitAttr(-10.0)
    hinge.CreateUpperLimitAttr(20.0)
    hinge.CreateLocalPos0Attr(Gf.Vec3f(0, 0.5, 0))
    hinge.CreateLocalPos1Attr(Gf.Vec3f(0, -0.5, 0))
    mass = density * length * width * width
    spring = 1000.0 * length * mass * 0.5 / 3.8  # gravity torque per degree of deflection
    _api(hinge.GetPrim(), "PhysxTendonAxisRootAPI", "t1", stiffness=spring, damping=0.1 * spring, restLength=0.0,
         gearing=[1.0], forceCoefficient=[1.0])  # fmt: skip
    stage.Save()
    assert usdsim(tmp_path / "deflect.usda", "-n", 60, "--write-joint-states") == 0
    out = Usd.Stage.Open(str(tmp_path / "deflect.sim.usda"))
    angle = out.GetPrimAtPath("/Link/Hinge").GetAttribute("state:angular:physics:position").Get(60)
    assert abs(angle) == pytest.approx(3.8, abs=0.2), angle


def _spatial(path=None, gearing=1.0):
    """A link hinged to the world at (0, 0, 1), held up by a spatial tendon from an anchor link fixed 1 m above the
    hinge, over an attachment on the link's middle, to its tip; the tendon is 0.2 m shorter at rest than at the
    start."""
    stage = new_stage(path)
    anchor = UsdGeom.Xform.Define(stage, "/Anchor")
    anchor.AddTranslateOp().Set(Gf.Vec3d(0, 0, 2))
    UsdPhysics.RigidBodyAPI.Apply(anchor.GetPrim())
    UsdPhysics.MassAPI.Apply(anchor.GetPrim()).CreateMassAttr(1.0)
    weld = UsdPhysics.FixedJoint.Define(stage, "/Weld")
    weld.CreateBody1Rel().SetTargets([Sdf.Path("/Anchor")])
    weld.CreateLocalPos0Attr(Gf.Vec3f(0, 0, 2))
    link = _link(stage, "/Link", 0.0)
    _hinge(stage, "/Hinge", None, "/Link", (0, 0, 1))
    _api(anchor.GetPrim(), "PhysxTendonAttachmentRootAPI", "Cable", stiffness=200.0, damping=20.0,
         localPos=(0.0, 0.0, 0.0))  # fmt: skip
    _api(link, "PhysxTendonAttachmentAPI", "Mid", parentLink="/Anchor", parentAttachment="Cable",
         localPos=(0.5, 0.0, 0.0), gearing=gearing)  # fmt: skip
    start = math.sqrt(0.5**2 + 1.0) * gearing + 0.5
    _api(link, "PhysxTendonAttachmentLeafAPI", "Tip", parentLink="/Link", parentAttachment="Mid",
         localPos=(1.0, 0.0, 0.0), restLength=start - 0.2)  # fmt: skip
    if path:
        stage.Save()
    return stage


def _spatial_mjcf(gearing=1.0):
    start = math.sqrt(0.5**2 + 1.0) * gearing + 0.5
    path = (f'<pulley divisor="{1 / gearing}"/><site site="anchor"/><site site="mid"/>'
            '<pulley divisor="1"/><site site="mid"/><site site="tip"/>' if gearing != 1.0 else
            '<site site="anchor"/><site site="mid"/><site site="tip"/>')  # fmt: skip
    return f"""<mujoco><option timestep="{DT}" integrator="implicitfast"/><worldbody>
      <body name="Anchor" pos="0 0 2"><inertial pos="0 0 0" mass="1" diaginertia="1e-4 1e-4 1e-4"/>
        <site name="anchor"/></body>
      <body name="Link" pos="0 0 1"><joint name="Hinge" type="hinge" axis="0 1 0"/>
        <inertial pos="0.5 0 0" mass="1" diaginertia="0.01 0.01 0.01"/>
        <site name="mid" pos="0.5 0 0"/><site name="tip" pos="1 0 0"/></body></worldbody>
      <tendon><spatial name="Tip" stiffness="200" damping="20" springlength="{start - 0.2}">{path}</spatial></tendon>
    </mujoco>"""


@pytest.mark.parametrize("gearing", [1.0, 2.0])
def test_a_spatial_tendon_pulls_as_the_same_tendon_in_mjcf(gearing):
    ours, theirs, *_ = _side_by_side(_spatial(gearing=gearing), _spatial_mjcf(gearing), 240, 24)
    assert np.ptp(theirs) > 0.05  # (lifted by the tendon)
    np.testing.assert_allclose(ours, theirs, atol=2e-4)


def test_newton_solvers_say_they_do_not_simulate_physx_tendons(tmp_path, capsys):
    _chain(tmp_path / "chain.usda")
    assert main(["check", str(tmp_path / "chain.usda"), "--solver", "xpbd"]) == 0
    out = capsys.readouterr().out
    assert "tendons are not simulated by the xpbd solver: /Hinge1.physxTendon:Couple" in out, out
    assert "every authored value is used" in out, out  # (the tendon's attributes are read)
    assert main(["explain", str(tmp_path / "chain.usda"), "/Hinge2"]) == 0
    out = capsys.readouterr().out
    assert "physxTendon:Couple:gearing" in out and "physxTendon:Couple:forceCoefficient" in out, out
    assert usdsim(tmp_path / "chain.usda", "--solver", "xpbd", "-n", 2) == 0


def test_tendon_attachments_whose_parent_is_missing_are_said(tmp_path, capsys):
    stage = _spatial()
    link = stage.GetPrimAtPath("/Link")
    link.GetAttribute("physxTendon:Tip:parentAttachment").Set("Nowhere")
    stage.Export(str(tmp_path / "broken.usda"))
    assert main(["check", str(tmp_path / "broken.usda")]) == 0
    out = capsys.readouterr().out
    assert "PhysX spatial tendon leaves not joined to a root attachment" in out and "/Link.physxTendon:Tip" in out


def test_tendon_limits_without_a_limit_stiffness_are_said_to_exert_no_force(tmp_path, capsys):
    """PhysX's FixedTendonTest.usda: limits of +-0.001 and no ``limitStiffness`` (its fallback 0: PhysX's limit is a
    spring of that stiffness), stiffness 0, gearings of two ratios to their force coefficients: a tendon without force
    (said once), whose unequal ratios pull nothing (not said)."""
    stage = new_stage()
    _link(stage, "/Link1", 0.0)
    _link(stage, "/Link2", 1.0)
    root = _hinge(stage, "/Hinge1", None, "/Link1", (0, 0, 1))
    axis = _hinge(stage, "/Hinge2", "/Link1", "/Link2", (1, 0, 0))
    _api(root, "PhysxTendonAxisRootAPI", "t", stiffness=0.0, lowerLimit=-0.001, upperLimit=0.001, gearing=[-0.00805])
    _api(axis, "PhysxTendonAxisAPI", "t", gearing=[0.00705])
    stage.Export(str(tmp_path / "limits.usda"))
    assert main(["check", str(tmp_path / "limits.usda")]) == 0
    out = capsys.readouterr().out
    assert "PhysX tendon limits without a limit stiffness" in out and "/Hinge1.physxTendon:t" in out, out
    assert "forceCoefficient is not one multiple" not in out, out

"""The codeless newton:*, newton:usd:* and mjc:* schemas: found, with upstream's fallbacks, current.

USD's schema registry is built once per process, so every check runs in a fresh subprocess.
"""

import json
import math
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import REPO

NEWTON_TYPED = ["NewtonActuator"]
NEWTON_ACTUATOR_APIS = [
    "NewtonActuatorDelayAPI",
    "NewtonActuatorControlBaseAPI",
    "NewtonPDControlAPI",
    "NewtonPIDControlAPI",
    "NewtonNeuralControlAPI",
    "NewtonActuatorClampingBaseAPI",
    "NewtonMaxEffortClampingAPI",
    "NewtonDCMotorClampingAPI",
    "NewtonPositionBasedClampingAPI",
]
NEWTON_APIS = [
    "NewtonSceneAPI",
    "NewtonXpbdSceneAPI",
    "NewtonKaminoSceneAPI",
    "NewtonVbdSceneAPI",
    "NewtonMPMSceneAPI",
    "NewtonArticulationRootAPI",
    "NewtonJointAPI",
    "NewtonMimicAPI",
    "NewtonMassAPI",
    "NewtonCollisionAPI",
    "NewtonMeshCollisionAPI",
    "NewtonSDFCollisionAPI",
    "NewtonSiteAPI",
    "NewtonPointsDeformableSimAPI",
    "NewtonMaterialAPI",
    "NewtonMPMMaterialAPI",
    "NewtonCurvesDeformableMaterialAPI",
] + NEWTON_ACTUATOR_APIS
NEWTON = NEWTON_APIS + NEWTON_TYPED  # every class of newton-usd-schemas 0.6.0 (tests/test_upstream_schemas.py)
NEWTON_USD = ["NewtonUsdSceneAPI"]
MJC_TYPED = ["MjcActuator", "MjcTendon", "MjcKeyframe"]
MJC = [
    "MjcSceneAPI",
    "MjcSiteAPI",
    "MjcImageableAPI",
    "MjcCollisionAPI",
    "MjcMeshCollisionAPI",
    "MjcJointAPI",
    "MjcMaterialAPI",
    "MjcEqualityAPI",
    "MjcEqualityConnectAPI",
    "MjcEqualityWeldAPI",
    "MjcEqualityJointAPI",
] + MJC_TYPED
ALL = NEWTON + NEWTON_USD + MJC

# (schema, attribute): (type, uniform?, fallback), as upstream declares them.
FALLBACKS = {
    ("NewtonSceneAPI", "newton:timeStepsPerSecond"): ("int", True, 1000),
    ("NewtonSceneAPI", "newton:maxSolverIterations"): ("int", True, -1),
    ("NewtonSceneAPI", "newton:gravityEnabled"): ("bool", False, True),
    ("NewtonJointAPI", "newton:armature"): ("float", False, 0.0),
    ("NewtonJointAPI", "newton:velocityLimit"): ("float", False, math.inf),
    ("NewtonJointAPI", "newton:limitStiffness"): ("float", False, -math.inf),
    ("NewtonMassAPI", "newton:massModel"): ("token", True, "solid"),
    ("NewtonMeshCollisionAPI", "newton:maxHullVertices"): ("int", True, -1),
    ("NewtonMaterialAPI", "newton:torsionalFriction"): ("float", False, 0.005),
    ("NewtonMimicAPI", "newton:mimicCoef1"): ("float", False, 1.0),
    ("NewtonXpbdSceneAPI", "newton:xpbd:jointAngularRelaxation"): ("float", True, 0.4),
    ("NewtonKaminoSceneAPI", "newton:kamino:padmm:warmstarting"): ("token", True, "containers"),
    ("NewtonKaminoSceneAPI", "newton:maxSolverIterations"): ("int", True, -1),  # (built-in NewtonSceneAPI)
    ("NewtonVbdSceneAPI", "newton:vbd:rigid:jointAngularStiffness"): ("float", True, 1.0e5),
    ("NewtonMPMSceneAPI", "newton:mpm:voxelSize"): ("float", True, -math.inf),
    ("NewtonMPMMaterialAPI", "newton:mpm:poissonsRatio"): ("float", False, 0.3),
    ("NewtonSDFCollisionAPI", "newton:sdfMaxResolution"): ("int", True, 64),
    ("NewtonSDFCollisionAPI", "newton:hydroelasticStiffness"): ("float", False, 1.0e10),
    ("NewtonSDFCollisionAPI", "newton:contactGap"): ("float", False, -math.inf),  # (built-in NewtonCollisionAPI)
    ("NewtonCurvesDeformableMaterialAPI", "newton:curvesBendDamping"): ("float", False, -math.inf),
    ("NewtonPointsDeformableSimAPI", "physics:masses"): ("float[]", False, None),
    ("NewtonActuatorDelayAPI", "newton:delaySteps"): ("int", False, 1),
    ("NewtonPIDControlAPI", "newton:integralMax"): ("float", False, math.inf),
    ("NewtonPIDControlAPI", "newton:kp"): ("float", False, 0.0),
    ("NewtonDCMotorClampingAPI", "newton:velocityLimit"): ("float", False, math.inf),
    ("NewtonPositionBasedClampingAPI", "newton:lookupEfforts"): ("float[]", False, []),
    ("NewtonUsdSceneAPI", "newton:usd:solver"): ("token", True, "mujoco"),
    ("NewtonUsdSceneAPI", "newton:usd:mujocoBackend"): ("token", True, "auto"),
    ("NewtonUsdSceneAPI", "newton:usd:substeps"): ("int", True, 0),
    ("NewtonUsdSceneAPI", "newton:usd:framesPerSecond"): ("double", True, 0.0),
    ("NewtonUsdSceneAPI", "newton:usd:collideOnSubsteps"): ("bool", True, True),
    ("MjcSceneAPI", "mjc:option:integrator"): ("token", True, "euler"),
    ("MjcSceneAPI", "mjc:option:timestep"): ("double", True, 0.002),
    ("MjcSceneAPI", "mjc:option:o_solref"): ("double[]", True, [0.02, 1.0]),
    ("MjcSceneAPI", "mjc:option:magnetic"): ("double3", True, [0.0, -0.5, 0.0]),
    ("MjcSceneAPI", "mjc:compiler:angle"): ("token", True, "degree"),
    ("MjcCollisionAPI", "mjc:solref"): ("double[]", True, [0.02, 1.0]),
    ("MjcCollisionAPI", "mjc:solimp"): ("double[]", True, [0.9, 0.95, 0.001, 0.5, 2.0]),
    ("MjcCollisionAPI", "mjc:condim"): ("int", True, 3),
    ("MjcJointAPI", "mjc:armature"): ("double", True, 0.0),
    ("MjcJointAPI", "mjc:springdamper"): ("double[]", True, [0.0, 0.0]),
    ("MjcEqualityWeldAPI", "mjc:torqueScale"): ("float", True, 1.0),
    ("MjcActuator", "mjc:gear"): ("double[]", True, [1.0, 0, 0, 0, 0, 0]),
    ("MjcActuator", "mjc:dynType"): ("token", True, "none"),
    ("MjcTendon", "mjc:rgba"): ("color4f", True, [0.5, 0.5, 0.5, 1.0]),
    ("MjcTendon", "mjc:width"): ("double", True, 0.003),
    ("MjcKeyframe", "mjc:qpos"): ("double[]", False, None),
}

# Reads the registry and applies schemas to prims; prints one JSON object.
PROBE = textwrap.dedent(
    """
    import json, sys
    from pxr import Sdf, Tf, Usd
    names, fallbacks = json.loads(sys.argv[1])
    registry = Usd.SchemaRegistry()

    def plain(v):
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        return [float(x) for x in v]

    out = {"schemas": {}, "fallbacks": {}}
    for name in names:
        info = Usd.SchemaRegistry.FindSchemaInfo(name)
        out["schemas"][name] = info and {
            "type": info.type.typeName,
            "kind": str(info.kind),
            "canOnlyApplyTo": list(Usd.SchemaRegistry.GetAPISchemaCanOnlyApplyToTypeNames(name)),
            "plugin": __import__("pxr").Plug.Registry().GetPluginForType(info.type).resourcePath,
        }
    for schema, attr in fallbacks:
        d = registry.FindAppliedAPIPrimDefinition(schema) or registry.FindConcretePrimDefinition(schema)
        a = d and d.GetAttributeDefinition(attr)
        out["fallbacks"][schema + " " + attr] = a and [
            str(a.GetTypeName()), a.GetVariability() == Sdf.VariabilityUniform, plain(a.GetFallbackValue())]

    stage = Usd.Stage.CreateInMemory()
    scene = stage.DefinePrim("/Scene", "PhysicsScene")
    joint = stage.DefinePrim("/Joint", "PhysicsRevoluteJoint")
    mesh = stage.DefinePrim("/Mesh", "Mesh")
    xform = stage.DefinePrim("/Xform", "Xform")
    tendon = stage.DefinePrim("/Tendon", "MjcTendon")
    out["applied"] = {
        "scene": [scene.ApplyAPI("MjcSceneAPI"), scene.ApplyAPI("NewtonUsdSceneAPI")],
        "joint": joint.ApplyAPI("MjcJointAPI"),
        "mesh": mesh.ApplyAPI("MjcMeshCollisionAPI"),
    }
    out["scene"] = {n: plain(scene.GetAttribute(n).Get()) for n in [
        "mjc:option:timestep", "newton:timeStepsPerSecond", "newton:usd:substeps", "newton:usd:mujocoBackend"]}
    out["joint"] = {n: plain(joint.GetAttribute(n).Get()) for n in ["mjc:armature", "newton:armature"]}
    out["joint_fallback"] = joint.GetPrimDefinition().GetAttributeFallbackValue("mjc:solreflimit")
    out["joint_fallback"] = plain(out["joint_fallback"])
    out["mesh_schemas"] = list(mesh.GetAppliedSchemas())
    out["tendon"] = [tendon.IsA(Tf.Type.FindByName("MjcPhysicsTendon")), tendon.GetAttribute("mjc:width").Get()]
    actuator = stage.DefinePrim("/Actuator", "NewtonActuator")
    out["actuator"] = [actuator.ApplyAPI("NewtonPIDControlAPI"), actuator.ApplyAPI("NewtonMaxEffortClampingAPI"),
                       list(actuator.GetAppliedSchemas()), actuator.GetAttribute("newton:integralMax").Get(),
                       bool(xform.CanApplyAPI("NewtonPDControlAPI"))]
    out["can_apply"] = {
        "NewtonUsdSceneAPI on Xform": bool(xform.CanApplyAPI("NewtonUsdSceneAPI")),
        "NewtonUsdSceneAPI on PhysicsScene": bool(scene.CanApplyAPI("NewtonUsdSceneAPI")),
        "NewtonJointAPI on Xform": bool(xform.CanApplyAPI("NewtonJointAPI")),
    }
    print(json.dumps(out))
    """
)

REGISTER = textwrap.dedent(
    """
    import json, logging, sys
    logging.basicConfig(format="LOG %(levelname)s %(message)s")
    import newton_usd.usd.schemas as schemas
    result = schemas.register_schemas()
    assert schemas.register_schemas() == result
    print("REGISTERED " + json.dumps(result))
    """
)


def run_python(code, *args, env_extra=None, pluginpath=None, pythonpath=None):
    env = {k: v for k, v in os.environ.items() if k not in ("PXR_PLUGINPATH_NAME", "PYTHONPATH")}
    if pluginpath:
        env["PXR_PLUGINPATH_NAME"] = str(pluginpath)
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(str(p) for p in pythonpath)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=300)


def probe(prelude="", **kwargs):
    r = run_python(prelude + PROBE, json.dumps([ALL, list(FALLBACKS)]), **kwargs)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.splitlines()[-1]), r


def registered(r):
    line = next(line for line in r.stdout.splitlines() if line.startswith("REGISTERED "))
    return json.loads(line.removeprefix("REGISTERED "))


def assert_schemas_resolve(out):
    missing = [name for name, info in out["schemas"].items() if info is None]
    assert not missing, f"schemas not found: {missing}"
    schemas = out["schemas"]
    # The C++-style type names of upstream's plugInfo.json, so assets resolve the same with either plugin.
    assert schemas["NewtonSceneAPI"]["type"] == "NewtonPhysicsSceneAPI"
    assert schemas["MjcSceneAPI"]["type"] == "MjcPhysicsSceneAPI"
    assert schemas["MjcActuator"]["type"] == "MjcPhysicsActuator"
    assert schemas["NewtonUsdSceneAPI"]["type"] == "NewtonUsdSceneAPI"
    assert schemas["NewtonActuator"]["type"] == "NewtonPhysicsActuator"
    for name in MJC_TYPED + NEWTON_TYPED:
        assert schemas[name]["kind"] == "ConcreteTyped"
    for name in NEWTON_APIS + NEWTON_USD + MJC[:-3]:
        assert schemas[name]["kind"] == "SingleApplyAPI", name
    for name in NEWTON_ACTUATOR_APIS:
        assert schemas[name]["canOnlyApplyTo"] == ["NewtonActuator"], name
    assert schemas["NewtonSDFCollisionAPI"]["canOnlyApplyTo"] == ["Gprim"]
    assert schemas["NewtonPointsDeformableSimAPI"]["canOnlyApplyTo"] == ["Points"]
    assert schemas["NewtonJointAPI"]["canOnlyApplyTo"] == ["PhysicsJoint"]
    assert schemas["NewtonMeshCollisionAPI"]["canOnlyApplyTo"] == ["Mesh"]
    assert schemas["NewtonUsdSceneAPI"]["canOnlyApplyTo"] == ["PhysicsScene"]
    assert schemas["MjcJointAPI"]["canOnlyApplyTo"] == []

    for (schema, attr), (type_name, uniform, fallback) in FALLBACKS.items():
        got = out["fallbacks"][f"{schema} {attr}"]
        assert got is not None, f"{schema} has no {attr}"
        assert got[:2] == [type_name, uniform], f"{schema} {attr}: {got}"
        assert got[2] == pytest.approx(fallback) if fallback is not None else got[2] is None, f"{schema} {attr}: {got}"

    # Applied to prims, fallbacks come through the prim definition, built-in schemas included.
    assert out["applied"] == {"scene": [True, True], "joint": True, "mesh": True}
    assert out["scene"] == {
        "mjc:option:timestep": pytest.approx(0.002),
        "newton:timeStepsPerSecond": 1000,
        "newton:usd:substeps": 0,
        "newton:usd:mujocoBackend": "auto",
    }
    assert out["joint"] == {"mjc:armature": 0.0, "newton:armature": 0.0}
    assert out["joint_fallback"] == pytest.approx([0.02, 1.0])
    assert out["mesh_schemas"] == [
        "MjcMeshCollisionAPI",
        "NewtonMeshCollisionAPI",
        "NewtonCollisionAPI",
        "PhysicsCollisionAPI",
        "PhysicsMeshCollisionAPI",
    ]
    assert out["tendon"] == [True, pytest.approx(0.003)]
    assert out["actuator"] == [
        True,
        True,
        ["NewtonPIDControlAPI", "NewtonActuatorControlBaseAPI", "NewtonMaxEffortClampingAPI",
         "NewtonActuatorClampingBaseAPI"],
        math.inf,
        False,
    ]  # fmt: skip
    assert out["can_apply"] == {
        "NewtonUsdSceneAPI on Xform": False,
        "NewtonUsdSceneAPI on PhysicsScene": True,
        "NewtonJointAPI on Xform": False,
    }


def test_repository_plugins_are_found_through_pxr_pluginpath_without_newton_usd():
    out, _ = probe(pluginpath=REPO)
    assert_schemas_resolve(out)
    assert all(
        info["plugin"].startswith(str(REPO / "newton_usd" / "schemas_plugins")) for info in out["schemas"].values()
    )


HIDE_UPSTREAM = 'import sys\nsys.modules["newton_usd_schemas"] = sys.modules["mujoco_usd_converter"] = None\n'
"""As if the upstream packages were not installed (newton-usd-schemas is in the test extra)."""


def test_register_schemas_registers_the_packaged_copy():
    out, r = probe(prelude=HIDE_UPSTREAM + REGISTER)
    assert registered(r) == {"newton": "newton_usd", "newton_usd": "newton_usd", "mjc": "newton_usd"}
    assert "LOG" not in r.stderr, r.stderr
    assert_schemas_resolve(out)
    assert all(
        info["plugin"].startswith(str(REPO / "newton_usd" / "schemas_plugins")) for info in out["schemas"].values()
    )


def test_register_schemas_keeps_plugins_registered_before(tmp_path):
    # A copy of the plugins elsewhere (an application's own) on PXR_PLUGINPATH_NAME: USD registers it first.
    shutil.copytree(REPO / "newton_usd" / "schemas_plugins", tmp_path / "plugins")
    out, r = probe(prelude=REGISTER, pluginpath=tmp_path / "plugins")
    assert registered(r) == {
        "newton": f"plugin 'newton' at {tmp_path / 'plugins' / 'newton' / 'resources'}",
        "newton_usd": f"plugin 'newtonUsd' at {tmp_path / 'plugins' / 'newton_usd' / 'resources'}",
        "mjc": f"plugin 'mjcPhysics' at {tmp_path / 'plugins' / 'mjc' / 'resources'}",
    }
    assert "LOG" not in r.stderr, r.stderr
    assert_schemas_resolve(out)


@pytest.fixture
def fake_upstream(tmp_path):
    """Stand-ins for newton_usd_schemas and mujoco_usd_converter: our plugin files, which declare the same
    plugin (name, kind) as upstream's, registered on import the way those packages register theirs."""
    plugins = REPO / "newton_usd" / "schemas_plugins"
    register = (
        "import pathlib\nfrom pxr import Plug\n"
        "Plug.Registry().RegisterPlugins([(pathlib.Path(__file__).parent{}).absolute().as_posix()])\n"
    )
    nus = tmp_path / "newton_usd_schemas"
    shutil.copytree(plugins / "newton" / "resources", nus)
    (nus / "__init__.py").write_text(register.format(""))
    muc = tmp_path / "mujoco_usd_converter"
    shutil.copytree(plugins / "mjc" / "resources", muc / "plugins" / "mjcPhysics" / "resources")
    (muc / "plugins" / "plugInfo.json").write_text('{"Includes": ["*/resources/"]}\n')
    (muc / "__init__.py").write_text(register.format(' / "plugins"'))
    for plugin_info, name in (
        (nus / "plugInfo.json", "newton"),
        (muc / "plugins" / "mjcPhysics" / "resources" / "plugInfo.json", "mjcPhysics"),
    ):
        text = "".join(line for line in plugin_info.read_text().splitlines(True) if not line.startswith("#"))
        (plugin,) = json.loads(text)["Plugins"]
        assert (plugin["Name"], plugin["Type"], plugin["LibraryPath"]) == (name, "library", "")
    return tmp_path


def test_an_installed_upstream_package_provides_its_schemas_and_imports_after_newton_usd(fake_upstream):
    imports = "import newton_usd_schemas, mujoco_usd_converter\nprint('UPSTREAM IMPORTED')\n"
    out, r = probe(prelude=REGISTER + imports, pythonpath=[fake_upstream])
    assert registered(r) == {"newton": "newton_usd_schemas", "newton_usd": "newton_usd", "mjc": "mujoco_usd_converter"}
    assert "UPSTREAM IMPORTED" in r.stdout
    assert "LOG" not in r.stderr, r.stderr
    assert_schemas_resolve(out)
    assert out["schemas"]["MjcSceneAPI"]["plugin"].startswith(str(fake_upstream / "mujoco_usd_converter"))
    assert out["schemas"]["NewtonUsdSceneAPI"]["plugin"].startswith(str(REPO / "newton_usd" / "schemas_plugins"))


def test_the_installed_newton_usd_schemas_package_provides_the_same_schemas():
    """newton-usd-schemas 0.6.0 itself (the test extra installs it): register_schemas() registers its plugin,
    Newton's own ``import newton_usd_schemas`` after it adds nothing, and every schema resolves as with ours (a
    stage reads the same whichever is installed; tests/test_upstream_schemas.py compares the files)."""
    import importlib.util  # noqa: PLC0415

    spec = importlib.util.find_spec("newton_usd_schemas")  # (finds it; does not import it)
    if spec is None:
        pytest.skip("newton-usd-schemas is not installed (it is in the test extra)")
    imports = "import newton_usd_schemas\nprint('UPSTREAM IMPORTED')\n"
    out, r = probe(prelude=REGISTER + imports)
    assert registered(r)["newton"] == "newton_usd_schemas"
    assert "UPSTREAM IMPORTED" in r.stdout
    assert "LOG" not in r.stderr, r.stderr
    assert_schemas_resolve(out)
    folder = str(Path(spec.submodule_search_locations[0]).resolve())
    assert out["schemas"]["NewtonActuator"]["plugin"].startswith(folder)


def test_newton_usd_imports_after_an_upstream_package(fake_upstream):
    out, r = probe(prelude="import newton_usd_schemas, mujoco_usd_converter\n" + REGISTER, pythonpath=[fake_upstream])
    result = registered(r)
    assert result["newton"].startswith("plugin 'newton' at " + str(fake_upstream / "newton_usd_schemas"))
    assert result["mjc"].startswith("plugin 'mjcPhysics' at " + str(fake_upstream / "mujoco_usd_converter"))
    assert result["newton_usd"] == "newton_usd"
    assert "LOG" not in r.stderr, r.stderr
    assert_schemas_resolve(out)


def test_an_upstream_package_imported_after_newton_usd_registered_its_copy_is_ignored_quietly(fake_upstream):
    # Not installed when newton_usd registered, importable later: USD keeps the plugin of that name
    # registered first (ours) and skips upstream's, without an error.
    prelude = 'import sys\nsys.modules["newton_usd_schemas"] = None  # as if not installed\n' + REGISTER
    prelude += 'del sys.modules["newton_usd_schemas"]\nimport newton_usd_schemas\nprint("UPSTREAM IMPORTED")\n'
    out, r = probe(prelude=prelude, pythonpath=[fake_upstream])
    assert registered(r)["newton"] == "newton_usd"
    assert "UPSTREAM IMPORTED" in r.stdout
    assert "Error" not in r.stderr and "LOG" not in r.stderr, r.stderr
    assert_schemas_resolve(out)
    assert out["schemas"]["NewtonSceneAPI"]["plugin"].startswith(str(REPO / "newton_usd" / "schemas_plugins"))


def test_registering_after_the_schema_registry_was_built_warns():
    code = "from pxr import Usd\nUsd.Stage.CreateInMemory().DefinePrim('/S', 'PhysicsScene')\n" + REGISTER
    r = run_python(code)
    assert r.returncode == 0, r.stderr
    assert "LOG WARNING USD schemas NewtonActuator, NewtonActuatorClampingBaseAPI" in r.stderr
    assert "were registered too late" in r.stderr and "Import newton_usd before opening stages" in r.stderr


def test_generated_files_are_current():
    r = subprocess.run(
        [sys.executable, str(REPO / "schemas" / "generate.py"), "--check"], capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stdout + r.stderr


def test_generate_check_names_stale_files(tmp_path):
    for part in ("schemas", "newton_usd/schemas_plugins", "docs"):
        shutil.copytree(REPO / part, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__"))
    source = tmp_path / "schemas" / "mjc" / "schema.usda"
    source.write_text(source.read_text().replace("mjc:option:timestep = 0.002", "mjc:option:timestep = 0.004"))
    r = subprocess.run(
        [sys.executable, str(tmp_path / "schemas" / "generate.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 1
    assert "generated files are stale; run `python schemas/generate.py`" in r.stdout
    assert "newton_usd/schemas_plugins/mjc/resources/generatedSchema.usda" in r.stdout
    assert "docs/schemas.md" in r.stdout
    assert "mjc:option:timestep = 0.004" in r.stdout

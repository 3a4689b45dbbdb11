"""Our newton:* schemas against newton-usd-schemas 0.6.0's own files, class by class, property by property.

Upstream's generatedSchema.usda and plugInfo.json are read as files (``Sdf.Layer.FindOrOpen``, ``json``), found
through the installed distribution's record (``importlib.metadata``): the package is not imported, so its plugin is
not registered by this test. newton-usd-schemas==0.6.0 is in the ``test`` extra (pyproject.toml); nothing is
downloaded here. Documentation differs on purpose (ours is our own) and is not compared.
"""

import importlib.metadata
import json
import math

import pytest
from pxr import Sdf

from conftest import REPO

UPSTREAM = "newton-usd-schemas"
VERSION = "0.6.0"
OURS = REPO / "newton_usd" / "schemas_plugins" / "newton" / "resources"

# Spec fields that are documentation, or that usdGenSchema writes differently without changing the schema.
PRIM_IGNORED = {"documentation", "customData", "specifier", "typeName"}
PROPERTY_IGNORED = {"documentation", "customData"}


def upstream_file(name: str):
    try:
        dist = importlib.metadata.distribution(UPSTREAM)
    except importlib.metadata.PackageNotFoundError:
        pytest.fail(f"{UPSTREAM}=={VERSION} is not installed: it is in the test extra (pip install -e '.[test]')")
    assert dist.version == VERSION, f"{UPSTREAM} {dist.version} is installed; this test compares with {VERSION}"
    (found,) = [f for f in dist.files if f.parts == ("newton_usd_schemas", name)]
    return dist.locate_file(found)


def plugin_types(path) -> dict:
    text = "".join(line for line in open(path).read().splitlines(True) if not line.lstrip().startswith("#"))
    (plugin,) = json.loads(text)["Plugins"]
    return {"plugin": {k: v for k, v in plugin.items() if k != "Info"}, "types": plugin["Info"]["Types"]}


def comparable(value):
    """A spec field's value as plain data (list ops applied, floats with inf kept, NaN never expected)."""
    if hasattr(value, "ApplyOperations"):
        return list(value.ApplyOperations([]))
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)) or type(value).__module__ == "pxr.Vt":  # (VtArrays)
        return [comparable(v) for v in value]
    if isinstance(value, float):
        assert not math.isnan(value)
    return value


def fields(spec, ignored) -> dict:
    return {key: comparable(spec.GetInfo(key)) for key in spec.ListInfoKeys() if key not in ignored}


@pytest.fixture(scope="module")
def layers():
    upstream = Sdf.Layer.FindOrOpen(str(upstream_file("generatedSchema.usda")))
    ours = Sdf.Layer.FindOrOpen(str(OURS / "generatedSchema.usda"))
    yield (
        {p.name: p for p in upstream.rootPrims if p.name != "GLOBAL"},
        {p.name: p for p in ours.rootPrims if p.name != "GLOBAL"},
    )
    del upstream, ours  # (held until here: a spec of a released layer is dormant)


def test_every_upstream_class_is_ours(layers):
    upstream, ours = layers
    assert len(upstream) == 27
    assert sorted(upstream) == sorted(ours)


def test_properties_types_variability_fallbacks_and_metadata_agree(layers):
    upstream, ours = layers
    differences = []
    for name, theirs in upstream.items():
        mine = ours[name]
        if fields(theirs, PRIM_IGNORED) != fields(mine, PRIM_IGNORED):  # apiSchemas (built-ins), ...
            differences.append(f"{name}: {fields(theirs, PRIM_IGNORED)} != {fields(mine, PRIM_IGNORED)}")
        their_props = {p.name: p for p in theirs.properties}
        my_props = {p.name: p for p in mine.properties}
        if sorted(their_props) != sorted(my_props):
            differences.append(f"{name}: properties {sorted(their_props)} != {sorted(my_props)}")
        for prop, spec in their_props.items():
            if prop not in my_props:
                continue
            other = my_props[prop]
            if type(spec) is not type(other):
                differences.append(f"{name}.{prop}: {type(spec).__name__} != {type(other).__name__}")
                continue
            # typeName, variability, default (the fallback), allowedTokens, limits, arraySizeConstraint, custom
            a, b = fields(spec, PROPERTY_IGNORED), fields(other, PROPERTY_IGNORED)
            if a != b:
                differences.append(f"{name}.{prop}: {a} != {b}")
    assert not differences, "\n".join(differences)


def test_plugin_declares_the_same_types_kinds_bases_aliases_and_where_they_apply():
    upstream = plugin_types(upstream_file("plugInfo.json"))
    ours = plugin_types(OURS / "plugInfo.json")
    # One plugin to USD: same name, a library without a library (see schemas/README.md).
    assert upstream["plugin"] == ours["plugin"]
    assert sorted(upstream["types"]) == sorted(ours["types"])
    keys = ("schemaIdentifier", "alias", "bases", "schemaKind", "apiSchemaCanOnlyApplyTo")
    for type_name, entry in upstream["types"].items():
        mine = ours["types"][type_name]
        assert {k: entry.get(k) for k in keys} == {k: mine.get(k) for k in keys}, type_name
        assert set(entry) - {"autoGenerated"} == set(mine) - {"autoGenerated"}, type_name


def test_concrete_schemas_name_their_prim_type(layers):
    upstream, ours = layers
    kinds = {e["schemaIdentifier"]: e["schemaKind"] for e in plugin_types(OURS / "plugInfo.json")["types"].values()}
    concrete = sorted(n for n, kind in kinds.items() if kind == "concreteTyped")
    assert concrete == ["NewtonActuator"]
    for name in concrete:
        assert upstream[name].typeName == ours[name].typeName == name

"""Registering the codeless newton:*, newton:usd:* and mjc:* schemas with USD.

The schemas are defined in ``schemas/<family>/schema.usda`` and shipped, generated, in
``newton_usd/schemas_plugins/<family>/resources/`` (see ``schemas/generate.py``). Two upstream
packages ship the same schemas under the same type names: newton-usd-schemas (``newton``) and
mujoco-usd-converter's mjcPhysics plugin (``mjc``). USD raises errors when two plugins declare the
same type, so ours are declared as upstream declares its own (same plugin name, a "library" plugin
without a library): USD then takes the two for one plugin and silently keeps the first registered.
Upstream ships more schemas than ours, so :func:`register_schemas` prefers it, per family:

1. a plugin already provides the family's types (an upstream package imported earlier, a
   ``PXR_PLUGINPATH_NAME`` entry, an application's own copy): leave it in place;
2. the upstream package is installed: register *its* plugin folder, exactly as its own import
   does, so that importing it later registers nothing new;
3. otherwise: register newton_usd's copy (an upstream package imported later is then ignored by
   USD, without an error, and its schemas that newton_usd lacks are not available).

``newton_usd`` (NewtonUsdSceneAPI) has no upstream and is always ours. USD's schema registry reads
the plugins once, when it is first used (the first stage opened), so this must run before that.

This module needs only pxr and the standard library, so that it can run before anything else.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path

from pxr import Plug, Tf, Usd

__all__ = ["PLUGINS_DIR", "register_schemas"]

_log = logging.getLogger("newton_usd")

PLUGINS_DIR = Path(__file__).resolve().parent.parent / "schemas_plugins"
"""newton_usd's copy of the schema plugins, one ``<family>/resources/`` folder each (and a
plugInfo.json including them all, for ``PXR_PLUGINPATH_NAME``)."""


@dataclass(frozen=True)
class _Family:
    name: str
    upstream: str | None = None
    """The package that ships the same schemas, if any."""
    upstream_plugins: str = "."
    """Its plugin folder (holding plugInfo.json), relative to the package folder."""

    @property
    def resources(self) -> Path:
        return PLUGINS_DIR / self.name / "resources"


_FAMILIES = (
    _Family("newton", upstream="newton_usd_schemas", upstream_plugins="."),
    _Family("newton_usd"),
    _Family("mjc", upstream="mujoco_usd_converter", upstream_plugins="plugins"),
)

_result: dict[str, str] | None = None


def register_schemas() -> dict[str, str]:
    """Make the newton:*, newton:usd:* and mjc:* schemas known to USD, once per process.

    Per family, an already registered provider is kept, an installed upstream package (newton-usd-schemas,
    mujoco-usd-converter) is preferred to newton_usd's copy, and newton_usd's copy is registered
    otherwise; see the module docstring. Problems are logged as warnings on the ``newton_usd``
    logger, never raised. Call it before the first stage is opened.

    Returns:
        For each family ("newton", "newton_usd", "mjc"), who provides its schemas: "newton_usd",
        the upstream package's name, or "plugin '<name>' at <path>" for one registered before.
    """
    global _result
    if _result is not None:
        return dict(_result)

    # Have USD register the plugins it finds by itself (PXR_PLUGINPATH_NAME, its own) first: it does
    # so lazily, on the first query, which would otherwise come after ours.
    try:
        Plug.Registry().GetAllPlugins()
    except Tf.ErrorException as e:
        # Plugins that declare the same types under different plugin names (e.g. an older copy of
        # these schemas on PXR_PLUGINPATH_NAME): USD keeps the first; say so, go on.
        _log.warning("USD found conflicting schema plugins; the first registered is used: %s", _tf_message(e))

    result: dict[str, str] = {}
    registered_now: dict[str, list[tuple[str, str]]] = {}
    for family in _FAMILIES:
        schemas = _declared_schemas(family.resources)
        provided = {ident: t for ident, t in ((ident, _find_type(name, ident)) for name, ident in schemas)}
        present = [ident for ident, t in provided.items() if t is not None]
        if present:
            result[family.name] = _describe_provider(provided[present[0]])
            missing = [ident for ident in provided if provided[ident] is None]
            if missing:
                _log.warning(
                    "USD schemas %s are not available: %s already provides the other %s schemas, and USD "
                    "takes a single plugin for them",
                    _names(missing),
                    result[family.name],
                    family.name,
                )
            continue

        upstream_dir = _upstream_plugin_dir(family)
        plugin_dir = upstream_dir or family.resources.as_posix()
        try:
            Plug.Registry().RegisterPlugins([plugin_dir])
        except Tf.ErrorException as e:
            _log.warning("registering the %s USD schemas from %s failed: %s", family.name, plugin_dir, _tf_message(e))
        result[family.name] = family.upstream if upstream_dir else "newton_usd"
        registered_now[family.name] = schemas

    for name, schemas in registered_now.items():
        undeclared = [ident for type_name, ident in schemas if _find_type(type_name, ident) is None]
        if undeclared:
            _log.warning("USD schemas %s are not available: %s does not provide them", _names(undeclared), result[name])
        # A plugin registered after USD's schema registry was built stays invisible to it.
        declared = [ident for _, ident in schemas if ident not in undeclared]
        try:
            unseen = [ident for ident in declared if not Usd.SchemaRegistry.FindSchemaInfo(ident)]
        except Tf.ErrorException as e:
            _log.warning("USD reported an error while loading the %s schemas: %s", name, _tf_message(e))
            continue
        if unseen:
            _log.warning(
                "USD schemas %s were registered too late: USD's schema registry was already built (a stage "
                "was opened before newton_usd registered them). Import newton_usd before opening stages, or "
                "put %s on PXR_PLUGINPATH_NAME",
                _names(unseen),
                PLUGINS_DIR,
            )

    _result = result
    return dict(result)


def _declared_schemas(resources: Path) -> list[tuple[str, str]]:
    """(type name, schema identifier) of every schema a plugInfo.json of ours declares."""
    text = (resources / "plugInfo.json").read_text()
    info = json.loads("".join(line for line in text.splitlines(True) if not line.lstrip().startswith("#")))
    return [
        (type_name, entry.get("schemaIdentifier", type_name))
        for plugin in info["Plugins"]
        for type_name, entry in plugin["Info"]["Types"].items()
    ]


def _find_type(type_name: str, identifier: str) -> Tf.Type | None:
    """The declared TfType of a schema, by its type name or by its identifier (an alias), if any."""
    t = Tf.Type.FindByName(type_name)
    if t.isUnknown:
        t = Tf.Type.FindByName("UsdSchemaBase").FindDerivedByName(identifier)
    return None if t.isUnknown else t


def _describe_provider(t: Tf.Type) -> str:
    plugin = Plug.Registry().GetPluginForType(t)
    if plugin is None:
        return "a plugin"
    location = plugin.resourcePath or plugin.path
    if location and Path(location).resolve().is_relative_to(PLUGINS_DIR):
        return "newton_usd"
    return f"plugin '{plugin.name}' at {location}"


def _upstream_plugin_dir(family: _Family) -> str | None:
    """The plugin folder of the family's upstream package, if that package is installed."""
    if family.upstream is None:
        return None
    try:
        spec = importlib.util.find_spec(family.upstream)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    # Spelled as the package's own __init__ spells it, so that USD sees the same folder twice.
    plugin_dir = (Path(spec.submodule_search_locations[0]) / family.upstream_plugins).absolute()
    if not (plugin_dir / "plugInfo.json").is_file():
        _log.warning(
            "%s is installed but has no plugInfo.json in %s; using newton_usd's copy of the %s schemas, "
            "so importing %s later may fail",
            family.upstream,
            plugin_dir,
            family.name,
            family.upstream,
        )
        return None
    return plugin_dir.as_posix()


def _names(identifiers: list[str]) -> str:
    return ", ".join(identifiers[:4]) + (f" and {len(identifiers) - 4} more" if len(identifiers) > 4 else "")


def _tf_message(error: Tf.ErrorException) -> str:
    """The first reason of a Tf error, without the C++ location, and how many more there were."""
    text = " ".join(str(error).split())
    match = re.search(r" : '(.+?)'(?= Error in |$)", text)
    reason = match.group(1) if match else text
    more = text.count("Error in ") - 1
    return reason + (f" (and {more} more like it)" if more > 0 else "")

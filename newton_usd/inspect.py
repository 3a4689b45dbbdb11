"""What ``usdsim explain`` and ``usdsim check`` report: resolved values with their sources, and what
the stage authors that the runtime does not use."""

from __future__ import annotations

from collections import defaultdict

from pxr import Sdf, Usd

from .usd.importer import UsdImport

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


def explain_rows(imports, prims=()) -> list[tuple[str, str, str, str, str]]:
    """(prim, property, value in SI, unit, source) for every resolved property of ``imports`` (a
    :class:`UsdImport`, or several: one per PhysicsScene), optionally only for ``prims`` and their
    descendants, in prim then property order (a row that several imports resolve alike, once)."""
    units = {}
    from .usd import properties as props  # noqa: PLC0415

    for value in vars(props).values():
        if hasattr(value, "candidates") and hasattr(value, "unit"):
            units[value.name] = value.unit
    for value in list(props.SCENE_OPTIONS.values()) + list(props.SCENE_FLAGS.values()):
        units[value.name] = value.unit
    roots = [Sdf.Path(p) for p in prims]
    rows = {}
    for imported in _imports(imports):
        for (path, name), r in imported.resolver.provenance.items():
            if roots and not any(Sdf.Path(path).HasPrefix(root) for root in roots):
                continue
            rows[(path, name, format_value(r.value), units.get(name, ""), r.source)] = None
    return sorted(rows, key=lambda row: row[:2])


def unused_attributes(imports) -> dict[str, list[str]]:
    """Authored ``newton:*``, ``mjc:*`` and ``physx*`` attributes that the runtime read in none of
    ``imports`` (a :class:`UsdImport`, or several of one stage: one per PhysicsScene): attribute name ->
    prim paths."""
    imports = _imports(imports)
    used = set().union(*(imported.resolver.used for imported in imports))
    out = defaultdict(list)
    for prim in Usd.PrimRange(imports[0].stage.GetPseudoRoot(), Usd.TraverseInstanceProxies()):
        path = str(prim.GetPath())
        for name in prim.GetAuthoredPropertyNames():
            if name.startswith(READ_NAMESPACES) and (path, name) not in used:
                if prim.GetRelationship(name):
                    continue  # relationships (mjc:target, ...) are not values
                out[name].append(path)
    return dict(sorted(out.items()))


def table(rows, headers) -> str:
    """A plain text table with aligned columns."""
    widths = [max(len(str(x)) for x in col) for col in zip(headers, *rows, strict=False)]
    lines = ["  ".join(str(h).ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    for row in rows:
        lines.append("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    return "\n".join(lines)

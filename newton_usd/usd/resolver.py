"""The schema-resolver layer: one value per property, from the dialect of highest priority.

A :class:`Property` names the attributes that can author one runtime value in each dialect
(``newton:*``, ``mjc:*``, ``physx*``, standard ``physics:*``) with the conversion of each to SI units.
:meth:`Resolver.resolve` returns a :class:`Resolved` value and records where it came from:

1. the first *authored* attribute, dialects in the resolver's order (default newton > mjc > physx >
   physics);
2. else the fallback of a schema applied on the prim that defines one of the attributes (same
   order), e.g. ``mjc:option:integrator`` = "euler" when MjcSceneAPI is applied;
3. else the property's builder default.

Unit conversions happen here, once: per-degree gains, degrees, time steps per second, stage units.
Per prim, the authored property names and applied schemas are read once and cached, so resolving
many properties of one prim costs dictionary look-ups, not USD calls.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, NamedTuple

from pxr import Sdf, Usd

from ..errors import UsdInputError

DIALECTS = ("newton", "mjc", "physx", "physics")
"""The default resolution order."""

RAD_PER_DEG = math.pi / 180.0


@dataclass(frozen=True)
class Candidate:
    """One attribute that can author a property, and how to convert its value to SI."""

    dialect: str
    attribute: str
    convert: Callable[[Any, "Context"], Any] | None = None
    unset: Callable[[Any], bool] | None = None  # a sentinel meaning "no opinion" (e.g. -inf)


@dataclass(frozen=True)
class Property:
    """A runtime value and the attributes that can author it.

    Attributes:
        name: the runtime name (e.g. ``"joint_armature"``), used by ``usdsim explain``.
        candidates: the attributes, any dialect order (the resolver orders them).
        default: the builder default when nothing is authored and no applied schema has a fallback.
        unit: the SI unit of the resolved value, for display.
        check: optional validation of the converted value; returns an error text or None.
        allowed: for token values, the allowed set (checked).
    """

    name: str
    candidates: tuple
    default: Any = None
    unit: str = ""
    check: Callable[[Any], str | None] | None = None
    allowed: tuple = ()


class Resolved(NamedTuple):
    """A resolved value (SI units) and its provenance.

    ``kind`` is "authored", "fallback" or "default"; ``attribute`` names the source attribute (None
    for a default), ``prim`` the prim it is authored on (authored values only: fallbacks and defaults
    are shared by every prim that has them); ``schema`` names the applied schema for a fallback.
    """

    value: Any
    kind: str
    attribute: str | None = None
    prim: str | None = None
    schema: str | None = None

    @property
    def source(self) -> str:
        if self.kind == "authored":
            return f"{self.attribute}"
        if self.kind == "fallback":
            return f"fallback of {self.schema} ({self.attribute})"
        return "default"


@dataclass
class Context:
    """What conversions need: stage units and the prim's kind (angular or linear joint, ...)."""

    meters_per_unit: float = 1.0
    kilograms_per_unit: float = 1.0
    angular: bool = True
    angle_unit: float = RAD_PER_DEG  # mjc angles follow mjc:compiler:angle (degree by default)

    def of_kind(self, angular: bool) -> "Context":
        """This context for an angular (True) or linear (False) joint DOF."""
        if self.angular == angular:
            return self
        key = (angular, self.meters_per_unit, self.kilograms_per_unit, self.angle_unit)
        made = self.__dict__.get("_of_kind")  # the last one made (not a field: replace() leaves it)
        if made is None or made[0] != key:
            made = self.__dict__["_of_kind"] = (key, replace(self, angular=angular))
        return made[1]


_DEFAULT_CONTEXT = Context()
_MISSING = object()


class _PrimView:
    """What the resolver reads of a prim once: its path, typed and applied schemas and (when first asked for)
    its authored property names."""

    __slots__ = ("_authored", "_prim", "applied", "path")

    def __init__(self, prim: Usd.Prim, path: str, type_name=None, applied_schemas=None):
        self.path = path
        self._prim, self._authored = prim, None
        # Schemas whose fallbacks count: the prim's typed schema (e.g. MjcActuator), then applied APIs.
        type_name = str(prim.GetTypeName()) if type_name is None else type_name
        applied_schemas = prim.GetAppliedSchemas() if applied_schemas is None else applied_schemas
        self.applied = tuple(([type_name] if type_name else []) + list(applied_schemas))

    @property
    def authored(self) -> set:
        """The prim's authored property names."""
        if self._authored is None:
            self._authored = set(self._prim.GetAuthoredPropertyNames())
            self._prim = None
        return self._authored


@dataclass
class Resolver:
    """Resolves properties of prims through the ordered dialects, recording provenance.

    Args:
        order: dialect priority, highest first (a permutation of a subset of :data:`DIALECTS`).
        file: the stage's file, for error messages.
    """

    order: tuple = DIALECTS
    file: str | None = None
    # prim path -> the results of its resolve_all calls in order ({property name: Resolved}; a later call's
    # value of a name wins): results shared by prims are kept, not copied
    _by_prim: dict = field(default_factory=dict)
    used: set = field(default_factory=set)  # (prim path, attribute) read by the runtime
    _views: dict = field(default_factory=dict)
    _fallbacks: dict = field(default_factory=dict)  # schema name -> {attribute: fallback}
    _ordered: dict = field(default_factory=dict)  # property name -> its candidates in resolution order
    seconds: float = 0.0  # time spent resolving, for benchmarks/
    _defaults: dict = field(default_factory=dict)  # property name -> its shared "default" Resolved
    _fallback_cache: dict = field(default_factory=dict)  # (applied schemas, context) -> {property: fallback}
    _attributes: dict = field(default_factory=dict)  # property name -> its candidate attribute names
    # Results of property tuples a prim authors none of, per (tuple id, applied schemas, context): shared
    # by every such prim (each entry keeps its tuple, so a reused id cannot hit a stale entry).
    _unauthored: dict = field(default_factory=dict)
    _tuple_attributes: dict = field(default_factory=dict)  # tuple id -> Resolver._table(tuple)
    # (applied schemas, context) -> {property name: Resolved} where the prim authors none of its attributes.
    _unauthored_values: dict = field(default_factory=dict)
    _singles: dict = field(default_factory=dict)  # property name -> (property,), the tuple resolve() passes

    def __post_init__(self):
        unknown = [d for d in self.order if d not in DIALECTS]
        if unknown:
            raise ValueError(f"unknown dialect(s) {unknown}; valid: {', '.join(DIALECTS)}")
        self._rank = {d: i for i, d in enumerate(self.order)}

    # ------------------------------------------------------------------ schema fallbacks
    def _schema_fallbacks(self, schema: str) -> dict:
        table = self._fallbacks.get(schema)
        if table is None:
            table = {}
            registry = Usd.SchemaRegistry()
            name = schema.split(":")[0]
            definition = registry.FindAppliedAPIPrimDefinition(name) or registry.FindConcretePrimDefinition(name)
            if definition is not None:
                for name in definition.GetPropertyNames():
                    value = definition.GetAttributeFallbackValue(name)
                    if value is not None:
                        table[name] = value
            self._fallbacks[schema] = table
        return table

    @property
    def provenance(self) -> dict:
        """(prim path, property name) -> :class:`Resolved`, for every property resolved so far."""
        out = {}
        for path, calls in self._by_prim.items():
            merged = {}
            for results in calls:
                merged.update(results)
            out.update(((path, name), r) for name, r in merged.items())
        return out

    def record(self, prim: Usd.Prim, name: str, resolved: Resolved) -> Resolved:
        """Record ``resolved`` as the value of property ``name`` of ``prim`` (a value a rule gave, e.g. the
        solver of a scene that applies a solver's schema), replacing what was resolved; returns it."""
        self._by_prim.setdefault(self.view(prim).path, []).append({name: resolved})
        return resolved

    def view(self, prim: Usd.Prim, path: Sdf.Path | None = None) -> _PrimView:
        """What the resolver read of ``prim`` (``path``: its path, when the caller has it)."""
        key = prim.GetPath() if path is None else path
        v = self._views.get(key)
        if v is None:
            v = self._views[key] = _PrimView(prim, str(key))
        return v

    def schemas_read(self, path) -> tuple | None:
        """The typed schema and applied schemas of prim ``path`` as this resolver first read them (an import's:
        the prim's schemas then), or None where it read none of that prim."""
        view = self._views.get(Sdf.Path(path))
        return None if view is None else view.applied

    def add_view(self, prim: Usd.Prim, path: Sdf.Path, type_name: str, applied_schemas) -> None:
        """Prepare the view of ``prim`` from what a traversal already read of it (its ``path``, type name and
        ``GetAppliedSchemas()``), so that resolving its properties later does not read them again."""
        if path not in self._views:
            self._views[path] = _PrimView(prim, str(path), type_name, applied_schemas)

    # ------------------------------------------------------------------ resolving
    def resolve(self, prim: Usd.Prim, prop: Property, ctx: Context | None = None, path=None) -> Resolved:
        """Resolve ``prop`` on ``prim``; see the module docstring for the order. ``path``: the prim's
        ``Sdf.Path``, when the caller has it (saves asking the prim)."""
        single = self._singles.get(prop.name)
        if single is None or single[0] is not prop:  # one tuple per property: its results are shared
            single = self._singles[prop.name] = (prop,)
        return self.resolve_all(prim, single, ctx, path)[prop.name]

    def resolve_all(self, prim: Usd.Prim, properties, ctx: Context | None = None, path=None) -> dict:
        """Resolve several properties of one prim: property name -> :class:`Resolved` (``path``: as in
        :meth:`resolve`)."""
        t0 = time.perf_counter()
        view, ctx = self.view(prim, path), ctx or _DEFAULT_CONTEXT
        path, authored = view.path, view.authored
        ctx_key = (ctx.angular, ctx.meters_per_unit, ctx.kilograms_per_unit, ctx.angle_unit)
        shared_key = None
        hits = None  # of a fixed table: the names of the properties the prim authors an attribute of
        if type(properties) is tuple:  # a fixed table: prims that author none of it share one result
            known = self._tuple_attributes.get(id(properties))
            if known is None or known[0] is not properties:
                known = self._tuple_attributes[id(properties)] = self._table(properties)
            mine = authored.intersection(known[1])
            if not mine:
                shared_key = (id(properties), view.applied, ctx_key)
                hit = self._unauthored.get(shared_key)
                if hit is not None and hit[0] is properties:
                    self._by_prim.setdefault(path, []).append(hit[1])
                    self.seconds += time.perf_counter() - t0
                    return hit[1]
            hits = set().union(*(known[2][a] for a in mine))
        # What a property resolves to where the prim authors none of its attributes (its schema fallback
        # or default) depends only on the applied schemas and the conversion context: cached per both.
        key = (view.applied, *ctx_key)
        unauthored = self._unauthored_values.get(key)
        if unauthored is None:
            unauthored = self._unauthored_values[key] = {}
        fallbacks = self._fallback_cache.setdefault(key, {}) if view.applied else None
        out = {}
        for prop in properties:
            name = prop.name
            result = None
            if name in hits if hits is not None else not authored.isdisjoint(self._attributes_of(prop)):
                result = self._authored(prim, path, prop, self._ordered[name], authored, ctx)
            if result is None:
                result = unauthored.get(name)
                if result is None:
                    result = unauthored[name] = self._unauthored_result(prim, prop, view.applied, fallbacks, ctx)
            out[name] = result
        self._by_prim.setdefault(path, []).append(out)
        if shared_key is not None:
            self._unauthored[shared_key] = (properties, out)
        self.seconds += time.perf_counter() - t0
        return out

    def _unauthored_result(self, prim, prop, applied, fallbacks, ctx) -> Resolved:
        """``prop`` where no attribute of it is authored: the first applied schema fallback, else the default."""
        name = prop.name
        candidates = self._ordered.get(name)
        if candidates is None:
            candidates = self._order_candidates(prop)
        if fallbacks is not None:
            found = fallbacks.get(name, _MISSING)
            if found is _MISSING:
                found = fallbacks[name] = self._fallback(prim, prop, candidates, applied, ctx)
            if found is not None:
                return Resolved(found[0], "fallback", found[1], None, found[2])
        result = self._defaults.get(name)
        if result is None:
            result = self._defaults[name] = Resolved(prop.default, "default")
        return result

    def _table(self, properties: tuple) -> tuple:
        """(``properties``, their candidate attributes, attribute -> names of the properties it can author)."""
        by_attribute = {}
        for prop in properties:
            for attribute in self._attributes_of(prop):
                by_attribute.setdefault(attribute, set()).add(prop.name)
        return properties, frozenset(by_attribute), by_attribute

    def _attributes_of(self, prop) -> frozenset:
        if prop.name not in self._attributes:
            self._order_candidates(prop)
        return self._attributes[prop.name]

    def _order_candidates(self, prop):
        candidates = sorted(
            (c for c in prop.candidates if c.dialect in self._rank), key=lambda c: self._rank[c.dialect]
        )
        self._ordered[prop.name] = candidates
        self._attributes[prop.name] = frozenset(c.attribute for c in candidates)
        return candidates

    def _authored(self, prim, path, prop, candidates, authored, ctx):
        for c in candidates:
            if c.attribute not in authored:
                continue
            attr = prim.GetAttribute(c.attribute)
            value = attr.Get()
            if value is None:  # authored with time samples only, or blocked: read the first sample
                samples = attr.GetTimeSamples()
                if not samples:
                    continue
                value = attr.Get(samples[0])
            try:
                if c.unset is not None and c.unset(value):
                    continue
            except TypeError:  # e.g. a string where a number belongs
                raise UsdInputError(
                    f"value {value!r} (authored as {attr.GetTypeName()}) cannot be read as {prop.name}",
                    file=self.file,
                    prim=str(prim.GetPath()),
                    attribute=c.attribute,
                ) from None
            self.used.add((path, c.attribute))
            return Resolved(self._convert(prim, prop, c, value, ctx), "authored", c.attribute, path)
        return None

    def _fallback(self, prim, prop, candidates, applied, ctx):
        """(value, attribute, schema) of the first candidate an applied schema has a fallback for."""
        for c in candidates:
            for schema in applied:
                table = self._schema_fallbacks(schema)
                if c.attribute in table and not (c.unset is not None and c.unset(table[c.attribute])):
                    return self._convert(prim, prop, c, table[c.attribute], ctx), c.attribute, schema
        return None

    def value(self, prim: Usd.Prim, prop: Property, ctx: Context | None = None):
        """Shorthand for ``resolve(...).value``."""
        return self.resolve(prim, prop, ctx).value

    def _convert(self, prim, prop, candidate, value, ctx):
        if isinstance(value, Sdf.AssetPath):
            value = value.path
        if prop.allowed:
            token = str(value)
            if token not in prop.allowed:
                raise UsdInputError(
                    f"{token!r} is not one of the allowed values ({', '.join(prop.allowed)})",
                    file=self.file,
                    prim=str(prim.GetPath()),
                    attribute=candidate.attribute,
                )
            value = token
        try:
            converted = candidate.convert(value, ctx) if candidate.convert else _plain(value)
        except (TypeError, ValueError, OverflowError) as e:
            raise UsdInputError(
                f"value {value!r} cannot be read as {prop.name} ({e})",
                file=self.file,
                prim=str(prim.GetPath()),
                attribute=candidate.attribute,
            ) from None
        if prop.check is not None:
            problem = prop.check(converted)
            if problem:
                raise UsdInputError(
                    f"{problem} (got {value!r})",
                    file=self.file,
                    prim=str(prim.GetPath()),
                    attribute=candidate.attribute,
                )
        return converted


def _plain(value):
    """Gf vectors and Vt arrays to tuples of Python numbers; scalars unchanged."""
    if isinstance(value, (bool, int, float, str)):
        return value
    try:
        return tuple(float(x) if not isinstance(x, bool) else x for x in value)
    except TypeError:
        return value

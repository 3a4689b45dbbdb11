"""Live edits: what the user changed on the stage while it is simulated, and how the model differs.

:class:`StageWatcher` listens to the stage's ``Usd.Notice.ObjectsChanged`` (Tf notices) and keeps
the paths edited since the last frame; the simulation's own writes (the output layer) are muted.
:func:`user_world_transform` is where the user put a body prim, the simulation's own opinions left out.
:func:`model_differences` compares the running model with one imported afresh from the edited stage:
structure (bodies, joints, shapes by label and kind) and the value arrays that differ.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

import numpy as np
import warp as wp
from pxr import Gf, Sdf, Tf, Usd, UsdGeom

from .stage_sync import RESET

# Edits to these properties cannot change the simulation (looks, UI, shading inputs).
_IGNORED_PREFIXES = ("primvars:", "inputs:", "outputs:", "ui:", "info:", "material:binding:preview")
_IGNORED_NAMES = {"visibility", "purpose", "doubleSided", "extent", "proxyPrim", "kind"}

_INITIAL_STATE = {"body_q", "body_qd", "joint_q", "joint_qd"}
"""Model arrays holding the initial state: a re-import reads the current poses there, not an edit."""
_STRUCTURE = (
    "body_label", "joint_label", "shape_label", "equality_label", "site_label", "articulation_label",
    "joint_type", "joint_parent", "joint_child", "shape_body", "shape_type", "joint_qd_start", "joint_q_start",
    "body_collision_filter_pairs", "body_shape_collision_filter_pairs",
)  # fmt: skip


@dataclass
class Edits:
    """The paths edited since the last :meth:`StageWatcher.take`.

    Attributes:
        changed: property (or prim) paths whose values or metadata changed.
        resynced: prim paths added, removed or recomposed (a structural change).
        prim_fields: prim path (of ``changed`` or ``resynced``) -> the names of the prim's metadata fields that changed
            (an ``over`` made in another layer changes its ``specifier``; a schema applied, its ``apiSchemas``; a prim
            defined, its ``specifier`` and ``typeName``; none named: a change of its composition).
    """

    changed: set = field(default_factory=set)
    resynced: set = field(default_factory=set)
    prim_fields: dict = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.changed or self.resynced)


def relevant(path: Sdf.Path) -> bool:
    """Whether an edit of ``path`` may change the simulation (a look or UI property cannot)."""
    if not path.IsPropertyPath():
        return True
    name = path.name
    return name not in _IGNORED_NAMES and not name.startswith(_IGNORED_PREFIXES)


class StageWatcher:
    """The edits made to ``stage`` since the last :meth:`take`; writes inside :meth:`muted` are not edits.

    Attributes:
        seen: every path edited since the watcher was made (what a host may put back when the run stops).
    """

    def __init__(self, stage: Usd.Stage):
        self._edits = Edits()
        self._muted = 0
        self.seen = set()
        self._listener = Tf.Notice.Register(Usd.Notice.ObjectsChanged, self._on_changed, stage)

    def _on_changed(self, notice, _stage) -> None:
        if self._muted:
            return
        self.seen.update(notice.GetResyncedPaths())
        self.seen.update(p for p in notice.GetChangedInfoOnlyPaths() if p.IsPropertyPath())
        for p in notice.GetResyncedPaths():
            if relevant(p):
                self._edits.resynced.add(p)
                if not p.IsPropertyPath():
                    self._edits.prim_fields.setdefault(p, set()).update(notice.GetChangedFields(p))
        for p in notice.GetChangedInfoOnlyPaths():
            if relevant(p):
                self._edits.changed.add(p)
                if not p.IsPropertyPath():
                    self._edits.prim_fields.setdefault(p, set()).update(notice.GetChangedFields(p))

    @contextlib.contextmanager
    def muted(self):
        """Changes made inside this block (the simulation's own writes) are not collected."""
        self._muted += 1
        try:
            yield
        finally:
            self._muted -= 1

    @property
    def pending(self) -> bool:
        return bool(self._edits)

    def take(self) -> Edits:
        edits, self._edits = self._edits, Edits()
        return edits

    def close(self) -> None:
        if self._listener is not None:
            self._listener.Revoke()
            self._listener = None


def put_back(layer: Sdf.Layer, authored: Sdf.Layer, paths) -> int:
    """Put ``layer``'s opinions at ``paths`` back as ``authored`` (a copy of it made earlier) holds them: a spec it had
    is copied back, one it did not have is removed (and the ``over`` prims left empty by that). Returns the specs
    put back."""
    done = 0
    with Sdf.ChangeBlock():
        for path in sorted(set(paths), key=lambda p: (not p.IsPropertyPath(), -p.pathElementCount)):
            then, now = authored.GetObjectAtPath(path), layer.GetObjectAtPath(path)
            if then is not None:
                Sdf.CopySpec(authored, path, layer, path)
                done += 1
            elif now is not None:
                parent = layer.GetPrimAtPath(path.GetPrimPath() if path.IsPropertyPath() else path.GetParentPath())
                if path.IsPropertyPath():
                    parent.RemoveProperty(now)
                elif parent is not None:
                    del parent.nameChildren[now.name]
                else:
                    del layer.rootPrims[now.name]
                done += 1
            prim = path.GetPrimPath()
            while prim != Sdf.Path.absoluteRootPath and authored.GetPrimAtPath(prim) is None:
                spec = layer.GetPrimAtPath(prim)
                if spec is None or spec.specifier != Sdf.SpecifierOver or spec.properties or spec.nameChildren:
                    break
                parent = layer.GetPrimAtPath(prim.GetParentPath())
                if parent is not None:
                    del parent.nameChildren[spec.name]
                else:
                    del layer.rootPrims[spec.name]
                prim = prim.GetParentPath()
    return done


def xform_edit(path: Sdf.Path) -> bool:
    """Whether ``path`` is a property that places its prim: an ``xformOp:*`` or the ``xformOpOrder``."""
    return path.IsPropertyPath() and (path.name == "xformOpOrder" or path.name.startswith("xformOp:"))


_OP_MATH = {}  # "stage": a stage in memory whose prims compose op values by USD's own op math (see _compose)


def _compose(ops) -> tuple:
    """(local matrix, resets the stack) of ``ops`` ([(op name, type name, value)] in xformOpOrder order, the
    ``!resetXformStack!`` and ``!invert!`` tokens included): USD's own op math, on a prim of a stage in memory that
    has those ops (one prim per stack of op names and types, made once)."""
    stage = _OP_MATH.get("stage")
    if stage is None:
        stage = _OP_MATH["stage"] = Usd.Stage.CreateInMemory()
    key = tuple((name, str(type_name)) for name, type_name, _ in ops)
    prim = _OP_MATH.get(key)
    if prim is None:
        prim = UsdGeom.Xform.Define(stage, f"/P{len(_OP_MATH)}").GetPrim()
        for name, type_name, _ in ops:
            attr_name = name[len("!invert!") :] if name.startswith("!invert!") else name
            if name != RESET and not prim.HasAttribute(attr_name):
                prim.CreateAttribute(attr_name, type_name)
        order = prim.CreateAttribute("xformOpOrder", Sdf.ValueTypeNames.TokenArray, variability=Sdf.VariabilityUniform)
        order.Set([name for name, _, _ in ops])
        _OP_MATH[key] = prim
    for name, _, value in ops:
        if name != RESET:
            prim.GetAttribute(name[len("!invert!") :] if name.startswith("!invert!") else name).Set(value)
    xf = UsdGeom.Xformable(prim)
    return xf.GetLocalTransformation(Usd.TimeCode.Default()), xf.GetResetXformStack()


def _value_without(attr: Usd.Attribute, layer: Sdf.Layer, time: Usd.TimeCode):
    """``attr``'s value at ``time`` from the strongest layer that is not ``layer`` and has an opinion (a layer's
    time sample at ``time``, else the one before it, else its first; at the default time its default), or None where
    only ``layer`` has one."""
    for spec in attr.GetPropertyStack(time):
        if spec.layer == layer:
            continue
        samples = spec.layer.ListTimeSamplesForPath(spec.path) if not time.IsDefault() else ()
        if samples:
            t = time.GetValue()
            before = [s for s in samples if s <= t]
            return spec.layer.QueryTimeSample(spec.path, before[-1] if before else samples[0])
        if spec.HasDefaultValue():
            return spec.default
    return None


def user_world_transform(prim: Usd.Prim, time: Usd.TimeCode, own: Sdf.Layer, physics_ops: bool) -> Gf.Matrix4d:
    """Where the user put ``prim`` (its world transform, stage units, at ``time``), the opinions of ``own`` (the
    simulation's output layer, which moves the prim by its ``xformOp:*:physics`` ops) left out.

    ``physics_ops``: the user edited those ops (as a transform gizmo edits the ops the prim shows): the prim's
    op order is the one the stage composes and each op's value the strongest one outside ``own``; else (the
    user edited the prim's own ops, or their order) the op order is the strongest one outside ``own``. The
    parent's transform is the stage's at ``time`` (a simulated parent where the simulation has it)."""
    order_attr = prim.GetAttribute("xformOpOrder")
    order = order_attr.Get() if physics_ops else _value_without(order_attr, own, Usd.TimeCode.Default())
    if order is None:
        order = order_attr.Get() or []
    ops = []
    for name in order:
        name = str(name)
        if name == RESET:
            ops.append((name, None, None))
            continue
        attr = prim.GetAttribute(name[len("!invert!") :] if name.startswith("!invert!") else name)
        value = _value_without(attr, own, time)
        ops.append((name, attr.GetTypeName(), attr.Get(time) if value is None else value))
    local, resets = _compose(ops)
    if resets or prim.GetParent().IsPseudoRoot():
        return local
    return local * UsdGeom.XformCache(time).GetLocalToWorldTransform(prim.GetParent())


def _values(model) -> dict:
    out = {}
    for name, value in vars(model).items():
        if isinstance(value, wp.array):
            out[name] = value.numpy()
        elif isinstance(value, np.ndarray | list | tuple | dict) or name == "gravity":
            out[name] = value
    for name, value in vars(model.mujoco).items():
        out["mujoco." + name] = value
    return out


def _equal(a, b) -> bool:
    """Value equality of model attributes: arrays (to float32 round-off; NaN equal to NaN), containers,
    and objects such as meshes by their fields."""
    if a is b:
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if a is None or b is None or isinstance(a, str) or isinstance(b, str):
        return a == b
    a_arr, b_arr = np.asarray(a), np.asarray(b)
    if a_arr.dtype == object or b_arr.dtype == object:
        if type(a) is type(b) and hasattr(a, "__dict__"):
            return _equal(vars(a), vars(b))
        return a == b
    if a_arr.shape != b_arr.shape:
        return False
    if a_arr.dtype.kind in "fc" or b_arr.dtype.kind in "fc":
        # Values a re-import derives from the current poses (shape frames) differ by float round-off.
        return bool(np.allclose(a_arr, b_arr, rtol=1e-5, atol=1e-6, equal_nan=True))
    return bool(np.array_equal(a_arr, b_arr))


def model_differences(old, new) -> tuple[bool, set]:
    """``(same_structure, names)``: whether ``new`` has the same bodies, joints and shapes as ``old``,
    and the names of its value arrays that differ (``"mujoco.<name>"`` for MuJoCo-only values;
    initial-state arrays left out)."""
    a, b = _values(old), _values(new)
    same = all(_equal(a.get(k), b.get(k)) for k in _STRUCTURE) and a.keys() == b.keys()
    if not same:
        return False, set()
    names = {k for k in a if k not in _INITIAL_STATE and k not in _STRUCTURE and not _equal(a[k], b[k])}
    return True, names

"""Value overrides typed on the command line (``usdsim --set /World/Box.physics:mass=2``).

An override names an attribute by its USD property path and gives a value as text, parsed by the
attribute's value type. Overrides are authored into a layer the caller chooses (the simulation's
output layer), never into the source.
"""

from __future__ import annotations

import difflib
import math
import re

from pxr import Sdf, Usd

from ..errors import UsdInputError

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:inf|nan)", re.IGNORECASE)


def parse_assignment(text: str) -> tuple[Sdf.Path, str]:
    """``"/Prim/Path.attr:name=VALUE"`` -> (property path, value text)."""
    target, sep, value = text.partition("=")
    target = target.strip()
    if not sep or not target:
        raise UsdInputError(f"--set wants PRIM.ATTRIBUTE=VALUE (e.g. /World/Box.physics:mass=2), got {text!r}")
    path = Sdf.Path(target) if Sdf.Path.IsValidPathString(target) else Sdf.Path()
    if not path.IsPropertyPath() or not path.IsAbsolutePath():
        raise UsdInputError(
            f"--set wants an absolute prim path and an attribute name, /Prim/Path.attribute, got {target!r}"
        )
    return path, value.strip()


def parse_value(text: str, type_name: Sdf.ValueTypeName):
    """The value of ``text`` for an attribute of type ``type_name`` (scalars, vectors, quaternions,
    matrices as their numbers, bools, tokens and strings)."""
    if type_name.isArray:
        raise ValueError(f"array attributes ({type_name}) cannot be set from the command line")
    py = type_name.type.pythonClass
    scalar = str(type_name.scalarType)
    if scalar == "bool":
        word = text.lower()
        if word not in _TRUE | _FALSE:
            raise ValueError(f"{text!r} is not a bool (true/false)")
        return word in _TRUE
    if scalar in ("token", "string", "asset"):
        return Sdf.AssetPath(text) if scalar == "asset" else text
    numbers = [float(x) for x in _NUMBER.findall(text)]
    leftover = _NUMBER.sub("", text).strip(" ,()[]")
    if leftover or not numbers:
        raise ValueError(f"{text!r} is not a {type_name} value")
    if scalar in ("int", "uint", "int64", "uint64", "uchar"):
        if len(numbers) != 1 or not numbers[0].is_integer():
            raise ValueError(f"{text!r} is not an integer")
        return int(numbers[0])
    if py is None or py in (float, int):
        if len(numbers) != 1:
            raise ValueError(f"{text!r} is not one number")
        return numbers[0]
    try:
        if "matrix" in scalar:
            n = int(math.isqrt(len(numbers)))
            return py(*[tuple(numbers[i * n : (i + 1) * n]) for i in range(n)])
        return py(*numbers)
    except Exception:  # noqa: BLE001  (pxr raises Boost.Python errors of several kinds)
        raise ValueError(f"{text!r} is not a {type_name} value") from None


def resolve_assignment(stage: Usd.Stage, text: str, file: str | None = None) -> tuple[Sdf.Path, Usd.Attribute, object]:
    """The attribute ``"PATH.ATTR=VALUE"`` names on ``stage`` and the value parsed by its type.

    Raises:
        UsdInputError: a malformed assignment, a prim or attribute that does not exist, or a value
            that does not parse as the attribute's type.
    """
    path, value_text = parse_assignment(text)
    prim = stage.GetPrimAtPath(path.GetPrimPath())
    if not prim:
        raise UsdInputError("--set: no such prim", file=file, prim=str(path.GetPrimPath()))
    attr = prim.GetAttribute(path.name)
    if not attr:
        names = [a.GetName() for a in prim.GetAttributes()]
        close = difflib.get_close_matches(path.name, names, n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        reason = f"--set: the prim has no attribute {path.name!r}{hint}"
        raise UsdInputError(reason, file=file, prim=str(prim.GetPath()))
    try:
        value = parse_value(value_text, attr.GetTypeName())
    except ValueError as e:
        raise UsdInputError(f"--set: {e}", file=file, prim=str(prim.GetPath()), attribute=path.name) from None
    return path, attr, value


def apply_overrides(stage: Usd.Stage, assignments, layer: Sdf.Layer, file: str | None = None) -> list:
    """Author each ``"PATH.ATTR=VALUE"`` of ``assignments`` into ``layer`` (part of the stage's layer
    stack); returns ``[(property path, value)]``. Every assignment is checked before any is written.

    Raises:
        UsdInputError: as :func:`resolve_assignment`.
    """
    parsed = [resolve_assignment(stage, text, file) for text in assignments]
    with Usd.EditContext(stage, layer):
        for _, attr, value in parsed:
            attr.Set(value)
    return [(str(path), value) for path, _, value in parsed]

"""MuJoCo's load errors, re-raised naming the file and the line.

MuJoCo's messages keep the line of the main file only: an element from an included file is reported
at "line 0", a malformed included file as an "Include error" at the ``<include>``, and a missing mesh
file with no element at all. :func:`mujoco_load_error` finds the file and line by reading the main
file and the files it includes (with the include rules of MuJoCo: paths relative to the main file's
folder, no file included twice), and keeps MuJoCo's own words.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from xml.parsers import expat

from ..errors import UsdInputError

_ELEMENT = re.compile(r"Element (?:name '(?P<name>[^']*)', id (?P<id>\d+)|'(?P<tag>[^']*)'), line (?P<line>\d+)")
_PARSE_LINE = re.compile(r"Line number=(\d+)")
_QUOTED = re.compile(r"'([^'\n]+)'")
_OPENING = re.compile(r"Error opening file '([^']+)'")
_SHOWN = ("name", "class", "file", "mesh", "joint", "tendon", "site", "body", "body1", "geom1")  # of an element


@dataclass
class _Element:
    file: str
    line: int
    tag: str
    attrs: dict

    def describe(self) -> str:
        shown = [f'{k}="{self.attrs[k]}"' for k in _SHOWN if k in self.attrs]
        return f"<{' '.join([self.tag, *shown])}>"


def _read_tree(main: str) -> tuple[list[_Element], list[str]]:
    """Every element of ``main`` and of the files it includes, in MuJoCo's order (an include replaced by
    the included file's elements); and the files that are not well-formed XML."""
    folder = os.path.dirname(main)
    elements: list[_Element] = []
    malformed: list[str] = []
    seen = {os.path.realpath(main)}

    def read(path: str) -> None:
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            return
        parser = expat.ParserCreate()

        def start(tag, attrs):
            elements.append(_Element(path, parser.CurrentLineNumber, tag, attrs))
            if tag == "include" and "file" in attrs:
                included = os.path.normpath(os.path.join(folder, attrs["file"]))
                if os.path.realpath(included) not in seen:
                    seen.add(os.path.realpath(included))
                    read(included)

        parser.StartElementHandler = start
        try:
            parser.Parse(data, True)
        except expat.ExpatError:
            malformed.append(path)

    read(main)
    return elements, malformed


def _narrow(candidates: list[_Element], tokens: list[str]) -> list[_Element]:
    """Keep the candidates that carry each quoted token of the message as an attribute name or value,
    where some do."""
    for token in tokens:
        keep = [e for e in candidates if token in e.attrs or token in e.attrs.values()]
        if keep:
            candidates = keep
    return candidates


def _same_file(quoted: str, attr: str) -> bool:
    a = os.path.normpath(quoted).split(os.sep)
    b = os.path.normpath(attr).split(os.sep)
    return len(b) <= len(a) and a[len(a) - len(b) :] == b


def mujoco_load_error(message: str, source: str | None) -> UsdInputError:
    """The :class:`UsdInputError` for MuJoCo's ``ValueError`` ``message`` on loading ``source`` (an MJCF
    path, or None for XML text): ``file:line:``, then MuJoCo's words and the element, when known."""
    lines = [x.strip() for x in message.strip().splitlines() if x.strip()]
    match = next((m for m in map(_ELEMENT.fullmatch, lines) if m), None)
    where = {k: v or None for k, v in match.groupdict().items()} if match else None  # (name '': unnamed)
    words = re.sub(r"\s+'$", "'", " ".join(x for x in lines if not _ELEMENT.fullmatch(x)))
    parse_line = _PARSE_LINE.search(message)
    opening = _OPENING.search(message)
    file, line, element, note = source, None, None, ""

    if source is None:
        line = int(where["line"]) if where and int(where["line"]) else int(parse_line[1]) if parse_line else None
        file = "<xml string>"
    else:
        elements, malformed = _read_tree(source)
        if parse_line and (where is None or where["tag"] == "include"):
            # A malformed file: the main one, or (an "Include error" at an <include>) an included one.
            broken = [f for f in malformed if f != source]
            if where is not None and broken:
                file = broken[0]
                folder = os.path.dirname(source)
                includes = [e for e in elements if e.tag == "include" and "file" in e.attrs]
                by = [e for e in includes if os.path.normpath(os.path.join(folder, e.attrs["file"])) == file]
                note = f"; included at {by[0].file}:{by[0].line}" if by else ""
                where = None
            line = int(parse_line[1])
        elif where is not None and int(where["line"]) > 0:  # an element of the main file
            line = int(where["line"])
            at = [e for e in elements if e.file == source and e.line == line]
            named = [e for e in at if where["tag"] in (None, e.tag) and where["name"] in (None, e.attrs.get("name"))]
            element = named[0] if len(named) == 1 else at[0] if len(at) == 1 else None
        else:  # an element of an included file (MuJoCo says line 0), or a missing asset file (no element)
            if where is not None:
                candidates = elements
                if where["tag"]:
                    candidates = [e for e in candidates if e.tag == where["tag"]]
                if where["name"]:
                    candidates = [e for e in candidates if e.attrs.get("name") == where["name"]]
                candidates = _narrow(candidates, _QUOTED.findall(words))
                if "repeated name" in words:  # MuJoCo reports the second element of that name
                    candidates = candidates[1:2]
                candidates = [e for e in candidates if e.file != source]
            elif opening:
                candidates = [e for e in elements if "file" in e.attrs and _same_file(opening[1], e.attrs["file"])]
            else:
                candidates = []
            if len(candidates) == 1:
                element = candidates[0]
                file, line = element.file, element.line
            elif where is not None:
                files = sorted({e.file for e in candidates}) or sorted({e.file for e in elements} - {source})
                note = f"; MuJoCo gives no line: it is in {' or '.join(files)}" if files else ""
        if opening and not os.path.exists(opening[1]):  # (MuJoCo's path: the model's folder joined in)
            note += f"; no such file: {os.path.normpath(opening[1])}"

    if element is not None:
        at = f" at {element.describe()}"
    elif where is not None and where["name"]:
        at = f" at the element named '{where['name']}' (id {where['id']})"
    elif where is not None and where["tag"]:
        at = f" at <{where['tag']}>"
    elif where is not None:
        at = f" at an unnamed element (id {where['id']})"
    else:
        at = ""
    what = "the MJCF" if file == source or source is None else source
    return UsdInputError(f"MuJoCo could not load {what}: {words}{at}{note}", file=file, line=line)

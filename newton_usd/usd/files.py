"""The checks of a stage's path that need nothing opened or imported: usdsim makes them before its slow imports
(USD's plugins, Warp, Newton: seconds), so that a wrong path is said at once."""

from __future__ import annotations

import os

from ..errors import UsdInputError


def check_stage_file(path) -> str:
    """``path`` as a string, when it names a file that could be a USD stage.

    Raises:
        UsdInputError: no such file, a directory, or an MJCF file (with how to convert it).
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise UsdInputError("no such file", file=path)
    if os.path.isdir(path):
        raise UsdInputError("is a directory, not a USD file", file=path)
    if path.lower().endswith((".xml", ".mjcf")):
        raise UsdInputError(
            "an MJCF file, not a USD stage: convert it first with `usdsim convert MODEL.xml -o MODEL.usda` "
            "(or load it from Python with ModelBuilder.add_mjcf)",
            file=path,
        )
    return path

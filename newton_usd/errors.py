"""The one exception family of newton_usd.

Every error a user can cause by what they authored or typed is a :class:`NewtonUsdError`. Messages
name the file, the prim path and the attribute involved, and say what would be valid, so that the
command line can print them as one line without a traceback.
"""

from __future__ import annotations


class NewtonUsdError(Exception):
    """Base class of all errors newton_usd raises on bad input or a failed simulation."""


class UsdInputError(NewtonUsdError):
    """A USD file, prim or attribute that cannot be simulated as authored.

    Args:
        message: What is wrong and what would be valid.
        file: The file the problem was found in, if known.
        line: The line of ``file`` (1-based), if known; the message then starts ``file:line:``.
        prim: The prim path, if the problem belongs to one prim.
        attribute: The attribute name, if the problem belongs to one attribute.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        prim: str | None = None,
        attribute: str | None = None,
    ):
        self.file = file
        self.line = line
        self.prim = prim
        self.attribute = attribute
        self.reason = message
        where = []
        if file:
            where.append(f"{file}:{line}" if line else str(file))
        if prim:
            where.append(str(prim) + (f".{attribute}" if attribute else ""))
        elif attribute:
            where.append(attribute)
        super().__init__(": ".join(where + [message]) if where else message)


class SimulationError(NewtonUsdError):
    """The simulation could not go on, e.g. a body's state became NaN or infinite.

    Args:
        message: What happened.
        frame: The frame at which it was detected, if known.
        label: The body or joint label (prim path) involved, if known.
    """

    def __init__(self, message: str, *, frame: int | None = None, label: str | None = None):
        self.frame = frame
        self.label = label
        self.reason = message
        parts = []
        if frame is not None:
            parts.append(f"frame {frame}")
        if label:
            parts.append(label)
        super().__init__(": ".join(parts + [message]))

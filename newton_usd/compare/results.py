"""What a comparison finds: the fields that differ, the dynamics' divergences, and the whole :class:`Comparison`."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass
class FieldDifference:
    """One field of one element whose values differ beyond the tolerance."""

    kind: str  # "body", "joint", ..., "option"
    name: str  # the native element's name (or "#id" when it has none)
    field: str
    native: list
    ours: list
    prim: str | None  # the prim (or MJCF element) that authored ours


@dataclass
class Divergence:
    """The dynamics from one start: our divergence from native MuJoCo and native's own sensitivity."""

    start: str  # "qpos0" or "offset joints"
    steps: int
    divergence: float  # m: the largest distance between matched bodies
    sensitivity: float  # m: native's, from the same start moved by CHAOS_EPS
    float32_sensitivity: float  # m: native's with its geometry rounded to float32 (as a USD file stores it)
    verdict: str  # "match", "chaos" or "differs"


@dataclass
class Comparison:
    """What :func:`compare` found."""

    native_file: str
    ours_file: str
    counts: dict = field(default_factory=dict)  # kind -> [native, ours, matched]
    unmatched: list = field(default_factory=list)  # [kind, "native"|"ours", name, prim]
    differences: list = field(default_factory=list)  # FieldDifference
    dynamics: list = field(default_factory=list)  # Divergence

    @property
    def differ(self) -> bool:
        return bool(self.unmatched or self.differences or any(d.verdict == "differs" for d in self.dynamics))

    def to_dict(self) -> dict:
        out = asdict(self)
        out["differ"] = self.differ
        return out

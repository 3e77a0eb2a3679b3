"""Piecewise schedules of a flow spec: constant layer parameters or the tracking controls of a
steering plan (`reachability.steering.TrackingPiece`) on consecutive depth intervals, as
`riccati-tf flow` replays them (a `steer --json` plan's pieces are such a schedule).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from ..io.spec import (
    MAX_DIM,
    SpecError,
    _kind,
    brief,
    check_mapping,
    check_numeric,
    field,
    parse_number,
    parse_params,
)
from ..reachability.steering import TrackingPiece
from ..state.params import Params

__all__ = ["MAX_SCHEDULE", "TRACKING_FIELDS"]

#: most pieces in the schedule of a flow spec
MAX_SCHEDULE = 1_000
#: fields of a tracking piece of a schedule (`steering.TrackingPiece`) and their shapes
#: ("d": d, "r": the covariance rank r ≤ d)
TRACKING_FIELDS = {"K": ("d", "d"), "A": ("d", "d"), "V": ("d", "d"), "R": ("d", "d"),
                   "L_start": ("d", "r"), "m_start": ("d",), "b_path": ("d",)}


def _array(value: object, where: str, shape: tuple, d: int) -> npt.NDArray[Any]:
    """value as a float array of `shape` (entries "d" are d, "r" any size ≤ d)."""
    check_numeric(value, where, max_len=MAX_DIM, max_depth=len(shape), finite=True)
    try:
        arr = np.array(value, dtype=float)
    except ValueError:
        raise SpecError(f"{where}: rows of unequal length") from None
    want = tuple(d if s == "d" else None for s in shape)
    if arr.ndim != len(shape) or any(w is not None and n != w for n, w in
                                     zip(arr.shape, want, strict=True)) or \
            (arr.ndim == 2 and arr.shape[1] > d):
        text = " × ".join(str(d) if s == "d" else f"r (≤ {d})" for s in shape)
        raise SpecError(f"{where}: must be {text}, got shape {arr.shape}")
    return arr


def parse_schedule(spec: dict, name: str, d: int, t_final: float) -> list:
    """A piecewise schedule of a flow spec: a list of {t_end, params} (constant parameters on
    [t_start, t_end]) or {t_end, tracking} (the time-varying attention controls of a
    `steering.TrackingPiece`, fields TRACKING_FIELDS), each with an optional t_start equal to
    the previous t_end (0 for the first). t_end strictly increasing, the last equal to t_final;
    at most MAX_SCHEDULE pieces. Returns [(t_start, t_end, Params or TrackingPiece)]."""
    raw = field(spec, name)
    if not isinstance(raw, list) or not raw:
        raise SpecError(f"{name}: must be a non-empty list of {{t_end, params}} mappings, got "
                        f"{_kind(raw)}")
    if len(raw) > MAX_SCHEDULE:
        raise SpecError(f"{name}: {len(raw)} pieces exceed the limit {MAX_SCHEDULE} "
                        f"(schedule.MAX_SCHEDULE)")
    out, t0 = [], 0.0
    for k, entry in enumerate(raw):
        here = f"{name}[{k}]"
        check_mapping(entry, here, ("t_start", "t_end", "params", "tracking"),
                      "with t_end and params (or tracking)")
        if "t_start" in entry and parse_number(entry, "t_start", here + ".") != t0:
            raise SpecError(f"{here}.t_start: must equal the previous piece's t_end ({t0!r}), "
                            f"got {brief(entry['t_start'])}")
        t1 = parse_number(entry, "t_end", here + ".")
        if not t1 > t0:
            raise SpecError(f"{here}.t_end: must be > {t0!r} (the piece's start), got {t1!r}")
        if ("params" in entry) == ("tracking" in entry):
            raise SpecError(f"{here}: give exactly one of params (constant) and tracking")
        piece: Params | TrackingPiece
        if "params" in entry:
            piece = parse_params(entry["params"], f"{here}.params")
            if piece.d != d:
                raise SpecError(f"{here}.params: acts on R^{piece.d}, but initial is in R^{d}")
        else:
            piece = _tracking(entry["tracking"], f"{here}.tracking", d, t0, t1)
        out.append((t0, t1, piece))
        t0 = t1
    if t0 != t_final:
        raise SpecError(f"{name}[{len(raw) - 1}].t_end: the last piece must end at t_final = "
                        f"{t_final!r}, got {t0!r}")
    return out


def _tracking(spec: object, where: str, d: int, t0: float, t1: float) -> TrackingPiece:
    mapping = check_mapping(spec, where, tuple(TRACKING_FIELDS),
                            "with " + ", ".join(TRACKING_FIELDS))
    arrays = {key: _array(field(mapping, key, where + "."), f"{where}.{key}", shape, d)
              for key, shape in TRACKING_FIELDS.items()}
    return TrackingPiece(t0, t1, **arrays)

"""Plain JSON values from results: dataclasses, numpy arrays and scalars; NaN/±Inf become None
(strict JSON has no non-finite numbers), complex numbers {"real": x, "imag": y}, sets sorted
lists and paths strings. A dataclass field declared with metadata {"serialize": False} (machinery
such as a trajectory's dense-output interpolant, not a result) is left out."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np


def to_jsonable(obj):
    """A structure of dicts, lists, numbers, strings and None equal in content to obj."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)
                if f.metadata.get("serialize", True)}
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        return to_jsonable(obj.item())
    if isinstance(obj, float) and not np.isfinite(obj):
        return None
    if isinstance(obj, complex):  # JSON has no complex numbers
        return {"real": to_jsonable(obj.real), "imag": to_jsonable(obj.imag)}
    if isinstance(obj, set | frozenset):
        return [to_jsonable(v) for v in sorted(obj, key=repr)]
    if isinstance(obj, Path):
        return str(obj)
    return obj

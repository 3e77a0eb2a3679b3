"""Plain JSON values from results: dataclasses, numpy arrays and scalars; NaN/±Inf become None
(strict JSON has no non-finite numbers), complex numbers {"real": x, "imag": y}, sets sorted
lists and paths strings. A dataclass field declared with metadata {"serialize": False} (machinery
such as what a trajectory's dense output integrates from, not a result) is left out."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np

from ..state.params import Params

__all__ = ["to_jsonable"]


def to_jsonable(obj: Any) -> Any:
    """A structure of dicts, lists, numbers, strings and None equal in content to `obj`.

    Converts results (`Trajectory`, `Certificate`, `Equilibrium`, ... and the mappings the
    command line prints) into values `json.dumps(..., allow_nan=False)` accepts: dataclasses
    become mappings of their fields (fields declared with metadata ``{"serialize": False}``
    left out), numpy arrays nested lists, numpy scalars Python numbers, NaN and ±Inf None,
    complex numbers ``{"real": x, "imag": y}``, sets sorted lists (by repr) and paths strings;
    mapping keys become strings. Anything else is returned as it is.

    Parameters
    ----------
    obj : object
        A dataclass instance, mapping, list, tuple, set, ndarray, numpy scalar, float, complex,
        `pathlib.Path` or any other value, nested arbitrarily.

    Returns
    -------
    object
        The same content as plain dicts, lists, numbers, strings and None.

    Raises
    ------
    RecursionError
        When `obj` contains itself (a cycle of containers).

    See Also
    --------
    riccati_tf.io.files.OutputFolder : writes the JSON files made from these values.
    riccati_tf.app.cli.main : prints results with ``--json`` through this function.

    References
    ----------
    .. [1] T. Bray (ed.), "The JavaScript Object Notation (JSON) Data Interchange Format",
       RFC 8259, 2017 (no NaN or Infinity literals).

    Examples
    --------
    >>> import json
    >>> import numpy as np
    >>> from riccati_tf.io.serialize import to_jsonable
    >>> json.dumps(to_jsonable({"x": np.array([1.0, np.nan]), 2: 1 + 2j}))
    '{"x": [1.0, null], "2": {"real": 1.0, "imag": 2.0}}'
    """
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


def params_json(p: Params) -> dict[str, Any]:
    """A Params as the mapping of a spec: {A, b, V, B}, or {A, b, heads} for several heads (what
    `riccati-tf certify` and `flow` read)."""
    out: dict[str, Any] = {"A": p.A, "b": p.b}
    if len(p.heads) == 1:
        out["V"], out["B"] = p.heads[0]
    else:
        out["heads"] = [{"V": V, "B": B} for V, B in p.heads]
    return out

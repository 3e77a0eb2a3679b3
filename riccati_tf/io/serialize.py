"""Plain JSON values from results: dataclasses, numpy arrays and scalars; NaN/±Inf become None
(strict JSON has no non-finite numbers), complex numbers {"real": x, "imag": y}, sets sorted
lists and paths strings. A dataclass field declared with metadata {"serialize": False} (machinery
such as what a trajectory's dense output integrates from, not a result) is left out. A layer
(`Params`) becomes the mapping of a spec, its heads as given (dense pairs {V, B} or factors
{Q, K, V, O}), which `params_from_json` reads back to an equal layer."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InvalidInputError
from ..state.params import Head, HeadPairs, Params

__all__ = ["json_document", "params_from_json", "params_json", "to_jsonable"]


def to_jsonable(obj: Any) -> Any:
    """A structure of dicts, lists, numbers, strings and None equal in content to `obj`.

    Converts results (`Trajectory`, `Certificate`, `Equilibrium`, ... and the mappings the
    command line prints) into values `json.dumps(..., allow_nan=False)` accepts: dataclasses
    become mappings of their fields (fields declared with metadata ``{"serialize": False}``
    left out), numpy arrays nested lists, numpy scalars Python numbers, NaN and ±Inf None,
    complex numbers ``{"real": x, "imag": y}``, sets sorted lists (by repr) and paths strings;
    mapping keys become strings; a `Params` the mapping of `params_json` (its heads as given,
    dense or factored), a bare `Params.heads` the list of its dense {V, B} pairs. Anything else
    is returned as it is.

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
    return _plain(obj, "", None)


def _plain(obj: Any, where: str, found: dict[str, str] | None) -> Any:
    """`to_jsonable` of obj at path `where`, recording each non-finite float's path and
    value in `found` (when given)."""
    if isinstance(obj, Params):
        obj = params_json(obj)
    elif isinstance(obj, HeadPairs):
        obj = [{"V": V, "B": B} for V, B in obj]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: _plain(getattr(obj, f.name), f"{where}.{f.name}", found)
                for f in dataclasses.fields(obj) if f.metadata.get("serialize", True)}
    if isinstance(obj, dict):
        return {str(k): _plain(v, f"{where}.{k}", found) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_plain(v, f"{where}[{i}]", found) for i, v in enumerate(obj)]
    if isinstance(obj, np.ndarray):
        return _plain(obj.tolist(), where, found)
    if isinstance(obj, np.generic):
        return _plain(obj.item(), where, found)
    if isinstance(obj, float) and not np.isfinite(obj):
        if found is not None:
            found[where.lstrip(".") or "(the value)"] = ("NaN" if np.isnan(obj) else
                                                          "Infinity" if obj > 0 else
                                                          "-Infinity")
        return None
    if isinstance(obj, complex):  # JSON has no complex numbers
        return {"real": _plain(obj.real, f"{where}.real", found),
                "imag": _plain(obj.imag, f"{where}.imag", found)}
    if isinstance(obj, set | frozenset):
        return [_plain(v, f"{where}[{i}]", found)
                for i, v in enumerate(sorted(obj, key=repr))]
    if isinstance(obj, Path):
        return str(obj)
    return obj


#: what a document says of the nulls that stand for non-finite numbers (`json_document`)
NON_FINITE_NOTE = ("null in this document stands for a number that is not finite: NaN (a value "
                   "no number stands for, such as 0/0) or ±Infinity; 'values' names each by "
                   "its path")


def json_document(obj: Any) -> bytes:
    """The strict JSON (UTF-8, indented) of `to_jsonable(obj)`, saying what its nulls were.

    Strict JSON has no NaN or Infinity: each becomes null, and when there are any and the
    document is a mapping, its key "non_finite" holds {"note": NON_FINITE_NOTE, "values":
    {path: "NaN" | "Infinity" | "-Infinity"}} (paths as "layers[2].rate"), so that a null is
    never a silent loss. The files riccati-tf writes (atlas.json, design.json, ...) are made
    by it.

    Parameters
    ----------
    obj : object
        What `to_jsonable` accepts.

    Returns
    -------
    bytes
        The document; json.loads reads it, and so does every strict JSON parser.

    Raises
    ------
    RecursionError
        When `obj` contains itself.

    See Also
    --------
    to_jsonable : the conversion.

    References
    ----------
    .. [1] T. Bray (ed.), RFC 8259, 2017 (no NaN or Infinity literals).

    Examples
    --------
    >>> import json
    >>> from riccati_tf.io.serialize import json_document
    >>> doc = json.loads(json_document({"rate": [1.0, float("nan")], "T": float("inf")}))
    >>> doc["rate"], doc["T"], doc["non_finite"]["values"]
    ([1.0, None], None, {'rate[1]': 'NaN', 'T': 'Infinity'})
    """
    found: dict[str, str] = {}
    data = _plain(obj, "", found)
    if found and isinstance(data, dict):
        data["non_finite"] = {"note": NON_FINITE_NOTE, "values": found}
    return json.dumps(data, indent=1, allow_nan=False, ensure_ascii=False).encode("utf-8")


def params_json(p: Params) -> dict[str, Any]:
    """A Params as the mapping of a spec: {A, b, V, B} for one dense head, else {A, b, heads}
    with each head as given: a dense pair {V, B} or its factors {Q, K, V, O} (B_h = KᵀQ,
    V_h = OV). With dense heads it is what `riccati-tf certify` and `flow` read; every form is
    what `params_from_json` reads back.

    Parameters
    ----------
    p : Params
        The layer.

    Returns
    -------
    dict
        The mapping (numpy arrays as they are: `to_jsonable` converts them).

    Raises
    ------
    TypeError
        When p is not a Params.

    See Also
    --------
    params_from_json : the inverse.
    to_jsonable : converts Params through it.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §1 (a layer's A, b and heads (V_h, B_h), B_h = KᵀQ).

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf import Head, Params
    >>> from riccati_tf.io.serialize import params_json
    >>> sorted(params_json(Params(A=-np.eye(2), V=np.eye(2), B=np.eye(2))))
    ['A', 'B', 'V', 'b']
    >>> one = np.ones((1, 2))
    >>> p = Params(A=-np.eye(2), heads=[(np.eye(2), np.eye(2)), Head(one, one, one, one.T)])
    >>> [sorted(h) for h in params_json(p)["heads"]]
    [['B', 'V'], ['K', 'O', 'Q', 'V']]
    """
    if not isinstance(p, Params):
        raise TypeError(f"p must be a Params, got {type(p).__name__}")
    out: dict[str, Any] = {"A": p.A, "b": p.b}
    heads = [{"V": p.heads[h][0], "B": p.heads[h][1]} if f is None else
             {"Q": f.Q, "K": f.K, "V": f.V, "O": f.O} for h, f in enumerate(p.factors)]
    if len(heads) == 1 and p.factors[0] is None:
        out.update(heads[0])
    else:
        out["heads"] = heads
    return out


#: the keys of a head in `params_json`: a dense pair, or factors
HEAD_KEYS = ({"V", "B"}, {"Q", "K", "V", "O"})


def params_from_json(data: Any) -> Params:
    """The Params of a `params_json` / `to_jsonable` mapping: the inverse of the conversion.

    {A, b, V, B} is one dense head, {A, b, heads} several, each head {V, B} (dense) or
    {Q, K, V, O} (a `Head`); a JSON round trip gives a layer equal entry for entry (floats
    print to the shortest string that reads back to the same double).

    Parameters
    ----------
    data : mapping
        The mapping, with nested lists of numbers (as json.loads gives) or arrays.

    Returns
    -------
    Params
        The layer.

    Raises
    ------
    InvalidInputError
        When data is not such a mapping (a key missing or unknown, a head of neither form), or
        its arrays are refused by Params (null where a number was NaN, shapes).

    See Also
    --------
    params_json : the conversion it inverts.
    riccati_tf.io.spec.parse_params : reads layers of spec files (dense heads).

    References
    ----------
    .. [1] riccati_tf theory, SPEC §1.

    Examples
    --------
    >>> import json
    >>> import numpy as np
    >>> from riccati_tf import Params
    >>> from riccati_tf.io.serialize import params_from_json, to_jsonable
    >>> p = Params(A=-np.eye(2), heads=[(np.eye(2), np.eye(2)), (-np.eye(2), np.eye(2))])
    >>> q = params_from_json(json.loads(json.dumps(to_jsonable(p))))
    >>> all(np.array_equal(x, y) for x, y in zip(p.heads[1], q.heads[1]))
    True
    """
    keys = set(data) if isinstance(data, dict) else None
    if keys is None or not {"A", "b"} <= keys or keys - {"A", "b"} not in ({"V", "B"},
                                                                           {"heads"}):
        raise InvalidInputError(f"not a layer's JSON mapping {{A, b, V, B}} or {{A, b, heads}}: "
                                f"got {sorted(keys) if keys is not None else type(data).__name__}")
    if "heads" not in keys:
        return Params(A=data["A"], b=data["b"], V=data["V"], B=data["B"])
    heads = data["heads"]
    if not isinstance(heads, list) or not all(isinstance(h, dict) and set(h) in HEAD_KEYS
                                              for h in heads):
        raise InvalidInputError("heads: each must be a mapping {V, B} or {Q, K, V, O}")
    return Params(A=data["A"], b=data["b"], heads=[
        (h["V"], h["B"]) if set(h) == HEAD_KEYS[0] else Head(h["Q"], h["K"], h["V"], h["O"])
        for h in heads])

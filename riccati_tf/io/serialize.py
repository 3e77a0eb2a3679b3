"""Plain JSON values from results: dataclasses, numpy arrays and scalars; NaN/±Inf become None
(strict JSON has no non-finite numbers), complex numbers {"real": x, "imag": y}, sets sorted
lists and paths strings. A dataclass field declared with metadata {"serialize": False} (machinery
such as what a trajectory's dense output integrates from, not a result) is left out. A layer
(`Params`) becomes the mapping of a spec, its heads as given (dense pairs {V, B} or factors
{Q, K, V, O}), which `params_from_json` reads back to an equal layer."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InvalidInputError
from ..state.params import Head, HeadPairs, Params

__all__ = ["params_from_json", "params_json", "to_jsonable"]


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
    if isinstance(obj, Params):
        return to_jsonable(params_json(obj))
    if isinstance(obj, HeadPairs):
        return [to_jsonable({"V": V, "B": B}) for V, B in obj]
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

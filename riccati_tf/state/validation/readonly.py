"""Immutable objects whose arrays stay read-only through pickle and copy."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

__all__ = ["ReadOnlyArrays"]


class ReadOnlyArrays:
    """Mixin for the immutable objects (a layer, a Gaussian, a head, an equilibrium) whose arrays
    are read-only.

    numpy unpickles and deep-copies arrays writeable, so `__setstate__` (which pickle and
    copy.deepcopy call) sets the arrays held in the instance's attributes, directly or in tuples
    and lists, read-only again: a layer sent to a worker process (a Dask sweep) stays immutable,
    and the values cached from its arrays stay valid.

    Raises
    ------
    ValueError
        From numpy, on a later attempt to write into one of the arrays.

    See Also
    --------
    riccati_tf.Params : a layer (its arrays, heads and cached values).
    riccati_tf.Gaussian : a state N(m, Σ).

    References
    ----------
    .. [1] Python documentation, "pickle — Pickling class instances" (``__setstate__``).

    Examples
    --------
    >>> import pickle
    >>> import numpy as np
    >>> from riccati_tf import Params
    >>> p = pickle.loads(pickle.dumps(Params(A=-np.eye(2))))
    >>> p.A.flags.writeable
    False
    """

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        _read_only(state.values())


def _read_only(values: Iterable[object]) -> None:
    for v in values:
        if isinstance(v, np.ndarray):
            v.setflags(write=False)
        elif isinstance(v, tuple | list):
            _read_only(v)

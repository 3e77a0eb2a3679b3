"""A progress callback for the long loops of this package, quiet when stderr is not a terminal."""

from __future__ import annotations

import sys
from collections.abc import Callable

__all__ = ["tty_progress"]


def tty_progress(label: str) -> Callable[[int, int], None] | None:
    """A progress callback progress(i, n) for the long loops of the package.

    The loops over layers and sequences (`predict_moments`, `atlas`, `compare`) call
    progress(i, n) after step i of n; this one draws a tqdm bar.

    Parameters
    ----------
    label : str
        The name of the bar.

    Returns
    -------
    callable (int, int) -> None, or None
        progress(i, n) drawing a tqdm bar named `label`, disabled (no output) when stderr is
        not a TTY; None when tqdm is not installed.

    Raises
    ------
    ImportError
        Never: without tqdm the result is None.

    See Also
    --------
    predict_moments : takes a progress callback.
    atlas : takes a progress callback.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers" (the loops it
       reports on).

    Examples
    --------
    Under doctest stderr is not a terminal: the bar draws nothing.

    >>> from riccati_tf.empirical.encoders import tty_progress
    >>> progress = tty_progress("layers")
    >>> for i in (1, 2):
    ...     progress(i, 2)
    """
    try:
        import tqdm
    except ImportError:
        return None
    bar = None

    def progress(i: int, n: int) -> None:
        nonlocal bar
        if bar is None:
            bar = tqdm.tqdm(total=n, desc=label, disable=not sys.stderr.isatty())
        bar.update(i - bar.n)
        if i >= n:
            bar.close()

    return progress

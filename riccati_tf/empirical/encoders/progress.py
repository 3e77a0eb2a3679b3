"""A progress callback for the long loops of this package, quiet when stderr is not a terminal."""

from __future__ import annotations

import sys
from collections.abc import Callable


def tty_progress(label: str) -> Callable[[int, int], None] | None:
    """progress(i, n) drawing a tqdm bar named `label`, disabled (no output) when stderr is not
    a TTY; None when tqdm is not installed."""
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

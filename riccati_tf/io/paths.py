"""Paths inside the JSON files an output folder holds, written relative to that folder.

A results folder is moved, archived and shared: the files it names (its own figures, the
model folder and the text it was computed from) are written relative to it, so that no
absolute path of the machine that made it is kept and the references survive a move of the
folder together with its inputs.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = ["relative_paths"]


def _replacements(folder: Path, paths: Iterable[str | Path | None]) -> list[tuple[str, str]]:
    """(as written, relative to folder) for the folder's own prefix and each given path, the
    longest first (a path is never replaced inside a longer one)."""
    root = Path(folder).resolve()
    pairs = {str(Path(folder)) + os.sep: "", str(root) + os.sep: ""}
    for p in paths:
        if p is None:
            continue
        absolute = Path(p).resolve()
        try:
            rel = os.path.relpath(absolute, root)
        except ValueError:  # another drive: the name alone
            rel = absolute.name
        for written in {str(p), str(absolute)}:
            if written not in ("", "."):
                pairs[written] = rel
    return sorted(pairs.items(), key=lambda kv: -len(kv[0]))


def relative_paths(numbers: Any, folder: str | Path, paths: Iterable[str | Path | None] = ()
                   ) -> Any:
    """numbers (nested dicts, lists and strings, as json.dumps takes them) with every file of
    `folder` written by its name, and every given path relative to the folder.

    Parameters
    ----------
    numbers : JSON-ready data
        The numbers to write into a file of the folder.
    folder : str or Path
        The output folder.
    paths : iterable of str, Path or None
        The inputs named in the numbers (a model folder, a text file; None skipped), as the
        user gave them.

    Returns
    -------
    object
        The same structure with the strings rewritten (the input is not changed).

    Raises
    ------
    OSError
        From the file system when a path cannot be resolved.

    See Also
    --------
    riccati_tf.io.serialize.json_document : the JSON the rewritten numbers go into.

    References
    ----------
    .. [1] Python's os.path.relpath.

    Examples
    --------
    >>> relative_paths({"figure": "/tmp/out/a.png", "model_path": "/tmp/model",
    ...                 "note": "text '/tmp/model/t.txt': 3 tokens"}, "/tmp/out", ["/tmp/model"])
    {'figure': 'a.png', 'model_path': '../model', 'note': "text '../model/t.txt': 3 tokens"}
    >>> relative_paths({"other": "/tmp/model2/x"}, "/tmp/out", ["/tmp/model"])
    {'other': '/tmp/model2/x'}
    """
    pairs = _replacements(Path(folder), paths)

    def rewrite(x: Any) -> Any:
        if isinstance(x, str):
            for old, new in pairs:  # a folder's prefix, or a whole path (not a longer name's start)
                tail = "" if old.endswith(os.sep) else r"(?![\w.\-])"
                x = re.sub(re.escape(old) + tail, new.replace("\\", r"\\"), x)
            return x
        if isinstance(x, dict):
            return {k: rewrite(v) for k, v in x.items()}
        if isinstance(x, list | tuple):
            return [rewrite(v) for v in x]
        return x

    return rewrite(numbers)

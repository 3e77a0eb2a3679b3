"""Run the command line in-process for hostile cases: refusals become CleanError (exit 2/3 with
one line on stderr), exit 1 a leaked bug, exit 0 returns the output for the case to verify."""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
from pathlib import Path

from riccati_tf.app.cli import main

from . import CleanError


class LeakedError(RuntimeError):
    """The CLI exited 1 ("unexpected error"): a bug reached the user."""


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `riccati-tf argv` run in this process."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse errors exit 2 by themselves
            code = exc.code if isinstance(exc.code, int) else 1
    return code, out.getvalue(), err.getvalue()


def judge(code: int, out: str, err: str) -> str:
    """Raise CleanError for exit 2/3 with one stderr line, LeakedError for anything else but 0;
    return stdout on success."""
    lines = [ln for ln in err.splitlines() if ln.strip()]
    if code in (2, 3):
        if len(lines) == 1 or (code == 2 and lines and lines[0].startswith("usage:")):
            raise CleanError(lines[-1])
        raise LeakedError(f"exit {code} with {len(lines)} stderr lines: {err[:300]!r}")
    if code != 0:
        raise LeakedError(f"exit {code}: {err.strip()[:300]}")
    return out


def cli(command: str, spec=None, *args: str, text: str | bytes | None = None,
        suffix: str = ".json") -> str:
    """Write `spec` (as JSON) or `text` to a spec file, run `riccati-tf command FILE args` and
    judge the outcome."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"spec{suffix}"
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text if text is not None else json.dumps(spec))
        argv = [command, str(path), *(a.replace("{tmp}", tmp) for a in args)]
        return judge(*run_cli(argv))

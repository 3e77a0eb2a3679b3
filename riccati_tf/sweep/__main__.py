"""`python -m riccati_tf.sweep SPEC OUT [--scheduler ADDR] [--workers N]`: run or resume a sweep.

The same as `riccati-tf sweep` but without Dask by default (scheduler "inprocess"); prints one
line per finished chunk so that a caller can follow the progress.
"""

from __future__ import annotations

import argparse
import sys

from ..errors import InvalidInputError, SolverError
from ..io.spec import load_spec
from .runner import run_sweep
from .store import exit_process


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m riccati_tf.sweep",
                                     description="run or resume a parameter sweep")
    parser.add_argument("spec", help="sweep spec file (.json, .yaml or .yml)")
    parser.add_argument("out", help="results folder (created, or resumed when it exists)")
    parser.add_argument("--scheduler", default="inprocess",
                        help="'inprocess' (default), 'local' or tcp://HOST:PORT")
    parser.add_argument("--workers", type=int, default=None, help="LocalCluster workers")
    args = parser.parse_args(argv)
    try:
        result = run_sweep(load_spec(args.spec), args.out, scheduler=args.scheduler,
                           n_workers=args.workers,
                           progress=lambda done, total: print(f"chunk {done}/{total}",
                                                              flush=True),
                           log=lambda note: print(f"sweep: {note}", file=sys.stderr,
                                                  flush=True))
    except InvalidInputError as exc:
        print(f"sweep: error: {exc}", file=sys.stderr)
        return 2
    except SolverError as exc:
        print(f"sweep: numerical failure: {exc}", file=sys.stderr)
        return 3
    print(f"{result.n_configs} configurations in {result.results_path} "
          f"({result.chunks_computed} chunks computed, {result.chunks_resumed} resumed)")
    return 0


if __name__ == "__main__":
    exit_process(main())

"""Handlers for `riccati-tf sweep` and `riccati-tf sweep-plot` (registered by riccati_tf.app.cli).

    riccati-tf sweep SPEC [--out DIR] [--scheduler ADDR] [--workers N] [--json] [--plot FILE]
    riccati-tf sweep-plot RESULTS --plot FILE [--x AXIS] [--y AXIS]

As in every subcommand, --out names a folder of results and --plot a PNG file; `sweep-plot
--out FILE`, its older spelling, still works and says so on stderr.

Each handler takes (args, spec) and returns (result mapping, figure or None), like the other
subcommands; errors are InvalidInputError (exit 2) with one sentence. What a resume repaired
(a chunk recomputed after failing its check) is one `sweep: ...` line on stderr each and the
`notes` of the result.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..io.figures import Figure

__all__: list[str] = []


def add_sweep_arguments(sub: argparse._SubParsersAction) -> None:
    """The options of the two subcommands, on the subparsers `sub` of riccati_tf.app.cli."""
    sweep = sub.choices["sweep"]
    sweep.add_argument("--out", metavar="DIR", default=None,
                       help="results folder (default: SPEC without its suffix + '.sweep'); a "
                            "folder holding this spec's unfinished sweep is resumed")
    sweep.add_argument("--scheduler", metavar="ADDR", default="auto",
                       help="'auto' (default): in this process, or a Dask LocalCluster when "
                            "the sweep is large (runner.AUTO_DASK_WORK) and Dask is installed; "
                            "'inprocess': no Dask; 'local': a LocalCluster sized to this "
                            "machine; tcp://HOST:PORT: a running Dask scheduler")
    sweep.add_argument("--workers", metavar="N", type=_positive_count, default=None,
                       help="worker processes of the LocalCluster, ≥ 1 (default: one per CPU; "
                            "given with scheduler 'auto', a LocalCluster is used)")
    plot = sub.choices["sweep-plot"]
    plot.add_argument("results", help="a sweep's results folder, or its results file "
                                      "(results.parquet or results.npz)")
    plot.add_argument("--out", metavar="FILE", default=None, dest="out",
                      help=argparse.SUPPRESS)  # the older name of --plot
    plot.add_argument("--x", metavar="AXIS", default=None, help="horizontal axis (default: "
                      "the spec's plot.x, else its first axis)")
    plot.add_argument("--y", metavar="AXIS", default=None, help="vertical axis")


def _positive_count(text: str) -> int:
    """The integer ≥ 1 that `text` spells (argparse type of --workers; argparse reports an
    ArgumentTypeError on one line, exit 2): a count below 1 is refused whether or not the sweep
    has work left (a finished store accepted --workers -3 and exited 0)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer ≥ 1 (worker processes), "
                                         f"got {text!r}")
    return value


def default_out(spec_path: str) -> Path:
    """SPEC without its suffix + '.sweep' (phase.yaml → phase.sweep/)."""
    return Path(spec_path).with_suffix(".sweep")


#: progress lines when stderr is not a terminal (a log): at every PROGRESS_STEP of the chunks
PROGRESS_STEP = 0.1


def sweep_text(result: dict[str, Any]) -> str:
    """The summary `riccati-tf sweep` prints: where the results are, the work, and the count of
    each regime (largest first); the notes only when there are some."""
    counts = sorted(result["counts"].items(), key=lambda kv: (-kv[1], kv[0]))
    lines = [f"results      {result['results']}",
             f"configs      {result['n_configs']} in {result['n_chunks']} chunks "
             f"({result['chunks_computed']} computed, {result['chunks_resumed']} resumed; "
             f"{result['scheduler']}, {result['wall_time_s']:g} s)",
             "regimes      " + (", ".join(f"{name} {n}" for name, n in counts) or "—")]
    lines += [f"note         {note}" for note in result["notes"]]
    return "\n".join(lines)


def cmd_sweep(args: argparse.Namespace, spec: dict
              ) -> tuple[dict[str, Any], str, Figure | None]:
    """Run (or resume) the sweep of `spec`; progress on stderr (every chunk on a terminal, every
    PROGRESS_STEP of them in a log)."""
    from .family import parse_family
    from .plot import diagram_inputs, phase_diagram
    from .runner import run_sweep

    out = Path(args.out) if args.out else default_out(args.spec)
    terminal = sys.stderr is not None and sys.stderr.isatty()
    shown = [-1.0]

    def progress(done: int, total: int) -> None:
        if sys.stderr is None:  # started with stderr closed
            return
        if not terminal and done < total and done / total < shown[0] + PROGRESS_STEP:
            return
        shown[0] = done / total
        print(f"sweep: {done}/{total} chunks", file=sys.stderr, flush=True)

    def log(note: str) -> None:
        print(f"sweep: {note}", file=sys.stderr, flush=True)

    with warnings.catch_warnings(record=True) as caught:  # a deprecated field: one note each
        warnings.simplefilter("always", DeprecationWarning)
        parse_family(spec)
    for warning in caught:
        log(f"note: {warning.message}")
    res = run_sweep(spec, out, scheduler=args.scheduler, n_workers=args.workers,
                    progress=progress, log=log)
    result = {"results": str(res.results_path), "n_configs": res.n_configs,
              "n_chunks": res.n_chunks, "chunks_computed": res.chunks_computed,
              "chunks_resumed": res.chunks_resumed, "scheduler": res.scheduler,
              "wall_time_s": round(res.wall_time, 3), "analysis": res.analysis,
              "counts": res.counts, "notes": list(res.notes)}
    fig = phase_diagram(*diagram_inputs(res.out_dir)) if args.plot else None
    return result, sweep_text(result), fig


def cmd_sweep_plot(args: argparse.Namespace, _spec: dict | None) -> tuple[None, None]:
    """Write the phase diagram of a results folder or file to --plot (or its older name
    --out)."""
    from ..errors import InvalidInputError
    from .plot import plot_sweep

    if args.plot is not None and args.out is not None:
        raise InvalidInputError("give the PNG file once: --plot FILE (--out is its older name)")
    if args.plot is None and args.out is None:
        raise InvalidInputError("--plot FILE: the PNG file to write is required")
    path = plot_sweep(args.results, args.plot or args.out, x=args.x, y=args.y)
    if args.out is not None and sys.stderr is not None:  # after success: an error is one line
        print("sweep-plot: --out FILE is the older name of --plot FILE (a figure is --plot in "
              "every subcommand, --out a folder)", file=sys.stderr)
    print(f"phase diagram written to {path}")
    return None, None


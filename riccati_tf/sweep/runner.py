"""Run a sweep: chunks of a Family → analysis columns → the chunked store, in-process or on Dask.

One code path: `run_sweep` lists the chunks the manifest lacks and hands `compute_chunk(spec, c)`
to an executor — in this process, or as Dask futures on a cluster (`tcp://HOST:PORT`, or a
LocalCluster started here for scheduler="local") — and writes each returned chunk through the
single-writer ResultStore as it arrives. With no scheduler named ("auto"), a sweep runs in this
process unless its remaining work is large (`AUTO_DASK_WORK`) and Dask is installed.
`compute_chunk` is a pure function of (spec, c), so a chunk computed on any worker, in any
order, or again after a crash, gives the same rows.

Analyses (columns besides config_id and the axis values):

- certify: regime, theorem, exact, global, rate, blowup_time, threshold, path — scalar-V cases
  by the batched classifier (path "batched"), the rest by `certify` one by one (path
  "certify"); NaN stands for None.
- flow: status, blowup_time, cov_eig_min, cov_eig_max, mean_norm at t_final (or, after a
  blow-up at T*, at the last time before T* of flow's default grid of DEFAULT_OUTPUTS times),
  by `flow(..., method="auto")` per case with only the output times these columns read
  (`flow_end`).
- particles: status, t_end, flow_cov_eig_min/max, particle_cov_eig_min/max, rel_diff
  (‖Σ_particles − Σ_flow‖_F / ‖Σ_flow‖_F at t_end = t_final, or T*/2 after a blow-up), N tokens
  drawn with default_rng([seed, config_id]).

A configuration on which the per-case call raises gets regime/status "error" and the exception
in `theorem` (certify) or `error` (flow, particles): one bad layer does not end a sweep.
dask and distributed are imported only when a Dask scheduler is used.
"""

from __future__ import annotations

import importlib.util
import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import InvalidInputError, SolverError
from ..flows.integrate import DEFAULT_OUTPUTS, Trajectory, flow
from ..stability.certificates import EXACT_MAX_D, certify
from ..state.params import Gaussian, Params
from .batched import classify_scalar, g_matrix, quadratic_constants, scalar_values
from .family import ANALYSIS_COLUMNS, Chunk, Family, parse_family
from .store import ResultStore, read_results
from .tables import DASK_EXTRA, ResultsTable

__all__ = ["SweepResult", "certify_columns", "compute_chunk", "run_sweep"]

#: Dask: chunks in flight per worker (back-pressure: the client never holds every future)
IN_FLIGHT_PER_WORKER = 4
#: seconds to wait for a Dask scheduler given by address
CONNECT_TIMEOUT = "10s"
#: scheduler "auto": a LocalCluster once the configurations left to compute, weighted by their
#: analysis (AUTO_WORK_WEIGHT), reach this, on a machine of ≥ 2 CPUs with Dask installed; else
#: in process. Starting a LocalCluster costs seconds; the batched certify path classifies about
#: 10⁴ scalar-V layers a second, a flow or particle run takes milliseconds to a second.
AUTO_DASK_WORK = 100_000
AUTO_WORK_WEIGHT = {"certify": 1, "flow": 100, "particles": 1000}


def _none_nan(x: float | None) -> float:
    return np.nan if x is None else float(x)


# --------------------------------------------------------------------------------- analyses


def _error_text(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}"[:300]


def certificate_row(params: Params, cov0: npt.ArrayLike, mean0: npt.ArrayLike | None) -> dict:
    """The certify columns (family.ANALYSIS_COLUMNS) of `certify(params, cov0, mean0)`. A
    configuration on which certify raises becomes a row with regime "error" and the exception
    in `theorem`: one bad layer does not end a sweep of thousands, and the row says what
    happened."""
    try:
        c = certify(params, cov0, mean0)
    except Exception as exc:  # recorded in the row, see the docstring
        return {"regime": "error", "theorem": _error_text(exc), "exact": False,
                "global": False, "rate": np.nan, "blowup_time": np.nan, "threshold": np.nan,
                "path": "certify"}
    return {"regime": c.regime, "theorem": c.theorem, "exact": bool(c.exact),
            "global": bool(c.global_), "rate": _none_nan(c.rate),
            "blowup_time": _none_nan(c.blowup_time), "threshold": _none_nan(c.threshold),
            "path": "certify"}


def _empty(n: int, kinds: dict[str, str]) -> dict[str, np.ndarray]:
    """Columns {name: array of n} initialised to "" / False / NaN by kind."""
    make = {"str": lambda: np.full(n, "", dtype=object), "bool": lambda: np.zeros(n, bool),
            "float": lambda: np.full(n, np.nan)}
    return {name: make[kind]() for name, kind in kinds.items()}


def _fill_per_case(out: dict, chunk: Chunk, indices: Any,
                   row_fn: Callable[[Chunk, int], dict]) -> None:
    for i in indices:
        for name, value in row_fn(chunk, int(i)).items():
            out[name][i] = value


def certify_columns(chunk: Chunk, *, batched: bool = True) -> dict[str, np.ndarray]:
    """Certificates for every configuration of the chunk, batched where certify's verdict is
    shown to be the same.

    Layers whose value matrices are exactly V_h = v_h I (Σ̇ = AΣ + ΣAᵀ − ΣGΣ,
    G = −Σ_h v_h(B_h + B_hᵀ)) go through `classify_scalar` (path "batched"); the cases it does
    not handle and every other layer go through `certify` one by one (path "certify"). Beyond
    EXACT_MAX_D the batched classifier gets the heads, so that certify's own (numerical, a few
    LAPACK calls) premises are decided case by case and only the theorem's work is stacked; up
    to it, cases the rounding margins leave open go to `certify` (its exact premises cost about
    as much). A configuration on which `certify` raises becomes a row with regime "error" and
    the exception in `theorem`.

    Parameters
    ----------
    chunk : Chunk
        The configurations, as `Family.chunk` returns them.
    batched : bool, default True
        False: `certify` for all (the per-case reference the batched path must reproduce).

    Returns
    -------
    dict of str to (n,) ndarray
        The certify columns (family.ANALYSIS_COLUMNS["certify"]): regime, theorem, exact,
        global, rate, blowup_time, threshold (NaN for None), path.

    Raises
    ------
    numpy.linalg.LinAlgError
        When a stacked eigensolver of the batched path fails on finite input (per-case
        failures are recorded in the rows, not raised).

    See Also
    --------
    riccati_tf.sweep.batched.classify_scalar : the batched classifier.
    riccati_tf.certify : the per-case certificate.
    compute_chunk : a chunk's full rows for any analysis.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up", and §6 "Certificates".

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf.sweep.family import parse_family
    >>> from riccati_tf.sweep.runner import certify_columns
    >>> spec = {"family": {"grid": {"v": [-1.0, 1.0], "a": [-0.5, 0.5]}},
    ...         "params": {"A": {"const": [[0, 0.3], [0, -0.6]], "a": [[1, 0], [0, 1]]},
    ...                    "B": [[1, 0.2], [0.2, 0.6]], "V": {"v": [[1, 0], [0, 1]]}},
    ...         "initial": {"cov": [[1, 0.3], [0.3, 0.5]]}}
    >>> chunk = parse_family(spec).chunk(0)
    >>> fast, slow = certify_columns(chunk), certify_columns(chunk, batched=False)
    >>> fast["regime"].tolist(), fast["path"].tolist()
    (['collapses', 'converges', 'blows_up', 'blows_up'],
     ['batched', 'batched', 'batched', 'batched'])
    >>> bool(np.all(fast["regime"] == slow["regime"]))
    True
    >>> bool(np.allclose(fast["blowup_time"], slow["blowup_time"], equal_nan=True))
    True
    """
    n = len(chunk)
    out = _empty(n, ANALYSIS_COLUMNS["certify"])
    todo = np.arange(n)
    if batched:
        mask, v = scalar_values(chunk.V)
        idx = np.flatnonzero(mask)
        if idx.size:
            Vs, Bs = tuple(V[idx] for V in chunk.V), tuple(B[idx] for B in chunk.B)
            heads = (Vs, Bs) if chunk.A.shape[-1] > EXACT_MAX_D else None
            res = classify_scalar(chunk.A[idx], g_matrix(v[idx], Bs), chunk.cov[idx],
                                  quadratic_constants(Vs, Bs), heads=heads)
            done = idx[res.handled]
            h = res.handled
            for name, col in (("regime", res.regime), ("theorem", res.theorem),
                              ("exact", res.exact), ("global", res.global_),
                              ("rate", res.rate), ("blowup_time", res.blowup_time),
                              ("threshold", res.threshold)):
                out[name][done] = col[h]
            out["path"][done] = "batched"
            todo = np.setdiff1d(todo, done)
    _fill_per_case(out, chunk, todo,
                   lambda ch, i: certificate_row(ch.params(i), ch.cov[i], ch.mean[i]))
    return out


def flow_end(params: Params, g0: Gaussian, t_final: float) -> Trajectory:
    """The trajectory of `flow(params, g0, t_final)` (default grid: DEFAULT_OUTPUTS times) cut to
    what the flow columns read — its status, T* and its last state — at two output times each:
    flow on [0, t_final]; after a blow-up at T*, a second flow with outputs [0, t_k] (t_k the
    last default-grid time before T*) for the state, with the status and T* of the first.
    Where that second flow has no state at t_k, the default grid itself is run."""
    tr = flow(params, g0, t_final, t_eval=[0.0, t_final])
    if tr.blowup_time is None:
        return tr
    grid = np.linspace(0.0, t_final, DEFAULT_OUTPUTS)
    t_k = grid[grid < tr.blowup_time][-1]
    if t_k == 0.0:
        return tr
    # the closed form's state at t_k does not depend on the horizon; Runge–Kutta's steps do, so
    # it keeps the horizon t_final (its dense output gives the default grid's state at t_k)
    horizon = t_k if tr.method == "exact" else t_final
    try:
        cut = flow(params, g0, horizon, t_eval=[0.0, t_k])
    except SolverError:
        cut = None
    if cut is None or cut.t[-1] != t_k:
        return flow(params, g0, t_final)
    return replace(cut, status=tr.status, blowup_time=tr.blowup_time,
                   blowup_direction=tr.blowup_direction, blowup_kind=tr.blowup_kind)


def _flow_row(family: Family, chunk: Chunk, i: int) -> dict:
    assert family.t_final is not None  # parse_family requires t_final for the flow analysis
    try:
        tr = flow_end(chunk.params(i), Gaussian(chunk.mean[i], chunk.cov[i]), family.t_final)
    except Exception as exc:  # recorded in the row, as in certificate_row
        return {"status": "error", "error": _error_text(exc)}
    eig = np.linalg.eigvalsh(tr.cov[-1])
    return {"status": tr.status, "blowup_time": _none_nan(tr.blowup_time),
            "cov_eig_min": eig[0], "cov_eig_max": eig[-1],
            "mean_norm": float(np.linalg.norm(tr.mean[-1]))}


def flow_columns(family: Family, chunk: Chunk) -> dict[str, np.ndarray]:
    out = _empty(len(chunk), ANALYSIS_COLUMNS["flow"])
    _fill_per_case(out, chunk, range(len(chunk)), lambda ch, i: _flow_row(family, ch, i))
    return out


def _particle_row(family: Family, chunk: Chunk, i: int) -> dict:
    from ..empirical.particles import simulate

    settings = family.particles
    params, g0 = chunk.params(i), Gaussian(chunk.mean[i], chunk.cov[i])
    T = family.t_final
    assert T is not None  # parse_family requires t_final for the particles analysis
    try:
        probe = flow(params, g0, T, t_eval=[0.0, T])
        t_end = T if probe.blowup_time is None else 0.5 * probe.blowup_time
        ref = probe if probe.blowup_time is None else flow(params, g0, t_end,
                                                           t_eval=[0.0, t_end])
        rng = np.random.default_rng([settings["seed"], int(chunk.ids[i])])
        run = simulate(params, g0.sample(settings["n_tokens"], rng), t_end,
                       n_steps=settings["n_steps"])
    except Exception as exc:  # recorded in the row, as in certificate_row
        return {"status": "error", "error": _error_text(exc)}
    S_flow, S_part = ref.cov[-1], run.cov[-1]
    fe, pe = np.linalg.eigvalsh(S_flow), np.linalg.eigvalsh(S_part)
    scale = np.linalg.norm(S_flow)
    return {"status": probe.status, "t_end": t_end, "flow_cov_eig_min": fe[0],
            "flow_cov_eig_max": fe[-1], "particle_cov_eig_min": pe[0],
            "particle_cov_eig_max": pe[-1],
            "rel_diff": float(np.linalg.norm(S_part - S_flow) / scale) if scale > 0 else np.nan}


def particle_columns(family: Family, chunk: Chunk) -> dict[str, np.ndarray]:
    out = _empty(len(chunk), ANALYSIS_COLUMNS["particles"])
    _fill_per_case(out, chunk, range(len(chunk)), lambda ch, i: _particle_row(family, ch, i))
    return out


ANALYZERS: dict[str, Callable[[Family, Chunk], dict[str, np.ndarray]]] = {
    "certify": lambda _family, chunk: certify_columns(chunk),
    "flow": flow_columns,
    "particles": particle_columns,
}


#: the analysis columns of each analysis, in their order in the results
_FAMILIES: dict[str, Family] = {}


def family_of(spec: dict) -> Family:
    """parse_family with a per-process cache keyed by the spec's JSON (a worker parses a spec
    once, not once per chunk). Key order is kept: the axes' order fixes the grid's ids."""
    key = json.dumps(spec)
    if key not in _FAMILIES:
        if len(_FAMILIES) >= 4:
            _FAMILIES.clear()
        _FAMILIES[key] = parse_family(spec)
    return _FAMILIES[key]


def compute_chunk(spec: dict, index: int) -> tuple[int, dict[str, np.ndarray]]:
    """Rows of chunk `index`: config_id, the axis values, then the analysis columns.

    A pure function of (spec, index): a chunk computed on any worker, in any order, or again
    after a crash, gives the same rows. The analysis is the spec's: certify
    (`certify_columns`), flow (status, T* and the final spectrum of Σ̇ = AΣ + ΣAᵀ + ... by
    `riccati_tf.flow`) or particles (the token cloud against the Gaussian flow). The spec is
    parsed once per process (a small cache keyed by its JSON).

    Parameters
    ----------
    spec : dict
        The sweep spec mapping (`parse_family`).
    index : int
        The chunk, 0 ≤ index < Family.n_chunks.

    Returns
    -------
    index : int
        The chunk computed (as given).
    columns : dict of str to (n,) ndarray
        config_id, one column per axis, then the analysis columns (family.ANALYSIS_COLUMNS).

    Raises
    ------
    SpecError
        (an InvalidInputError) when the spec is invalid, naming the field.
    IndexError
        When index is outside 0..n_chunks − 1.

    See Also
    --------
    run_sweep : runs every chunk and stores the rows.
    certify_columns : the certify analysis of a chunk.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".

    Examples
    --------
    >>> from riccati_tf.sweep.runner import compute_chunk
    >>> spec = {"family": {"grid": {"v": [-1.0, 1.0], "a": [-0.5, 0.5]}},
    ...         "params": {"A": {"const": [[0, 0.3], [0, -0.6]], "a": [[1, 0], [0, 1]]},
    ...                    "B": [[1, 0.2], [0.2, 0.6]], "V": {"v": [[1, 0], [0, 1]]}},
    ...         "initial": {"cov": [[1, 0.3], [0.3, 0.5]]}}
    >>> index, columns = compute_chunk(spec, 0)
    >>> index, list(columns)[:4], columns["regime"].tolist()
    (0, ['config_id', 'v', 'a', 'regime'], ['collapses', 'converges', 'blows_up', 'blows_up'])
    """
    family = family_of(spec)
    chunk = family.chunk(index)
    columns = {"config_id": chunk.ids, **chunk.values}
    columns.update(ANALYZERS[family.analysis](family, chunk))
    return index, columns


# --------------------------------------------------------------------------------- executors


class InProcess:
    """Runs the chunks one after another in this process."""

    description = "in-process"

    def imap_unordered(self, fn: Callable[[dict, int], Any], spec: dict,
                       indices: list[int]) -> Iterator:
        for c in indices:
            yield fn(spec, c)

    def close(self) -> None:
        pass


class DaskExecutor:
    """Runs the chunks as Dask futures: on the scheduler at `address`, or on a LocalCluster of
    n_workers single-threaded worker processes started here (address "local")."""

    def __init__(self, address: str, n_workers: int | None) -> None:
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            raise InvalidInputError(f"the scheduler {address!r} needs Dask: install the extra "
                                    f"`{DASK_EXTRA}`, or use the scheduler 'inprocess'") \
                from None
        self._cluster = None
        if address == "local":
            workers = n_workers or os.cpu_count() or 1
            self._cluster = LocalCluster(n_workers=workers, threads_per_worker=1,
                                         processes=True, dashboard_address=None)
            self.client = Client(self._cluster)
            self.description = f"LocalCluster ({workers} worker processes)"
        else:
            try:
                self.client = Client(address, timeout=CONNECT_TIMEOUT)
            except OSError as exc:
                raise InvalidInputError(f"cannot reach the Dask scheduler {address}: {exc}") \
                    from None
            self.description = f"Dask scheduler {address}"

    def imap_unordered(self, fn: Callable[[dict, int], Any], spec: dict,
                       indices: list[int]) -> Iterator:
        from distributed import as_completed

        workers = max(1, len(self.client.scheduler_info(n_workers=-1).get("workers", {})))
        pending = iter(indices)
        first = [self.client.submit(fn, spec, c, pure=False)
                 for _, c in zip(range(IN_FLIGHT_PER_WORKER * workers), pending, strict=False)]
        queue = as_completed(first)
        for future in queue:
            result = future.result()
            future.release()
            nxt = next(pending, None)
            if nxt is not None:
                queue.add(self.client.submit(fn, spec, nxt, pure=False))
            yield result

    def close(self) -> None:
        self.client.close()
        if self._cluster is not None:
            self._cluster.close()


def auto_scheduler(analysis: str, n_configs: int) -> str:
    """The scheduler "auto" picks for `n_configs` configurations left to compute: "local" when
    their work (n_configs · AUTO_WORK_WEIGHT[analysis]) reaches AUTO_DASK_WORK, the machine has
    at least 2 CPUs and Dask is installed; else "inprocess"."""
    large = n_configs * AUTO_WORK_WEIGHT[analysis] >= AUTO_DASK_WORK
    if large and (os.cpu_count() or 1) > 1 and importlib.util.find_spec("distributed"):
        return "local"
    return "inprocess"


def make_executor(scheduler: str | None, n_workers: int | None) -> InProcess | DaskExecutor:
    """"inprocess": this process; "local": a LocalCluster sized to the machine (or n_workers);
    anything else: the address of a running Dask scheduler (tcp://HOST:PORT). ("auto" and
    None are resolved by `run_sweep` first.)"""
    if n_workers is not None and (isinstance(n_workers, bool) or not isinstance(n_workers, int)
                                  or n_workers < 1):
        raise InvalidInputError(f"n_workers must be a positive integer, got {n_workers!r}")
    if scheduler == "inprocess":
        return InProcess()
    if not isinstance(scheduler, str) or not scheduler or scheduler == "auto":
        raise InvalidInputError(f"scheduler must be an address such as tcp://HOST:PORT, "
                                f"'local', 'inprocess' or 'auto', got {scheduler!r}")
    return DaskExecutor(scheduler, n_workers)


# --------------------------------------------------------------------------------- entry point


@dataclass(frozen=True)
class SweepResult:
    """A finished sweep: where its rows are and how this run got them.

    Parameters
    ----------
    out_dir : pathlib.Path
        The results folder (manifest.json, chunks.jsonl, chunks/, the results file).
    results_path : pathlib.Path
        Its results file, results.parquet or results.npz (every row, sorted by config_id).
    n_configs : int
        The number of configurations (rows).
    n_chunks : int
        The number of chunks.
    chunks_computed : int
        Chunks computed by this run.
    chunks_resumed : int
        Chunks found finished and verified in the folder.
    scheduler : str
        Where the chunks ran ("in-process", a LocalCluster, a Dask scheduler address).
    wall_time : float
        Seconds the run took.
    analysis : str
        "certify", "flow" or "particles".
    counts : dict of str to int, optional
        Rows per regime (certify) or status (flow, particles).
    notes : tuple of str, optional
        What opening the folder found and repaired (a chunk file that failed its check and was
        recomputed, a torn record dropped), one sentence each.

    Raises
    ------
    TypeError
        When a field is missing (the dataclass constructor; `run_sweep` fills them).

    See Also
    --------
    run_sweep : returns it.
    riccati_tf.sweep.store.read_results : the results table of a folder.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".

    Examples
    --------
    >>> import tempfile
    >>> from riccati_tf.sweep import run_sweep
    >>> spec = {"family": {"grid": {"v": [-1.0, 1.0], "a": [-0.5, 0.5]}},
    ...         "params": {"A": {"const": [[0, 0.3], [0, -0.6]], "a": [[1, 0], [0, 1]]},
    ...                    "B": [[1, 0.2], [0.2, 0.6]], "V": {"v": [[1, 0], [0, 1]]}},
    ...         "initial": {"cov": [[1, 0.3], [0.3, 0.5]]}}
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     result = run_sweep(spec, f"{tmp}/sweep")
    ...     table = result.table()
    >>> result.n_configs, result.n_chunks, result.scheduler, result.results_path.stem
    (4, 1, 'in-process', 'results')
    >>> table["regime"].tolist()
    ['collapses', 'converges', 'blows_up', 'blows_up']
    """

    out_dir: Path
    results_path: Path
    n_configs: int
    n_chunks: int
    chunks_computed: int
    chunks_resumed: int
    scheduler: str
    wall_time: float
    analysis: str
    counts: dict[str, int] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def table(self) -> ResultsTable:
        """The results (sorted by config_id), read from `results_path`: a mapping
        {column: numpy array}, `riccati_tf.sweep.store.read_results`."""
        return read_results(self.results_path)

    def plot(self, ax: Any = None, *, x: str | None = None, y: str | None = None) -> Any:
        """The phase diagram of the sweep: the regime (or flow status) of every configuration
        over two axes of the family, and log₁₀ T* of those that blow up.

        `riccati_tf.sweep.plot.phase_diagram` of the results in `out_dir`: the regime of SPEC §5
        (or the flow's status) of each configuration over the axes x and y (default: the spec's
        ``plot: {x, y}`` recorded in the folder's manifest, else its first two axes) — a filled
        map on a full grid, else a scatter — and the blow-up times in a second panel. Like
        pandas' ``.plot()``: into `ax`, else into a new pyplot figure (``res.plot();
        plt.show()`` works in a script).

        Parameters
        ----------
        ax : matplotlib.axes.Axes or sequence of two Axes, optional
            Draw the regime panel into this Axes (the T* panel left out), or both panels into a
            pair (nothing global changes); default: a new two-panel pyplot figure.
        x : str, optional
            The horizontal axis (a column of the results).
        y : str, optional
            The vertical axis; default as for x.

        Returns
        -------
        matplotlib.axes.Axes or ndarray of two Axes
            The Axes given, or the two panels of the new figure (regime, T*).

        Raises
        ------
        InvalidInputError
            When the results cannot be read or x or y is not a column of them.

        See Also
        --------
        riccati_tf.sweep.plot.phase_diagram : the drawing, from columns.
        riccati_tf.sweep.plot.plot_sweep : the diagram of a results folder as a PNG file.

        References
        ----------
        .. [1] riccati_tf theory, SPEC §5 (the regimes over a family of layers).

        Examples
        --------
        A family over one axis, V = vI: a strip of regimes over v, T* on the right.

        >>> import tempfile
        >>> from riccati_tf.sweep import run_sweep
        >>> spec = {"family": {"grid": {"v": [-1.0, -0.5, 0.5, 1.0]}},
        ...         "params": {"A": [[0.2, 0], [0, -0.3]], "B": [[1, 0], [0, 1]],
        ...                    "V": {"v": [[1, 0], [0, 1]]}},
        ...         "initial": {"cov": [[1, 0], [0, 1]]}}
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     axes = run_sweep(spec, f"{folder}/strip").plot()
        >>> [(ax.get_title(), ax.get_ylabel()) for ax in axes]
        [('regime over v', 'regime'), ('', 'blow-up time T*')]
        """
        from ..io.figures import pyplot_axes
        from .plot import diagram_inputs, phase_diagram

        columns, x, y = diagram_inputs(self.out_dir, x, y)
        axes = pyplot_axes(ax, 1, 2, figsize=(11.0, 4.6))
        phase_diagram(columns, x, y, ax=axes)
        return axes


def run_sweep(spec: dict, out_dir: str | Path, *, scheduler: str | None = "auto",
              n_workers: int | None = None, storage: str | None = None,
              progress: Callable[[int, int], None] | None = None,
              log: Callable[[str], None] | None = None) -> SweepResult:
    """Map the spec's parameter family through its analysis, chunk by chunk, into out_dir.

    The family (`parse_family`) is a grid or random ensemble of layers affine in named axes;
    its analysis is certify (the SPEC §5 regime of Σ̇ = AΣ + ΣAᵀ + VΣBΣ + ΣBᵀΣVᵀ per layer,
    batched for scalar V), flow (the flow's status, T* and final spectrum) or particles. Each
    chunk is `compute_chunk(spec, c)`, a pure function, written through the single-writer store
    as it arrives. Resumes: chunks recorded in out_dir's manifest whose files verify (SHA-256,
    config ids) are skipped, the others recomputed, so an interrupted sweep ends with exactly
    the rows of an uninterrupted one.

    Parameters
    ----------
    spec : dict
        The sweep spec mapping (module docstring of `riccati_tf.sweep.family`).
    out_dir : str or pathlib.Path
        The results folder: created, or resumed when it holds this spec's sweep.
    scheduler : str, optional
        "auto" (the default; None too): this process, or a LocalCluster when the work left is
        large (`auto_scheduler`: AUTO_DASK_WORK, Dask installed); "inprocess" (this process),
        "local" (a LocalCluster of n_workers processes) or the address of a running Dask
        scheduler (tcp://HOST:PORT).
    n_workers : int, optional
        Worker processes of the LocalCluster (default one per CPU).
    storage : str, optional
        The files of a new folder: "parquet" (needs pyarrow) or "npz" (numpy only); default
        Parquet when pyarrow is installed, else npz. A resumed folder keeps its own.
    progress : callable (done, total) -> None, optional
        Called after every chunk written (and once at the start).
    log : callable (note) -> None, optional
        Called once per repair the opening made (also in SweepResult.notes).

    Returns
    -------
    SweepResult
        Where the rows are, the counts per regime or status, and how the run got them.

    Raises
    ------
    InvalidInputError
        An invalid spec (SpecError, naming the field); a folder holding another spec's results,
        a manifest that contradicts the spec, a folder another sweep is writing, a folder
        holding files of the store's names that no sweep wrote; an invalid scheduler or
        n_workers, an unreachable Dask scheduler or Dask not installed where a Dask scheduler
        is named; storage "parquet" (or a Parquet folder) without pyarrow.

    See Also
    --------
    riccati_tf.sweep.plot.plot_sweep : the phase diagram of the results.
    riccati_tf.sweep.store.read_results : the results table of a folder.
    riccati_tf.certify : the per-layer certificate a certify sweep records.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".

    Examples
    --------
    A 2 × 2 grid over v (V = vI) and a (A = [[a, 0.3], [0, a − 0.6]]):

    >>> import tempfile
    >>> from riccati_tf.sweep import run_sweep
    >>> spec = {"family": {"grid": {"v": [-1.0, 1.0], "a": [-0.5, 0.5]}},
    ...         "params": {"A": {"const": [[0, 0.3], [0, -0.6]], "a": [[1, 0], [0, 1]]},
    ...                    "B": [[1, 0.2], [0.2, 0.6]], "V": {"v": [[1, 0], [0, 1]]}},
    ...         "initial": {"cov": [[1, 0.3], [0.3, 0.5]]}}
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     first = run_sweep(spec, f"{tmp}/sweep")
    ...     again = run_sweep(spec, f"{tmp}/sweep")     # resumed: nothing to compute
    >>> first.counts
    {'blows_up': 2, 'collapses': 1, 'converges': 1}
    >>> (first.chunks_computed, again.chunks_computed, again.chunks_resumed)
    (1, 0, 1)
    """
    start = time.perf_counter()
    family = parse_family(spec)
    with ResultStore.open(out_dir, family, storage) as store:
        for note in store.notes:
            if log is not None:
                log(note)
        todo = store.missing()
        resumed = family.n_chunks - len(todo)
        if scheduler is None or scheduler == "auto":
            left = sum(min(family.chunk_size, family.n_configs - c * family.chunk_size)
                       for c in todo)
            scheduler = auto_scheduler(family.analysis, left)
        executor = make_executor(scheduler, n_workers) if todo else InProcess()
        try:
            done = resumed
            if progress is not None:
                progress(done, family.n_chunks)
            for index, columns in executor.imap_unordered(compute_chunk, family.spec, todo):
                store.write_chunk(index, columns)
                done += 1
                if progress is not None:
                    progress(done, family.n_chunks)
        finally:
            executor.close()
        results = store.finalize()
        table = read_results(out_dir)
    key = "regime" if family.analysis == "certify" else "status"
    values, counts = np.unique(table[key].astype(str), return_counts=True)
    return SweepResult(Path(out_dir), results, family.n_configs, family.n_chunks, len(todo),
                       resumed, executor.description, time.perf_counter() - start,
                       family.analysis, {str(v): int(c) for v, c in zip(values, counts,
                                                                        strict=True)},
                       tuple(store.notes))

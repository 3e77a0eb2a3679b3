"""Run a sweep: chunks of a Family → analysis columns → the chunked store, in-process or on Dask.

One code path: `run_sweep` lists the chunks the manifest lacks and hands `compute_chunk(spec, c)`
to an executor — in this process, or as Dask futures on a cluster (`tcp://HOST:PORT`, or a
LocalCluster started here for scheduler="local") — and writes each returned chunk through the
single-writer ResultStore as it arrives. `compute_chunk` is a pure function of (spec, c), so a
chunk computed on any worker, in any order, or again after a crash, gives the same rows.

Analyses (columns besides config_id and the axis values):
- certify:   regime, theorem, exact, global, rate, blowup_time, threshold, path — scalar-V cases
             by the batched classifier (path "batched"), the rest by `certify` one by one
             (path "certify"); NaN stands for None.
- flow:      status, blowup_time, cov_eig_min, cov_eig_max, mean_norm at t_final (or, after a
             blow-up at T*, at the last time before T* of flow's default grid of DEFAULT_OUTPUTS
             times), by `flow(..., method="auto")` per case with only the output times these
             columns read (`flow_end`).
- particles: status, t_end, flow_cov_eig_min/max, particle_cov_eig_min/max, rel_diff
             (‖Σ_particles − Σ_flow‖_F / ‖Σ_flow‖_F at t_end = t_final, or T*/2 after a blow-up),
             N tokens drawn with default_rng([seed, config_id]).
A configuration on which the per-case call raises gets regime/status "error" and the exception
in `theorem` (certify) or `error` (flow, particles): one bad layer does not end a sweep.
dask and distributed are imported only when a scheduler is given.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from ..errors import InvalidInputError, SolverError
from ..flows.integrate import DEFAULT_OUTPUTS, flow
from ..stability.certificates import EXACT_MAX_D, certify
from ..state.params import Gaussian
from .batched import classify_scalar, g_matrix, quadratic_constants, scalar_values
from .family import ANALYSIS_COLUMNS, Chunk, Family, parse_family
from .store import ResultStore, read_results

#: Dask: chunks in flight per worker (back-pressure: the client never holds every future)
IN_FLIGHT_PER_WORKER = 4
#: seconds to wait for a Dask scheduler given by address
CONNECT_TIMEOUT = "10s"


def _none_nan(x) -> float:
    return np.nan if x is None else float(x)


# --------------------------------------------------------------------------------- analyses


def _error_text(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}"[:300]


def certificate_row(params, cov0, mean0) -> dict:
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


def _fill_per_case(out: dict, chunk: Chunk, indices, row_fn) -> None:
    for i in indices:
        for name, value in row_fn(chunk, int(i)).items():
            out[name][i] = value


def certify_columns(chunk: Chunk, *, batched: bool = True) -> dict[str, np.ndarray]:
    """Certificates for every configuration of the chunk. batched=False: `certify` for all
    (the per-case reference the batched path must reproduce). Beyond EXACT_MAX_D the batched
    classifier gets the heads, so that certify's own (numerical, a few LAPACK calls) premises
    are decided case by case and only the theorem's work is stacked; up to it, cases the
    rounding margins leave open go to `certify` (its exact premises cost about as much)."""
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


def flow_end(params, g0: Gaussian, t_final: float):
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
    """Rows of chunk `index`: config_id, the axis values, then the analysis columns."""
    family = family_of(spec)
    chunk = family.chunk(index)
    columns = {"config_id": chunk.ids, **chunk.values}
    columns.update(ANALYZERS[family.analysis](family, chunk))
    return index, columns


# --------------------------------------------------------------------------------- executors


class InProcess:
    """Runs the chunks one after another in this process."""

    description = "in-process"

    def imap_unordered(self, fn, spec: dict, indices: list[int]) -> Iterator:
        for c in indices:
            yield fn(spec, c)

    def close(self) -> None:
        pass


class DaskExecutor:
    """Runs the chunks as Dask futures: on the scheduler at `address`, or on a LocalCluster of
    n_workers single-threaded worker processes started here (address "local")."""

    def __init__(self, address: str, n_workers: int | None):
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            raise InvalidInputError("--scheduler needs Dask: install the extra "
                                    "`pip install riccati-tf[dask]`") from None
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

    def imap_unordered(self, fn, spec: dict, indices: list[int]) -> Iterator:
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


def make_executor(scheduler: str | None, n_workers: int | None):
    """None or "inprocess": this process; "local": a LocalCluster sized to the machine (or
    n_workers); anything else: the address of a running Dask scheduler (tcp://HOST:PORT)."""
    if n_workers is not None and (isinstance(n_workers, bool) or not isinstance(n_workers, int)
                                  or n_workers < 1):
        raise InvalidInputError(f"n_workers must be a positive integer, got {n_workers!r}")
    if scheduler is None or scheduler == "inprocess":
        return InProcess()
    if not isinstance(scheduler, str) or not scheduler:
        raise InvalidInputError(f"scheduler must be an address such as tcp://HOST:PORT, "
                                f"'local' or 'inprocess', got {scheduler!r}")
    return DaskExecutor(scheduler, n_workers)


# --------------------------------------------------------------------------------- entry point


@dataclass(frozen=True)
class SweepResult:
    """A finished sweep: where its rows are and how this run got them.

    out_dir: the results folder (manifest.json, chunks.jsonl, chunks/, results.parquet);
    results_path: its results.parquet; n_configs, n_chunks; chunks_computed by this run and
    chunks_resumed (found finished and verified in the folder); scheduler: where the chunks ran;
    wall_time (s); counts: rows per regime (certify) or status (flow, particles); analysis;
    notes: what opening the folder found and repaired (a chunk file that failed its check and was
    recomputed, a torn record dropped), one sentence each.
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

    def table(self):
        """The results as a pyarrow Table (sorted by config_id)."""
        return read_results(self.results_path)


def run_sweep(spec: dict, out_dir, *, scheduler: str | None = None, n_workers: int | None = None,
              progress: Callable[[int, int], None] | None = None,
              log: Callable[[str], None] | None = None) -> SweepResult:
    """Map the spec's parameter family through its analysis, chunk by chunk, into out_dir.

    Resumes: chunks recorded in out_dir's manifest whose files verify (SHA-256, config ids) are
    skipped, the others recomputed; a folder holding another spec's results, a manifest that
    contradicts the spec, a folder another sweep is writing and a folder holding files of the
    store's names that no sweep wrote are refused (InvalidInputError). scheduler: None/
    "inprocess" (this process), "local" (a LocalCluster of n_workers processes, default one per
    CPU) or a Dask scheduler address. progress(done, total) is called after every chunk written;
    log(note) once per repair the opening made (also in SweepResult.notes). Returns a
    SweepResult.
    """
    start = time.perf_counter()
    family = parse_family(spec)
    with ResultStore.open(out_dir, family) as store:
        for note in store.notes:
            if log is not None:
                log(note)
        todo = store.missing()
        resumed = family.n_chunks - len(todo)
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
    values, counts = np.unique(np.asarray(table.column(key).to_pylist(), dtype=object),
                               return_counts=True)
    return SweepResult(Path(out_dir), results, family.n_configs, family.n_chunks, len(todo),
                       resumed, executor.description, time.perf_counter() - start,
                       family.analysis, {str(v): int(c) for v, c in zip(values, counts,
                                                                        strict=True)},
                       tuple(store.notes))

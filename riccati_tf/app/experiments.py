"""Particles and real Transformers against the Gaussian theory (SPEC §1, §5, §7): three experiments.

1. `prescribed_attention`: fixed (A, B, V) with scalar V = ∓I on Gaussian tokens. Opposite
   definiteness (G = −v(B + Bᵀ) ≻ 0): the particle covariance stays bounded and follows the
   Gaussian flow; equal definiteness (G ≺ 0): the Gaussian flow blows up at T* and the particle
   covariance grows with it until the finite-N softmax saturates (a finite cloud cannot blow up:
   the attention term is a convex combination of the tokens).
2. `relu_drift`: a ReLU feed-forward term W relu(U x + c) added to attention; Gaussianity
   statistics of the cloud over time against (a) the same run without the ReLU term and (b) the
   Monte-Carlo null of exactly Gaussian clouds, and the particle covariance against the Gaussian
   moment closure (`relu_closure_rhs`), which is only a short-time approximation.
3. `run_probe`: the per-layer probe of `models.probe` on a saved or a random encoder.

Each experiment returns a frozen dataclass of numbers; `plot_*` draw its figure (matplotlib, Agg);
`run_*` write figure and JSON into a folder and return the numbers as a dict (the CLI's entry
points).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.integrate import solve_ivp
from scipy.stats import norm

from ..empirical.defaults import EXPERIMENT_MAX_TOKENS
from ..empirical.gaussianity import MAX_NULL, null_distribution
from ..empirical.particles import FeedForward, empirical_moments, simulate
from ..errors import InvalidInputError, SolverError
from ..flows.integrate import flow
from ..io.figures import Figure, figure_png, new_figure
from ..io.files import OutputFolder, check_creatable
from ..io.paths import relative_paths
from ..io.plots import plain_log_labels
from ..io.serialize import to_jsonable
from ..state.moments import moment_arrays
from ..state.params import Gaussian, Params
from ..state.validation import as_count, as_seed, as_time

if TYPE_CHECKING:
    from matplotlib.figure import Figure as MatplotlibFigure

    from ..empirical.probe import ProbeResult

__all__ = ["GROWTH_LEVELS", "MAX_STEPS", "MAX_TOKENS", "plot_prescribed", "plot_relu_drift",
           "prescribed_attention", "relu_drift", "run_probe"]

#: levels K of tr Σ(t) / tr Σ(0) whose first crossing times are compared in the blow-up case
GROWTH_LEVELS = (2.0, 4.0, 8.0, 16.0, 32.0)
#: most tokens of experiments 1 and 2 (the N² softmax makes the top of the range take minutes)
MAX_TOKENS = EXPERIMENT_MAX_TOKENS
#: most RK4 steps of experiments 1 and 2
MAX_STEPS = 10_000




def progress_bar(total: int | None, desc: str, *, unit: str = "step",
                 enabled: bool = True) -> Any:
    """A `tqdm.tqdm` bar on stderr, shown only when `enabled` and stderr is a terminal (a pipe,
    a file, a closed stderr or a notebook see nothing)."""
    from tqdm import tqdm

    try:
        tty = sys.stderr is not None and sys.stderr.isatty()
    except (AttributeError, ValueError, OSError):  # closed or replaced stderr
        tty = False
    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr,
                disable=not (enabled and tty), leave=False, dynamic_ncols=True)


@contextmanager
def stages(names: tuple[str, ...], desc: str, enabled: bool
           ) -> Iterator[Callable[[str], None]]:
    """A progress bar over named stages: yields `done(name)`, to be called as each one ends."""
    with progress_bar(len(names), desc, unit="stage", enabled=enabled) as bar:
        def done(name: str) -> None:
            bar.update(1)
            following = names.index(name) + 1
            if following < len(names):
                bar.set_postfix_str(names[following])
        bar.set_postfix_str(names[0])
        yield done


# ---------------------------------------------------------------------------------------------
# 1. prescribed attention: bounded vs blow-up


@dataclass(frozen=True, eq=False)
class PrescribedCase:
    """Particles vs the Gaussian flow for one parameter set.

    t (k,), particle_cov (k, d, d): the cloud; gaussian_cov (k', d, d): the Gaussian flow from the
    initial cloud's moments at t[:k'] (k' < k when it blows up first); rel_error (k',):
    ‖Σ_N − Σ‖_F / ‖Σ‖_F; blowup_time: the Gaussian T* (None when bounded); growth (k,) and
    gaussian_growth (k',): tr Σ(t) / tr Σ(0).
    """

    label: str
    params: Params
    t: np.ndarray
    particle_cov: np.ndarray
    gaussian_cov: np.ndarray
    rel_error: np.ndarray
    blowup_time: float | None
    growth: np.ndarray
    gaussian_growth: np.ndarray


@dataclass(frozen=True, eq=False)
class PrescribedResult:
    """Opposite (bounded) and equal (blow-up) definiteness on one Gaussian cloud of n_tokens.

    crossing_particles, crossing_gaussian (len(GROWTH_LEVELS),): first times at which
    tr Σ(t) / tr Σ(0) reaches each level in the equal case (NaN if never on the horizon);
    growth_at_blowup: the particles' tr Σ_N / tr Σ_N(0) at the predicted T* (interpolated).
    """

    n_tokens: int
    seed: int
    opposite: PrescribedCase
    equal: PrescribedCase
    levels: np.ndarray
    crossing_particles: np.ndarray
    crossing_gaussian: np.ndarray
    growth_at_blowup: float


def prescribed_params(sign: float) -> Params:
    """The layer of experiment 1 on R²: A = 0.3 I, B = [[1, 0.4], [−0.2, 0.7]] (symmetric part
    positive definite), V = sign · I; sign −1 gives G ≻ 0 (opposite), +1 gives G ≺ 0 (equal)."""
    return Params(A=0.3 * np.eye(2), B=np.array([[1.0, 0.4], [-0.2, 0.7]]), V=sign * np.eye(2))


#: initial Gaussian of experiment 1
PRESCRIBED_START = Gaussian(np.array([0.1, -0.05]), np.array([[0.12, 0.02], [0.02, 0.08]]))


def _sizes(n_tokens: int, seed: int, n_steps: int, *,
           minimum_tokens: int) -> tuple[int, int, int]:
    """(n_tokens, seed, n_steps) checked against MAX_TOKENS, validation.MAX_SEED, MAX_STEPS."""
    return (as_count("n_tokens", n_tokens, minimum=minimum_tokens, maximum=MAX_TOKENS,
                             limit="experiments.MAX_TOKENS"),
            as_seed("seed", seed),
            as_count("n_steps", n_steps, maximum=MAX_STEPS,
                             limit="experiments.MAX_STEPS"))


def first_crossing(t: np.ndarray, values: np.ndarray, level: float) -> float:
    """The first t at which the sampled curve reaches `level` (linear interpolation), or NaN."""
    above = np.nonzero(values >= level)[0]
    if above.size == 0:
        return float("nan")
    i = above[0]
    if i == 0:
        return float(t[0])
    frac = (level - values[i - 1]) / (values[i] - values[i - 1])
    return float(t[i - 1] + frac * (t[i] - t[i - 1]))


def _trace_ratio(cov: np.ndarray) -> np.ndarray:
    tr = np.trace(cov, axis1=1, axis2=2)
    return tr / tr[0]


def _compare(label: str, params: Params, x0: np.ndarray, t_final: float,
             n_steps: int) -> PrescribedCase:
    run = simulate(params, x0, t_final, n_steps=n_steps)
    fitted = Gaussian(*empirical_moments(x0))
    gauss = flow(params, fitted, t_final, t_eval=run.t)
    k = gauss.t.size
    err = (np.linalg.norm(run.cov[:k] - gauss.cov, axis=(1, 2))
           / np.linalg.norm(gauss.cov, axis=(1, 2)))
    return PrescribedCase(label, params, run.t, run.cov, gauss.cov, err, gauss.blowup_time,
                          _trace_ratio(run.cov), _trace_ratio(gauss.cov))


def prescribed_attention(*, n_tokens: int = 2000, seed: int = 0, n_steps: int = 60,
                         t_opposite: float = 12.0, overshoot: float = 1.25,
                         progress: Callable[[str], None] | None = None) -> PrescribedResult:
    """Experiment 1: particles with softmax attention against the Gaussian flow, bounded vs blow-up.

    The layer `prescribed_params(∓1)` on R² (A = 0.3 I, B = [[1, 0.4], [−0.2, 0.7]], V = ∓I)
    gives the Gaussian flow Σ̇ = AΣ + ΣAᵀ − ΣGΣ with G = −v(B + Bᵀ): opposite definiteness
    (v = −1, G ≻ 0) stays bounded, equal definiteness (v = +1, G ≺ 0) blows up at T*. N =
    n_tokens particles drawn from PRESCRIBED_START follow the particle system of SPEC §1 (RK4
    with n_steps steps) and are compared with the Gaussian flow from their own empirical
    moments. The opposite case runs on [0, t_opposite]; the equal case on [0, overshoot · T*]
    with T* the blow-up time of the Gaussian fitted to the initial cloud, where the particle
    covariance grows with the flow until the finite-N softmax saturates (a finite cloud cannot
    blow up: the attention term is a convex combination of the tokens).

    Parameters
    ----------
    n_tokens : int, default 2000
        Particles N, 2 ≤ N ≤ MAX_TOKENS.
    seed : int, default 0
        Seed of the initial cloud, 0 ≤ seed ≤ validation.MAX_SEED.
    n_steps : int, default 60
        RK4 steps of each run, 1 ≤ n_steps ≤ MAX_STEPS.
    t_opposite : float, default 12.0
        Horizon of the opposite (bounded) case, > 0.
    overshoot : float, default 1.25
        Horizon of the equal case as a multiple of T*, > 0.
    progress : callable (stage) -> None, optional
        Called after the stages "opposite" and "equal".

    Returns
    -------
    PrescribedResult
        Both cases (particle and Gaussian covariances, relative errors, growth of tr Σ, T*),
        the first times tr Σ(t) / tr Σ(0) reaches each of GROWTH_LEVELS in the equal case
        (particles and Gaussian) and the particles' growth at the predicted T*.

    Raises
    ------
    InvalidInputError
        When n_tokens, seed or n_steps is not an integer in its range, or t_opposite or
        overshoot is not a positive finite number.
    SolverError
        When the equal-definiteness Gaussian flow does not blow up on [0, 100].

    See Also
    --------
    plot_prescribed : the figure of the result.
    relu_drift : experiment 2.
    riccati_tf.empirical.particles.simulate : the particle system.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §1 "The model: a Transformer as a flow of measures", §5
       "Time-invariant parameters: equilibria, stability, blow-up" and §7 "Validation against
       real Transformers".
    .. [2] B. Geshkovski, C. Letrouit, Y. Polyanskiy, P. Rigollet, "A mathematical perspective
       on Transformers", arXiv:2312.10794, 2023.

    Examples
    --------
    >>> from riccati_tf.app.experiments import prescribed_attention
    >>> res = prescribed_attention(n_tokens=40, n_steps=8)
    >>> res.opposite.blowup_time is None, res.equal.blowup_time is not None
    (True, True)
    >>> bool(res.opposite.rel_error.max() < 0.1)     # bounded case: particles follow the flow
    True
    >>> bool(res.growth_at_blowup > 4)                # equal case: tr Σ has grown with the flow
    True
    """
    n_tokens, seed, n_steps = _sizes(n_tokens, seed, n_steps, minimum_tokens=2)
    progress = progress or (lambda _stage: None)
    t_opposite, overshoot = as_time("t_opposite", t_opposite), as_time("overshoot", overshoot)
    x0 = PRESCRIBED_START.sample(n_tokens, np.random.default_rng(seed))
    opposite = _compare("opposite", prescribed_params(-1.0), x0, t_opposite, n_steps)
    progress("opposite")
    equal_params = prescribed_params(1.0)
    t_star = flow(equal_params, Gaussian(*empirical_moments(x0)), 100.0).blowup_time
    if t_star is None:
        raise SolverError("the equal-definiteness Gaussian flow did not blow up on [0, 100]")
    equal = _compare("equal", equal_params, x0, as_time("overshoot · T*", overshoot * t_star),
                     n_steps)
    progress("equal")
    levels = np.array(GROWTH_LEVELS)
    k = equal.gaussian_growth.size
    return PrescribedResult(
        n_tokens, seed, opposite, equal, levels,
        np.array([first_crossing(equal.t, equal.growth, K) for K in levels]),
        np.array([first_crossing(equal.t[:k], equal.gaussian_growth, K) for K in levels]),
        float(np.interp(t_star, equal.t, equal.growth)))


# ---------------------------------------------------------------------------------------------
# 2. ReLU feed-forward: drift away from Gaussianity


def relu_closure_rhs(params: Params, ff: FeedForward, mean: np.ndarray,
                     cov: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Gaussian moment closure of ẋ = X(x) + W relu(U x + c) at x ~ N(m, Σ):

        ṁ = [SPEC §2 mean rhs] + W E[relu(u)],
        Σ̇ = [SPEC §2 covariance rhs] + Σ Uᵀ D Wᵀ + W D U Σ,   D = diag(Φ(μ_k / s_k)),

    with u = U x + c ~ N(μ, diag s²) per unit, μ = U m + c, s_k² = (U Σ Uᵀ)_kk,
    E relu(u_k) = μ_k Φ(μ_k/s_k) + s_k φ(μ_k/s_k), and Cov(x, relu(u_k)) = Σ U_kᵀ Φ(μ_k/s_k)
    (Stein's lemma). Units with s_k = 0 use relu(μ_k) and the indicator μ_k > 0.
    """
    dmean, dcov = moment_arrays(params, mean, cov)
    mu = ff.U @ mean + ff.c
    s = np.sqrt(np.maximum(np.einsum("kd,de,ke->k", ff.U, cov, ff.U), 0.0))
    safe = np.where(s > 0, s, 1.0)
    ratio = np.where(s > 0, mu / safe, np.sign(mu) * np.inf)
    Phi = norm.cdf(ratio)
    e_relu = np.where(s > 0, mu * Phi + s * norm.pdf(np.where(s > 0, ratio, 0.0)),
                      np.maximum(mu, 0.0))
    cross = cov @ ff.U.T @ (Phi[:, None] * ff.W.T)  # Cov(x, W relu(u))
    return dmean + ff.W @ e_relu, dcov + cross + cross.T


def relu_closure_flow(params: Params, ff: FeedForward, start: Gaussian,
                      t_eval: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Integrate `relu_closure_rhs` (DOP853, rtol 1e-10) from `start`; returns (mean, cov) at
    t_eval."""
    d = start.d

    def rhs(_t, y):
        dm, dS = relu_closure_rhs(params, ff, y[:d], y[d:].reshape(d, d))
        return np.concatenate([dm, dS.ravel()])

    y0 = np.concatenate([start.mean, start.cov.ravel()])
    sol = solve_ivp(rhs, (t_eval[0], t_eval[-1]), y0, method="DOP853", t_eval=t_eval,
                    rtol=1e-10, atol=1e-12)
    if sol.status != 0:
        raise SolverError(f"the ReLU moment closure failed: {sol.message}")
    cov = sol.y[d:].T.reshape(-1, d, d)
    return sol.y[:d].T, 0.5 * (cov + np.swapaxes(cov, 1, 2))


@dataclass(frozen=True, eq=False)
class ReluDriftResult:
    """Gaussianity over time with and without the ReLU term.

    t (k,); relu[name], affine[name] (k,) for the statistics of `gaussianity`; null_median,
    null_q99 [name]: the Gaussian prediction (Monte-Carlo null of n_tokens Gaussian points);
    closure_error (k,): ‖Σ_N − Σ_closure‖_F / ‖Σ_closure‖_F for the ReLU run;
    drift_time: first t at which the ReLU run's energy statistic exceeds null_q99 (NaN if
    never).
    """

    n_tokens: int
    seed: int
    t: np.ndarray
    relu: dict[str, np.ndarray]
    affine: dict[str, np.ndarray]
    null_median: dict[str, float]
    null_q99: dict[str, float]
    closure_error: np.ndarray
    drift_time: float


def relu_params() -> tuple[Params, FeedForward]:
    """The layer of experiment 2 on R²: the bounded (opposite) attention layer of experiment 1
    plus W relu(U x + c) with U = [[1, 0], [0.6, 0.8]], c = (0, 0.1), W = −0.5 I: each unit
    pulls the half-plane where it is active back towards its boundary (a fold), which skews
    the cloud."""
    U = np.array([[1.0, 0.0], [0.6, 0.8]])
    return prescribed_params(-1.0), FeedForward(W=-0.5 * np.eye(2), U=U, c=np.array([0.0, 0.1]))


def relu_drift(*, n_tokens: int = 2000, seed: int = 0, t_final: float = 3.0,
               n_steps: int = 30, n_null: int = 200,
               progress: Callable[[str], None] | None = None) -> ReluDriftResult:
    """Experiment 2: drift away from Gaussianity under a ReLU feed-forward term.

    Particles from PRESCRIBED_START under `relu_params` — the bounded attention layer of
    experiment 1 plus W relu(U x + c) — and under the same layer without the ReLU term (which
    keeps Gaussians Gaussian, SPEC §2), with the Gaussianity statistics of the cloud
    (`riccati_tf.empirical.gaussianity`) at every RK4 step, against the Monte-Carlo null of
    exactly Gaussian clouds of n_tokens points; and the particle covariance against the
    Gaussian moment closure (`relu_closure_rhs`: ṁ and Σ̇ of SPEC §2 plus the ReLU terms by
    Stein's lemma), which is only a short-time approximation.

    Parameters
    ----------
    n_tokens : int, default 2000
        Particles N, 4 ≤ N ≤ MAX_TOKENS.
    seed : int, default 0
        Seed of the initial cloud and of the statistics' random directions.
    t_final : float, default 3.0
        The horizon, > 0.
    n_steps : int, default 30
        RK4 steps, 1 ≤ n_steps ≤ MAX_STEPS.
    n_null : int, default 200
        Gaussian clouds simulated for the null, 1 ≤ n_null ≤ gaussianity.MAX_NULL.
    progress : callable (stage) -> None, optional
        Called after the stages "relu", "affine", "closure" and "null".

    Returns
    -------
    ReluDriftResult
        The times t, the statistics of both runs {name: (k,) array}, the null's median and
        99 % quantile of each, the relative covariance error to the closure, and the first t at
        which the ReLU run's energy statistic exceeds the null's 99 % quantile (NaN if never).

    Raises
    ------
    InvalidInputError
        When an argument is out of its range (the message names it and its limit).
    SolverError
        When the integration of the moment closure fails.

    See Also
    --------
    plot_relu_drift : the figure of the result.
    prescribed_attention : experiment 1.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations" and §7
       "Validation against real Transformers".
    .. [2] C. Stein, "Estimation of the mean of a multivariate normal distribution", Ann.
       Statist. 9(6), 1981 (Stein's lemma).

    Examples
    --------
    >>> from riccati_tf.app.experiments import relu_drift
    >>> res = relu_drift(n_tokens=50, t_final=1.0, n_steps=5, n_null=5)
    >>> res.t.tolist(), sorted(res.relu)[:2]
    ([0.0, 0.2, 0.4, 0.6, 0.8, 1.0], ['energy', 'fourth'])
    >>> bool(res.closure_error.max() < 0.1)           # the closure holds for short times
    True
    """
    progress = progress or (lambda _stage: None)
    n_tokens, seed, n_steps = _sizes(n_tokens, seed, n_steps, minimum_tokens=4)
    t_final = as_time("t_final", t_final)
    n_null = as_count("n_null", n_null, maximum=MAX_NULL, limit="gaussianity.MAX_NULL")
    params, ff = relu_params()
    x0 = PRESCRIBED_START.sample(n_tokens, np.random.default_rng(seed))
    runs = {}
    for label, f in (("relu", ff), ("affine", None)):
        runs[label] = simulate(params, x0, t_final, n_steps=n_steps, feedforward=f, metrics=True,
                               metrics_seed=seed)
        progress(label)
    t = runs["relu"].t
    _, closure_cov = relu_closure_flow(params, ff, Gaussian(*empirical_moments(x0)), t)
    progress("closure")
    err = (np.linalg.norm(runs["relu"].cov - closure_cov, axis=(1, 2))
           / np.linalg.norm(closure_cov, axis=(1, 2)))
    null = null_distribution(n_tokens, x0.shape[1], n_null=n_null, seed=seed)
    progress("null")
    relu, affine = runs["relu"].metrics, runs["affine"].metrics
    assert relu is not None and affine is not None  # simulated with metrics=True
    names = list(relu.values)
    return ReluDriftResult(
        n_tokens, seed, t, relu.values, affine.values,
        {n: null.quantile(n, 0.5) for n in names}, {n: null.quantile(n, 0.99) for n in names},
        err, first_crossing(t, relu["energy"], null.quantile("energy", 0.99)))


# ---------------------------------------------------------------------------------------------
# figures


def plot_prescribed(result: PrescribedResult) -> Figure:
    """tr Σ(t) of particles and of the Gaussian flow; the equal case on a log scale with T*.

    Parameters
    ----------
    result : PrescribedResult
        The result of `prescribed_attention`.

    Returns
    -------
    Figure
        Two panels: opposite definiteness (bounded) and equal definiteness (the predicted T*
        dashed, log scale).

    Raises
    ------
    ValueError
        When the result holds no samples (matplotlib cannot scale an empty log axis).

    See Also
    --------
    prescribed_attention : computes the result.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up" and §7 "Validation against real Transformers".

    Examples
    --------
    >>> from riccati_tf.app.experiments import plot_prescribed, prescribed_attention
    >>> fig = plot_prescribed(prescribed_attention(n_tokens=40, n_steps=8))
    >>> [ax.get_title() for ax in fig.axes], fig.axes[1].get_yscale()
    (['opposite definiteness', 'equal definiteness'], 'log')
    """
    fig, axes = new_figure(1, 2, figsize=(10, 4))
    for ax, case in zip(axes, (result.opposite, result.equal), strict=True):
        k = case.gaussian_cov.shape[0]
        ax.plot(case.t, np.trace(case.particle_cov, axis1=1, axis2=2), "o", ms=3,
                label=f"particles (N = {result.n_tokens})")
        ax.plot(case.t[:k], np.trace(case.gaussian_cov, axis1=1, axis2=2), "-",
                label="Gaussian flow")
        if case.blowup_time is not None:
            ax.axvline(case.blowup_time, color="k", ls="--",
                       label=f"predicted T* = {case.blowup_time:.3f}")
            ax.set_yscale("log")
            particle_tr = np.trace(case.particle_cov, axis1=1, axis2=2)
            ax.set_ylim(0.5 * particle_tr.min(), 30 * particle_tr.max())  # Σ(t) → ∞ at T*
        ax.set_title(f"{case.label} definiteness")
        ax.set_xlabel("t")
        ax.set_ylabel("tr Σ(t)")
        ax.legend()
    return fig


#: the y-axis label of each statistic panel of `plot_relu_drift`
RELU_DRIFT_LABELS = {"energy": "energy statistic", "fourth": "fourth-moment error"}


def plot_relu_drift(result: ReluDriftResult) -> Figure:
    """Energy statistic and fourth-moment error over time; covariance error to the closure.

    The statistics are drawn on a log scale: the ReLU run leaves the Gaussian null by orders of
    magnitude, and a linear scale would press the null's median and 99 % quantile onto the axis.

    Parameters
    ----------
    result : ReluDriftResult
        The result of `relu_drift`.

    Returns
    -------
    Figure
        Three panels: the energy statistic and the fourth-moment error of both runs against the
        null's median (dotted) and 99 % quantile (dashed); the ReLU run's relative covariance
        error to the Gaussian moment closure.

    Raises
    ------
    KeyError
        When the result lacks the "energy" or "fourth" statistic.

    See Also
    --------
    relu_drift : computes the result.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".

    Examples
    --------
    >>> from riccati_tf.app.experiments import plot_relu_drift, relu_drift
    >>> fig = plot_relu_drift(relu_drift(n_tokens=50, t_final=1.0, n_steps=5, n_null=5))
    >>> [ax.get_title() for ax in fig.axes][:2], fig.axes[0].get_yscale()
    (['energy', 'fourth'], 'log')
    """
    fig, axes = new_figure(1, 3, figsize=(9.6, 3.8))
    for ax, (name, label) in zip(axes[:2], RELU_DRIFT_LABELS.items(), strict=True):
        ax.semilogy(result.t, result.relu[name], "o-", ms=3, label="attention + ReLU")
        ax.semilogy(result.t, result.affine[name], "s-", ms=3, label="attention + affine")
        ax.axhline(result.null_q99[name], color="k", ls="--", label="Gaussian null 99%")
        ax.axhline(result.null_median[name], color="k", ls=":", label="Gaussian null median")
        ax.set_xlabel("t")
        ax.set_ylabel(f"{label} (log scale)")
        ax.set_title(name)
        ax.legend(fontsize=9)
        plain_log_labels(ax.yaxis)
    axes[2].semilogy(result.t[1:], result.closure_error[1:], "o-", ms=3)
    axes[2].set_xlabel("t")
    axes[2].set_ylabel("‖Σ_N − Σ_closure‖ / ‖Σ_closure‖")
    axes[2].set_title("covariance error to the Gaussian closure (ReLU)")
    return fig


def plot_probe(result: ProbeResult) -> MatplotlibFigure:
    """The probe figure (`models.plot_probe`): each statistic against the interval its test
    accepts; attention affine residual. A panel drawn without a y-axis label is labelled with
    the quantity of its title (the statistic, or the residual ρ)."""
    from ..empirical.probe import plot_probe as draw

    fig = draw(result)
    for ax in fig.axes:
        if ax.axison and not ax.get_ylabel():
            ax.set_ylabel(ax.get_title().split(" (")[0].split(": ")[-1])
    return fig


# ---------------------------------------------------------------------------------------------
# CLI entry points


def check_output_folder(out_dir: str | Path) -> Path:
    """`out_dir` as a folder that can be written: a folder, or a path whose nearest existing
    ancestor is a folder this process may write into (it is created on writing). Raises
    InvalidInputError naming it; the `run_*` functions call it before they compute."""
    if not isinstance(out_dir, str | Path) or str(out_dir) == "":
        raise InvalidInputError(f"out_dir must be a folder path, got {out_dir!r}")
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise InvalidInputError(f"output folder {out} exists and is not a folder")
    check_creatable(out, f"output folder {out}")
    return out


def _write(out_dir: str | Path, name: str, numbers: dict,
           plot: Callable[[Any], MatplotlibFigure],
           result: Any, inputs: tuple[str | Path | None, ...] = ()) -> dict:
    """out_dir/name.png (the figure plot(result)) and out_dir/name.json (the numbers, with the
    figure's path; paths in the file relative to out_dir, `io.paths`, inputs the files the
    numbers name), never over a file riccati-tf did not write (`riccati_tf.io.files`)."""
    folder = OutputFolder.open(out_dir)
    folder.check((f"{name}.png", f"{name}.json"))
    png = figure_png(plot(result))
    numbers["figure"] = str(folder.path / f"{name}.png")
    numbers = to_jsonable(numbers)
    stored = relative_paths(numbers, folder.path, inputs)
    folder.write({f"{name}.png": png,
                  f"{name}.json": json.dumps(stored, indent=1, allow_nan=False).encode()})
    return numbers


def probe_table(numbers: dict) -> str:
    """The per-layer numbers of `run_probe` as a text table (`models.probe_table`)."""
    from ..empirical.probe import probe_table as table

    return table(numbers)


def run_prescribed(out_dir: str | Path, *, n_tokens: int = 2000, seed: int = 0, n_steps: int = 60,
                   progress: bool = False) -> dict:
    """Experiment 1 → prescribed.png, prescribed.json in out_dir; returns the numbers.
    n_tokens, seed, n_steps: as for `prescribed_attention`; progress: a progress bar on a
    terminal's stderr (`progress_bar`)."""
    check_output_folder(out_dir)
    with stages(("opposite", "equal"), "prescribed", progress) as done:
        res = prescribed_attention(n_tokens=n_tokens, seed=seed, n_steps=n_steps,
                                   progress=done)
    numbers = {
        "n_tokens": res.n_tokens, "seed": res.seed, "blowup_time": res.equal.blowup_time,
        "opposite_max_rel_error": float(res.opposite.rel_error.max()),
        "opposite_max_growth": float(res.opposite.growth.max()),
        "equal_growth_levels": res.levels.tolist(),
        "equal_crossing_particles": res.crossing_particles.tolist(),
        "equal_crossing_gaussian": res.crossing_gaussian.tolist(),
        "equal_growth_at_blowup": res.growth_at_blowup,
    }
    return _write(out_dir, "prescribed", numbers, plot_prescribed, res)


def run_relu_drift(out_dir: str | Path, *, n_tokens: int = 2000, seed: int = 0, n_null: int = 200,
                   progress: bool = False) -> dict:
    """Experiment 2 → relu_drift.png, relu_drift.json in out_dir; returns the numbers.
    n_tokens, seed, n_null: as for `relu_drift`; progress: a progress bar on a terminal's
    stderr (`progress_bar`)."""
    check_output_folder(out_dir)
    with stages(("relu", "affine", "closure", "null"), "relu-drift", progress) as done:
        res = relu_drift(n_tokens=n_tokens, seed=seed, n_null=n_null, progress=done)
    numbers = {"n_tokens": res.n_tokens, "seed": res.seed, "t": res.t.tolist(),
               "relu": {k: v.tolist() for k, v in res.relu.items()},
               "affine": {k: v.tolist() for k, v in res.affine.items()},
               "null_q99": res.null_q99, "closure_error": res.closure_error.tolist(),
               "drift_time": res.drift_time}
    return _write(out_dir, "relu_drift", numbers, plot_relu_drift, res)


def run_probe(model_path: str | None, out_dir: str | Path, *, n_tokens: int | None = None,
              seed: int = 0, n_null: int = 200, progress: bool = False,
              text: str | Path | None = None, tokens: str | Path | None = None,
              hidden: str | Path | None = None, gaussian: str | None = None) -> dict:
    """Experiment 3: Gaussianity of a Transformer encoder, layer by layer → probe.png, probe.json.

    Tokens are fed at the embedding output of the encoder — real ones (a text file tokenized
    with the folder's tokenizer, token ids, hidden states), or Gaussian ones matched to the
    moments of the embedding output (N(0, I) on request; `encoders.loading.model_inputs`) — and
    the Gaussianity statistics of each layer's hidden states are tested against a Monte-Carlo
    null of exactly Gaussian clouds (`riccati_tf.empirical.probe.probe`), with the attention
    sublayers' affine residual and the Gaussian moment prediction of SPEC §2 from the inputs'
    moments. The arguments, the input files and out_dir are checked before the model is
    loaded, and the model (`encoders.extraction.check_model`) before it is run; the figure and
    the numbers are written into out_dir, never over a file riccati-tf did not write.

    Parameters
    ----------
    model_path : str or None
        A local folder saved with `save_pretrained` (BERT, RoBERTa, ModernBERT, DeiT, ...);
        None builds a random DeiT-tiny-shaped encoder (hidden 192, 12 layers, 3 heads; no
        pretrained weights, nothing downloaded).
    out_dir : str or pathlib.Path
        The output folder (created if missing).
    n_tokens : int, optional
        Gaussian tokens, cut into sequences within the model's position limit; default
        `riccati_tf.empirical.probe.DEFAULT_TOKENS` (a file's tokens otherwise).
    seed : int, default 0
        Seed of the tokens, the projection, the random directions and the null.
    n_null : int, default 200
        Gaussian samples of the null, 1 ≤ n_null ≤ gaussianity.MAX_NULL.
    progress : bool, default False
        A progress bar (stages "model", "probe") on a terminal's stderr.
    text, tokens, hidden : str or pathlib.Path, optional
        At most one input file (`encoders.loading.model_inputs`): passages one a line, a .npy
        of token ids, a .npz of hidden states of the embedding output; the first sequences up
        to probe.MAX_TOKENS tokens are used.
    gaussian : {"matched", "standard"}, optional
        Gaussian tokens instead, matched to the file's or the embedding output's moments, or
        N(0, I) (default: the file's tokens when one is given, else "matched").

    Returns
    -------
    dict
        The numbers of probe.json (`ProbeResult.as_dict`: per-layer statistics, p-values,
        verdicts, attention residuals, the moment prediction), with "figure" (the PNG's path)
        and "model_path".

    Raises
    ------
    InvalidInputError
        An argument out of its range, an out_dir that cannot be written or holds a file
        riccati-tf did not write, an input file that is missing, empty or malformed, a model
        folder that cannot be loaded or is wrong (`check_model`: one line naming the model and
        the cause).
    ImportError
        When torch or transformers is not installed.

    See Also
    --------
    prescribed_attention : experiment 1 (particles against the Gaussian flow).
    relu_drift : experiment 2 (a ReLU term against Gaussianity).
    riccati_tf.empirical.probe.probe : the probe itself, on a model object.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".
    .. [2] B. Geshkovski, C. Letrouit, Y. Polyanskiy, P. Rigollet, "A mathematical perspective
       on Transformers", arXiv:2312.10794, 2023.

    Examples
    --------
    Building and probing an encoder takes tens of seconds, so the example shows the checks
    that run first, before any model is built:

    >>> import tempfile
    >>> from riccati_tf.app.experiments import run_probe
    >>> from riccati_tf.errors import InvalidInputError
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     try:
    ...         run_probe(None, tmp, n_tokens=1)
    ...     except InvalidInputError as exc:
    ...         print(str(exc).split(",")[0])
    n_tokens must be ≥ 2
    """
    from ..empirical import probe as probing
    from ..empirical.encoders.extraction import check_model
    from ..empirical.encoders.inputfiles import check_input_files
    from ..empirical.encoders.loading import load_model, model_inputs

    n_tokens = probing.DEFAULT_TOKENS if n_tokens is None else n_tokens
    check_output_folder(out_dir)
    probing.check_probe_arguments(n_tokens=n_tokens, seed=seed, n_null=n_null)
    check_input_files(text=text, tokens=tokens, hidden=hidden, gaussian=gaussian)
    with stages(("model", "probe"), "probe", progress) as done:
        model = (probing.tiny_model("deit", hidden_size=192, n_layers=12, n_heads=3, seed=seed)
                 if model_path is None else load_model(model_path))
        check_model(model)
        inputs = model_inputs(model, text=text, tokens=tokens, hidden=hidden,
                              gaussian=gaussian, n_tokens=n_tokens, seed=seed,
                              max_tokens=probing.MAX_TOKENS)
        done("model")
        res = probing.probe(model, seed=seed, n_null=n_null, inputs=inputs)
        done("probe")
    numbers = res.as_dict()
    numbers["model_path"] = model_path
    return _write(out_dir, "probe", numbers, plot_probe, res,
                  (model_path, text, tokens, hidden))


"""Token clouds under softmax self-attention (SPEC §1, §7): the finite-N particle system.

    ẋ_i = A x_i + b + Σ_h V_h Σ_j softmax_j(⟨B_h x_i, x_j⟩) x_j  [+ W relu(U x_i + c)]

The softmax runs over blocks of queries and keys (memory O(QUERY_BLOCK · block + H N d) for H
heads and any N). Backends:

- numpy (default, float64): `softmax_means`, a streaming kernel whose cost per block of
  QUERY_BLOCK queries and BLOCK keys is two matrix products with inner dimension d + 1 (the
  shifted logits, then the numerators and the denominator together) and one in-place exp; all
  heads share the keys.
- torch (`backend="torch"`, CPU or CUDA). In float32 (`dtype="float32"`) and on CUDA it calls
  `scaled_dot_product_attention` once per block of queries with the 4-D layout (1, heads, n, d):
  queries B_h x pre-multiplied (scale 1), keys and values the tokens shared by all heads, V_h
  applied to the H softmax means afterwards; the fused CPU kernel keeps memory O(N d). On the
  CPU in float64 that kernel is 10–30% slower than the numpy kernel (measured at N = 8192 to
  16 384, d = 16 and 64; torch's float64 exp is twice numpy's), so the numpy kernel runs on the
  tensors' memory (no copy) and the results are those of the numpy backend.

`dtype="float32"` computes only the attention term in float32 (the state, the affine and ReLU
terms and the integrator stay float64). Its velocity differs from float64 by about
6e-8 · (1 + max |logit|) relative: FLOAT32_VELOCITY_RTOL bounds the Frobenius-relative error
on the case of `tests/test_particles.py` (N = 3000, d = 8, two heads, logits up to ≈ 9;
measured 5e-7).

The optional ReLU feed-forward term W relu(U x + c) breaks Gaussian invariance (SPEC §1); with
A = 0 and b = 0 it replaces the affine layer.

Validity of the Gaussian limit: for tokens from N(m, Σ) the softmax average estimates the tilted
mean m + ΣBx by importance sampling with log-weights ⟨Bx, y⟩ of variance xᵀBᵀΣBx. While
‖Σ^{1/2} B Σ^{1/2}‖ ≲ 1 the effective sample size is ∝ N and the empirical moments follow the
Gaussian flow to O(N^{-1/2}); beyond, it is exponentially small for the tails (measured: a 7%
covariance bias at N = 20 000 once ‖Σ^{1/2}BΣ^{1/2}‖ has grown from 1 to 2.2). For the same
reason a finite cloud never blows up: the attention term is a convex combination of the tokens.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import InvalidInputError, SolverError
from ..state.params import Params
from ..state.schedule import check_layer, checked_schedule
from ..state.validation import (
    ReadOnlyArrays,
    as_array,
    as_cloud,
    as_count,
    as_seed,
    as_time,
    as_vector,
    scale_exponent,
)

__all__ = ["BACKENDS", "BLOCK", "DTYPES", "FLOAT32_VELOCITY_RTOL", "MAX_KEPT", "MAX_STEPS",
           "QUERY_BLOCK", "FeedForward", "GaussianityTrace", "ParticleRun", "empirical_moments",
           "simulate", "softmax_means", "velocity"]

#: one attention head as the pair (V_h, B_h) of d × d matrices
HeadPair = tuple[np.ndarray, np.ndarray]

#: keys per block of the numpy kernel and queries per scaled_dot_product_attention call
#: (memory O(QUERY_BLOCK · block + N d)); (256, 1024) blocks run within 2% of the best shape
#: measured (128–512 queries by 512–4096 keys; one thread, N = 8192, d = 16 and 64)
BLOCK = 1024
#: query rows per block in the numpy kernel (the key blocks have `block` rows)
QUERY_BLOCK = 256
#: a row whose softmax denominator exceeds this (relative to exp(0) at its first-block maximum)
#: is recomputed with exact running maxima (the single-shift pass could lose it to overflow)
_SUM_LIMIT = 1e250
BACKENDS = ("numpy", "torch")
#: precisions of the attention term; "float32" needs backend="torch"
DTYPES = ("float64", "float32")
#: bound on ‖v₃₂ − v₆₄‖_F / ‖v₆₄‖_F for the velocity of the float32 attention on the documented
#: test case (module docstring)
FLOAT32_VELOCITY_RTOL = 1e-5
#: most steps of `simulate` (the recorded moments grow with them)
MAX_STEPS = 10 ** 6
#: most numbers kept by `simulate(..., keep_particles=True)`: (n_steps + 1) · N · d
MAX_KEPT = 10 ** 8


def attention_field(x: np.ndarray, y: np.ndarray, B: np.ndarray, V: np.ndarray, *,
                    key_bias: np.ndarray | None = None, block: int = BLOCK) -> np.ndarray:
    """V Σ_j softmax_j(⟨B x_i, y_j⟩ + β_j) y_j for every query x_i, as an (n, d) array.

    x: (n, d) queries; y: (N, d) keys/values; β = key_bias (N,) or None. Gaussian-kernel
    attention exp(−|Qx − Ky|²/2) is the case B = KᵀQ, β_j = −|K y_j|²/2 (the query term cancels
    in the softmax).
    """
    return multi_head_attention(x, y, [(V, B)], key_bias=key_bias, block=block)


def multi_head_attention(x: np.ndarray, y: np.ndarray, heads: Sequence[HeadPair], *,
                         key_bias: np.ndarray | None = None, block: int = BLOCK) -> np.ndarray:
    """Σ_h V_h Σ_j softmax_j(⟨B_h x_i, y_j⟩ + β_j) y_j for heads [(V_h, B_h)], as an (n, d)
    array: the queries of all heads go through one `softmax_means` call on shared keys."""
    n = x.shape[0]
    queries = np.concatenate([x @ np.asarray(B).T for _, B in heads])
    means = softmax_means(queries, y, key_bias=key_bias, block=block)
    out = means[:n] @ np.asarray(heads[0][0]).T
    for h, (V, _) in enumerate(heads[1:], start=1):
        out += means[h * n:(h + 1) * n] @ np.asarray(V).T
    return out


def softmax_means(q: np.ndarray, y: np.ndarray, *, key_bias: np.ndarray | None = None,
                  block: int = BLOCK) -> NDArray[np.float64]:
    """Softmax averages of the keys for every query row: the attention term of SPEC §1.

    For every row q_i of q it returns

        Σ_j softmax_j(⟨q_i, y_j⟩ + β_j) y_j,

    the mean of the empirical measure of the keys y_j tilted by exp(⟨q_i, y⟩ + β). Queries run
    in blocks of QUERY_BLOCK rows, keys in blocks of `block` rows, so memory stays
    O(QUERY_BLOCK · block + (m + N) d). Each query row is shifted by its maximum logit over the
    first key block, s_i; the later blocks are evaluated as one matrix product
    [q_i, −s_i, 1] · [y_j, 1, β_j] followed by an in-place exp, and the weights multiply
    [y_j, 1] so that the numerators and the denominator come from one product. A row whose
    denominator exceeds _SUM_LIMIT (a later logit above s_i + ~575) is recomputed with a
    streaming log-sum-exp that rescales at every block (the same result, never overflowing).

    Parameters
    ----------
    q : (m, d) ndarray of float
        The queries (for a head B, the rows B x_i of the tokens x_i).
    y : (N, d) ndarray of float
        The keys, which are also the values.
    key_bias : (N,) ndarray of float, optional
        The logit offsets β_j; None for none.
    block : int, optional
        Keys per block (default BLOCK).

    Returns
    -------
    (m, d) ndarray of float
        Row i is the softmax mean of the keys for query q_i.

    Raises
    ------
    ValueError
        From numpy when the shapes of q, y and key_bias do not agree (the arrays are not
        validated: this is the inner kernel of `simulate` and `velocity`).

    See Also
    --------
    velocity : the whole particle field X[μ_N], attention included.
    simulate : integrates the token cloud with this kernel.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §1 "The model: a Transformer as a flow of measures".
    .. [2] B. Geshkovski, C. Letrouit, Y. Polyanskiy, P. Rigollet, "A mathematical perspective
       on Transformers", arXiv:2312.10794, 2023.

    Examples
    --------
    Two keys in R^1: the query 1 weighs the key 1 by e and the key 0 by 1.

    >>> import numpy as np
    >>> from riccati_tf.empirical.particles import softmax_means
    >>> m = softmax_means(np.array([[1.0], [0.0]]), np.array([[0.0], [1.0]]))
    >>> print(round(float(m[0, 0]), 6), float(m[1, 0]))
    0.731059 0.5
    >>> bool(np.isclose(m[0, 0], np.e / (1 + np.e)))
    True
    """
    m, d = q.shape
    width = d + 1 if key_bias is None else d + 2
    keys = np.empty((y.shape[0], width))  # [y_j, 1, (β_j)]
    keys[:, :d] = y
    keys[:, d] = 1.0
    queries = np.zeros((m, width))  # [q_i, −s_i, (1)]
    queries[:, :d] = q
    if key_bias is not None:
        keys[:, d + 1] = key_bias
        queries[:, d + 1] = 1.0
    out = np.empty((m, d))
    scratch = np.empty((QUERY_BLOCK, min(block, y.shape[0])))
    for i0 in range(0, m, QUERY_BLOCK):
        rows = slice(i0, min(m, i0 + QUERY_BLOCK))
        acc = _single_shift_block(queries[rows], keys, d, block, scratch)
        redo = ~(acc[:, d] <= _SUM_LIMIT)  # also catches inf and NaN
        if np.any(redo):
            acc[redo] = _rescaled_block(queries[rows][redo], keys, d, block)
        np.divide(acc[:, :d], acc[:, d:d + 1], out=out[rows])
    return out


def _single_shift_block(q: np.ndarray, keys: np.ndarray, d: int, block: int,
                        scratch: np.ndarray) -> NDArray[np.float64]:
    """Σ_j e^{ℓ_ij − s_i} [y_j, 1] with s_i = max_j ℓ_ij over the first key block."""
    acc = np.zeros((q.shape[0], d + 1))
    part = np.empty_like(acc)
    with np.errstate(over="ignore", invalid="ignore"):
        for j0 in range(0, keys.shape[0], block):
            kj = keys[j0:j0 + block]
            # ⟨q_i, y_j⟩ + β_j − s_i, with q = [q, −s, (1)] and keys = [y, 1, (β)]
            L = np.matmul(q, kj.T, out=scratch[:q.shape[0], :kj.shape[0]])
            if j0 == 0:
                shift = L.max(axis=1)
                L -= shift[:, None]
                q[:, d] = -shift
            np.exp(L, out=L)
            acc += np.matmul(L, kj[:, :d + 1], out=part)
    return acc


def _rescaled_block(q: np.ndarray, keys: np.ndarray, d: int, block: int
                    ) -> NDArray[np.float64]:
    """Σ_j e^{ℓ_ij − s_i} [y_j, 1] with s_i the running maximum (streaming log-sum-exp); the
    shift column of q is reset so that the logits are exact."""
    q = q.copy()
    q[:, d] = 0.0
    run_max = np.full(q.shape[0], -np.inf)
    acc = np.zeros((q.shape[0], d + 1))
    for j0 in range(0, keys.shape[0], block):
        kj = keys[j0:j0 + block]
        L = q @ kj.T
        new_max = np.maximum(run_max, L.max(axis=1))
        acc *= np.exp(run_max - new_max)[:, None]
        acc += np.exp(L - new_max[:, None]) @ kj[:, :d + 1]
        run_max = new_max
    return acc


@dataclass(frozen=True, eq=False)
class FeedForward(ReadOnlyArrays):
    """A ReLU feed-forward term x ↦ W relu(U x + c) added to the particle field.

    With it the field of SPEC §1 reads

        ẋ_i = A x_i + b + Σ_h V_h Σ_j softmax_j(⟨B_h x_i, x_j⟩) x_j + W relu(U x_i + c),

    which breaks Gaussian invariance (SPEC §1); with A = 0 and b = 0 it replaces the affine
    layer. The arrays are converted to read-only float64 arrays.

    Parameters
    ----------
    W : (d, k) array_like
        The output weights.
    U : (k, d) array_like
        The hidden weights (k hidden units acting on R^d).
    c : (k,) array_like, optional
        The hidden bias (default 0).

    Raises
    ------
    InvalidInputError
        If U is not a 2-D finite real array, W is not (d, k) to match U, or c is not a finite
        (k,) vector (NaN/Inf, booleans, strings and complex entries are refused).

    See Also
    --------
    simulate : takes a FeedForward (or a callable t ↦ FeedForward) as `feedforward`.
    velocity : the field with the feed-forward term.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §1 "The model: a Transformer as a flow of measures".

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf.empirical.particles import FeedForward
    >>> ff = FeedForward(W=np.eye(2), U=np.array([[1.0, 0.0], [0.0, -1.0]]))
    >>> ff.d, ff.c.tolist()
    (2, [0.0, 0.0])
    """

    W: np.ndarray
    U: np.ndarray
    c: np.ndarray | None = None

    def __post_init__(self) -> None:
        U = as_array("U", self.U, ndim=2)
        W = as_array("W", self.W)
        k, d = U.shape
        if W.shape != (d, k):
            raise InvalidInputError(f"W must be ({d}, {k}) to match U of shape {U.shape}, "
                                    f"got {W.shape}")
        c = np.zeros(k) if self.c is None else as_vector("c", self.c, k)
        for arr in (U, W, c):
            arr.setflags(write=False)
        object.__setattr__(self, "U", U)
        object.__setattr__(self, "W", W)
        object.__setattr__(self, "c", c)

    @property
    def d(self) -> int:
        """The dimension d of the tokens."""
        return self.U.shape[1]

    def arrays(self) -> tuple[np.ndarray, ...]:
        """W, U and c: for finiteness checks."""
        return self.W, self.U, self.c  # type: ignore[return-value]  # c is set in __post_init__


@dataclass(frozen=True, eq=False)
class GaussianityTrace:
    """Gaussianity statistics of a simulated cloud at every recorded step (SPEC §7).

    One (k,) array per distance of `gaussianity.GaussianityStats` (skewness, kurtosis, energy,
    sliced_w2, third, fourth): how far the cloud at each of the k recorded times is from its
    moment-matched Gaussian.

    Parameters
    ----------
    values : dict of str to (k,) ndarray
        The statistic of each name at the k recorded times.

    Raises
    ------
    KeyError
        On indexing with a name that is not a statistic.

    See Also
    --------
    simulate : records it with ``metrics=True``.
    riccati_tf.empirical.gaussianity.statistics : the statistics of one cloud.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf.empirical.particles import GaussianityTrace
    >>> trace = GaussianityTrace({"kurtosis": np.array([8.0, 8.1])})
    >>> trace["kurtosis"].tolist()
    [8.0, 8.1]
    """

    values: dict[str, np.ndarray]

    def __getitem__(self, name: str) -> np.ndarray:
        """The (k,) values of the statistic `name`."""
        return self.values[name]


@dataclass(frozen=True, eq=False)
class ParticleRun:
    """Empirical moments of a simulated token cloud, the result of `simulate`.

    The moments of the empirical measure μ_N at the k = n_steps + 1 recorded times, to be set
    against the Gaussian flow Σ̇ = AΣ + ΣAᵀ + Σ_h (V_h Σ B_h Σ + Σ B_hᵀ Σ V_hᵀ) of SPEC §2 (they
    agree to O(N^{-1/2}) while ‖Σ^{1/2} B Σ^{1/2}‖ ≲ 1, module docstring).

    Parameters
    ----------
    t : (k,) ndarray of float
        The recorded times 0, τ, ..., t_final.
    mean : (k, d) ndarray of float
        The sample mean at each time.
    cov : (k, d, d) ndarray of float
        The sample covariance at each time, with the unbiased (N − 1) normalisation.
    n_tokens : int
        The number N of tokens.
    method : str
        The integrator, "rk4" or "euler".
    particles : (k, N, d) ndarray of float, optional
        The whole cloud at each time (``keep_particles=True``), else None.
    metrics : GaussianityTrace, optional
        The Gaussianity statistics at each time (``metrics=True``), else None.
    backend : str, optional
        "numpy" or "torch:<device>" (with ":float32" for a float32 attention term).

    Raises
    ------
    dataclasses.FrozenInstanceError
        On assignment to a field (the result is frozen).

    See Also
    --------
    simulate : produces it.
    empirical_moments : the moments of one cloud.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf import Params
    >>> from riccati_tf.empirical.particles import simulate
    >>> x0 = np.random.default_rng(0).standard_normal((64, 2))
    >>> run = simulate(Params(-np.eye(2)), x0, 1.0, n_steps=4)
    >>> run.t.shape, run.mean.shape, run.cov.shape, run.n_tokens, run.backend
    ((5,), (5, 2), (5, 2, 2), 64, 'numpy')
    """

    t: np.ndarray
    mean: np.ndarray
    cov: np.ndarray
    n_tokens: int
    method: str
    particles: np.ndarray | None = None
    metrics: GaussianityTrace | None = None
    backend: str = "numpy"


class _NumpyOps:
    """Array operations of the particle field on numpy arrays."""

    name = "numpy"

    def asarray(self, a: ArrayLike) -> NDArray[np.float64]:
        return np.asarray(a, dtype=float)

    def to_numpy(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        return x

    def attention(self, x: NDArray[np.float64], heads: Sequence[HeadPair], block: int
                  ) -> NDArray[np.float64]:
        return multi_head_attention(x, x, heads, block=block)

    def relu(self, z: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.maximum(z, 0.0)

    def all_finite(self, x: NDArray[np.float64]) -> bool:
        return bool(np.all(np.isfinite(x)))


class _TorchOps:
    """The same operations on torch float64 tensors (CPU or CUDA). Attention in `dtype`: on the
    CPU in float64 the numpy kernel on the tensors' memory, otherwise
    torch.nn.functional.scaled_dot_product_attention (scale 1) with the 4-D layout
    (1, heads, queries, d) over blocks of `block` queries."""

    def __init__(self, device: str | None, dtype: str) -> None:
        import torch

        self.torch = torch
        try:
            self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        except (RuntimeError, TypeError, ValueError) as exc:
            raise InvalidInputError(f"device {device!r} is not a torch device "
                                    f"({str(exc).splitlines()[0]})") from None
        try:  # a device torch knows but this machine lacks (CUDA not compiled in, no GPU)
            torch.zeros(1, device=self.device)
        except (AssertionError, RuntimeError) as exc:
            raise InvalidInputError(f"device {str(self.device)!r} is not available here "
                                    f"({str(exc).splitlines()[0]})") from None
        self.dtype = getattr(torch, dtype)
        self.name = f"torch:{self.device}" + ("" if dtype == "float64" else f":{dtype}")
        self.numpy_kernel = self.device.type == "cpu" and dtype == "float64"

    def asarray(self, a: ArrayLike) -> Any:
        return self.torch.tensor(np.asarray(a, dtype=float), device=self.device)

    def to_numpy(self, x: Any) -> NDArray[np.float64]:
        return x.detach().cpu().numpy()

    def attention(self, x: Any, heads: Sequence[HeadPair], block: int) -> Any:
        if self.numpy_kernel:
            return self.torch.from_numpy(multi_head_attention(x.numpy(), x.numpy(), heads,
                                                              block=block))
        return self.sdpa_attention(x, heads, block)

    def sdpa_attention(self, x: Any, heads: Sequence[HeadPair], block: int) -> Any:
        """Σ_h V_h softmax(B_h x xᵀ) x by scaled_dot_product_attention in `dtype`, all heads in
        one call per block of `block` queries."""
        torch = self.torch
        Bs = self.asarray(np.array([B for _, B in heads]))
        Vs = self.asarray(np.array([V for V, _ in heads]))
        q = (x @ Bs.transpose(1, 2)).to(self.dtype)[None]  # (1, H, N, d): the queries B_h x_i
        kv = x.to(self.dtype)[None, None].expand(q.shape)  # the tokens, shared by the heads
        means = torch.empty_like(q)
        for i0 in range(0, x.shape[0], block):
            means[:, :, i0:i0 + block] = torch.nn.functional.scaled_dot_product_attention(
                q[:, :, i0:i0 + block], kv, kv, scale=1.0)
        return (means[0].to(x.dtype) @ Vs.transpose(1, 2)).sum(dim=0)

    def relu(self, z: Any) -> Any:
        return self.torch.relu(z)

    def all_finite(self, x: Any) -> bool:
        return bool(self.torch.isfinite(x).all())


def _ops(backend: str, device: str | None, dtype: str = "float64") -> _NumpyOps | _TorchOps:
    if not (isinstance(dtype, str) and dtype in DTYPES):
        raise InvalidInputError(f"dtype must be one of {DTYPES}, got {dtype!r}")
    if backend == "numpy":
        if device not in (None, "cpu"):
            raise InvalidInputError(f"device {device!r} needs backend='torch'")
        if dtype != "float64":
            raise InvalidInputError(f"dtype {dtype!r} needs backend='torch'")
        return _NumpyOps()
    if backend == "torch":
        return _TorchOps(device, dtype)
    raise InvalidInputError(f"backend must be one of {BACKENDS}, got {backend!r}")


def _field(ops: _NumpyOps | _TorchOps, params: Params, feedforward: FeedForward | None,
           x: Any, block: int) -> Any:
    """X[μ_N](x) with the arrays of one backend (numpy arrays or torch tensors)."""
    out = x @ ops.asarray(params.A).T + ops.asarray(params.b)
    heads = [(V, B) for V, B in params.heads if np.any(V)]
    if heads:
        out = out + ops.attention(x, heads, block)
    if feedforward is not None:
        assert feedforward.c is not None  # FeedForward.__post_init__ sets c = 0 when omitted
        hidden = ops.relu(x @ ops.asarray(feedforward.U).T + ops.asarray(feedforward.c))
        out = out + hidden @ ops.asarray(feedforward.W).T
    return out


def velocity(params: Params, x: ArrayLike, *, block: int = BLOCK,
             feedforward: FeedForward | None = None, backend: str = "numpy",
             device: str | None = None, dtype: str = "float64") -> NDArray[np.float64]:
    """The velocity field X[μ_N] of the N-token system at every token (SPEC §1).

    For the empirical measure μ_N of the cloud x,

        X[μ_N](x_i) = A x_i + b + Σ_h V_h Σ_j softmax_j(⟨B_h x_i, x_j⟩) x_j [+ W relu(U x_i + c)].

    Parameters
    ----------
    params : Params
        The layer (A, b and the heads (V_h, B_h)); heads with V_h = 0 are skipped.
    x : (N, d) array_like
        The tokens.
    block : int, optional
        Keys per block of the softmax (default BLOCK; queries per block on the torch backend).
    feedforward : FeedForward, optional
        Adds W relu(U x + c); None for none.
    backend : {"numpy", "torch"}, optional
        As in `simulate`.
    device : str, optional
        A torch device (backend "torch" only; "cpu" or None with numpy).
    dtype : {"float64", "float32"}, optional
        The precision of the attention term ("float32" needs backend "torch").

    Returns
    -------
    (N, d) ndarray of float
        X[μ_N](x_i) in row i, as a numpy array on every backend.

    Raises
    ------
    InvalidInputError
        For an unknown backend or dtype, a device or float32 without backend "torch", or a
        device torch does not know.
    ImportError
        For backend "torch" without torch installed.

    See Also
    --------
    simulate : integrates ẋ_i = X[μ_N](x_i).
    softmax_means : the attention kernel.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §1 "The model: a Transformer as a flow of measures".
    .. [2] B. Geshkovski, C. Letrouit, Y. Polyanskiy, P. Rigollet, "A mathematical perspective
       on Transformers", arXiv:2312.10794, 2023.

    Examples
    --------
    Pure attention (A = 0, B = V = 1) on two tokens of R^1: each token moves to its softmax
    mean.

    >>> import numpy as np
    >>> from riccati_tf import Params
    >>> from riccati_tf.empirical.particles import velocity
    >>> v = velocity(Params(np.zeros((1, 1)), B=np.eye(1), V=np.eye(1)), [[0.0], [1.0]])
    >>> np.round(v, 6)
    array([[0.5     ],
           [0.731059]])
    """
    ops = _ops(backend, device, dtype)
    return ops.to_numpy(_field(ops, params, feedforward, ops.asarray(x), block))


def empirical_moments(x: np.ndarray) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Sample mean and unbiased sample covariance of an (N, d) cloud.

    The moments of the empirical measure μ_N that SPEC §7 sets against the Gaussian flow:
    m̂ = (1/N) Σ_i x_i and Σ̂ = (1/(N − 1)) Σ_i (x_i − m̂)(x_i − m̂)ᵀ.

    Parameters
    ----------
    x : (N, d) ndarray of float, N ≥ 2
        The tokens, one per row (not validated: the cloud of `simulate`).

    Returns
    -------
    mean : (d,) ndarray of float
        The sample mean m̂.
    cov : (d, d) ndarray of float
        The unbiased sample covariance Σ̂.

    Raises
    ------
    ValueError
        From numpy when x is not 2-D (an N = 1 cloud gives a division by zero: inf or NaN).
        The products are formed on x − m̂ scaled by a power of two, so Σ̂ is inf only where its
        entries themselves exceed float64 (which `simulate` refuses).

    See Also
    --------
    simulate : records these moments at every step.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf.empirical.particles import empirical_moments
    >>> m, S = empirical_moments(np.array([[0.0, 1.0], [2.0, 1.0]]))
    >>> m.tolist(), S.tolist()
    ([1.0, 1.0], [[2.0, 0.0], [0.0, 0.0]])
    """
    mean = x.mean(axis=0)
    xc = x - mean
    e = scale_exponent(xc)  # 0 for a cloud of moderate size: the same products as unscaled
    if not e:
        return mean, xc.T @ xc / (x.shape[0] - 1)
    xs = np.ldexp(xc, -e)
    with np.errstate(over="ignore"):  # a Σ̂ beyond float64 is inf (simulate refuses it)
        return mean, np.ldexp(xs.T @ xs / (x.shape[0] - 1), 2 * e)


def _as_schedule(name: str, value: Any, cls: type[Params] | type[FeedForward], d: int,
                 optional: bool) -> Callable[[float], Any]:
    """A constant cls on R^d, checked once, or a callable t ↦ cls checked at every call
    (`checked_schedule`: InvalidInputError naming name(t) and the time)."""
    if value is None and optional:
        return lambda _t: None
    if not callable(value):
        check_layer(name, value, cls, d)
        return lambda _t: value
    fn = checked_schedule(name, value, cls, d)
    fn(0.0)
    return fn


def simulate(params: Params | Callable[[float], Params], x0: ArrayLike, t_final: float, *,
             n_steps: int, method: str = "rk4", keep_particles: bool = False,
             block: int = BLOCK,
             feedforward: FeedForward | Callable[[float], FeedForward] | None = None,
             backend: str = "numpy", device: str | None = None, metrics: bool = False,
             metrics_seed: int = 0, dtype: str = "float64") -> ParticleRun:
    """Integrate the N-token system ẋ_i = X[μ_N](x_i) on [0, t_final] with n_steps fixed steps.

    The finite-N particle system of SPEC §1,

        ẋ_i = A x_i + b + Σ_h V_h Σ_j softmax_j(⟨B_h x_i, x_j⟩) x_j  [+ W relu(U x_i + c)],

    whose empirical moments follow the Gaussian flow of SPEC §2 to O(N^{-1/2}) while
    ‖Σ^{1/2} B Σ^{1/2}‖ ≲ 1 (module docstring). A finite cloud never blows up: the attention
    term is a convex combination of the tokens. The softmax is streamed in blocks
    (`softmax_means`, memory O(QUERY_BLOCK · block + H N d)).

    Parameters
    ----------
    params : Params or callable float -> Params
        The layer, or a schedule t ↦ Params (time-varying controls), checked at t = 0 to act on
        R^d.
    x0 : (N, d) array_like, N ≥ 2
        The initial tokens.
    t_final : float
        The final time, > 0.
    n_steps : int
        Fixed steps of length τ = t_final / n_steps, 1 ≤ n_steps ≤ MAX_STEPS.
    method : {"rk4", "euler"}, optional
        Classical Runge–Kutta (default), or "euler": the residual network x⁺ = x + τ X(x).
    keep_particles : bool, optional
        Also return the whole cloud at every step (at most MAX_KEPT numbers).
    block : int, optional
        Keys per softmax block (default BLOCK).
    feedforward : FeedForward or callable float -> FeedForward, optional
        Adds W relu(U x + c) to the field (constant or a schedule); None for none.
    backend : {"numpy", "torch"}, optional
        "numpy" (float64, default) or "torch" (float64 tensors on `device`).
    device : str, optional
        The torch device (default CUDA when available, else the CPU); None or "cpu" with numpy.
    metrics : bool, optional
        Record `gaussianity.statistics` of the cloud at every step.
    metrics_seed : int, optional
        Seed of the sliced-W2 directions of the metrics (default 0).
    dtype : {"float64", "float32"}, optional
        Precision of the attention term; "float32" needs backend "torch" (the state, the affine
        and ReLU terms and the integrator stay float64; the velocity error is bounded by
        FLOAT32_VELOCITY_RTOL on the documented case).

    Returns
    -------
    ParticleRun
        Times, sample means and unbiased covariances at the n_steps + 1 recorded times (and
        the particles and metrics when requested).

    Raises
    ------
    InvalidInputError
        If x0 is not a finite (N, d) array with N ≥ 2, t_final is not a positive finite number,
        n_steps or block is not a positive integer (n_steps ≤ MAX_STEPS), metrics_seed is not a
        valid seed, keep_particles would store more than MAX_KEPT numbers, method, backend,
        device or dtype is not one of the accepted values, or params / feedforward is not a
        Params / FeedForward on R^d (or a callable returning one).
    SolverError
        If the cloud, or its empirical covariance (entries beyond about 1e308), overflows
        float64.
    ImportError
        For backend "torch" without torch installed.

    See Also
    --------
    velocity : the field X[μ_N] at one time.
    empirical_moments : the moments recorded at every step.
    riccati_tf.flow : the Gaussian flow these moments approximate.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §1 "The model: a Transformer as a flow of measures" and
       SPEC §7 "Validation against real Transformers".
    .. [2] B. Geshkovski, C. Letrouit, Y. Polyanskiy, P. Rigollet, "A mathematical perspective
       on Transformers", arXiv:2312.10794, 2023.

    Examples
    --------
    Without attention the cloud contracts like e^{At}: the covariance at t = 1 is e^{−2} Σ0.

    >>> import numpy as np
    >>> from riccati_tf import Params
    >>> from riccati_tf.empirical.particles import simulate
    >>> x0 = np.random.default_rng(0).standard_normal((256, 2))
    >>> run = simulate(Params(-np.eye(2)), x0, 1.0, n_steps=20)
    >>> bool(np.allclose(run.cov[-1], np.exp(-2) * run.cov[0], rtol=1e-6))
    True

    With one attention head (B = I, V = I/2) the cloud stays finite: the attention term is a
    convex combination of the tokens.

    >>> run = simulate(Params(np.zeros((2, 2)), B=np.eye(2), V=0.5 * np.eye(2)), x0, 0.5,
    ...                n_steps=10, keep_particles=True)
    >>> run.particles.shape, bool(np.all(np.isfinite(run.cov)))
    ((11, 256, 2), True)
    """
    x = as_cloud("x0", x0)
    t_final = as_time("t_final", t_final)
    n_steps = as_count("n_steps", n_steps, maximum=MAX_STEPS, limit="particles.MAX_STEPS")
    block = as_count("block", block)
    metrics_seed = as_seed("metrics_seed", metrics_seed)
    if keep_particles and (n_steps + 1) * x.size > MAX_KEPT:
        raise InvalidInputError(f"keep_particles would store (n_steps + 1) · N · d = "
                                f"{(n_steps + 1) * x.size} numbers, over the limit {MAX_KEPT} "
                                f"(particles.MAX_KEPT)")
    if method not in ("rk4", "euler"):
        raise InvalidInputError(f"method must be 'rk4' or 'euler', got {method!r}")
    d = x.shape[1]
    params_fn = _as_schedule("params", params, Params, d, optional=False)
    ff_fn = _as_schedule("feedforward", feedforward, FeedForward, d, optional=True)
    ops = _ops(backend, device, dtype)
    if metrics:
        from .gaussianity import statistics

    def field(t: float, x: Any) -> Any:
        return _field(ops, params_fn(t), ff_fn(t), x, block)

    tau = t_final / n_steps
    ts = tau * np.arange(n_steps + 1)
    means: list[np.ndarray] = []
    covs: list[np.ndarray] = []
    clouds: list[np.ndarray] = []
    rows: list[dict[str, float]] = []

    def record(x: Any, t: float) -> None:
        arr = ops.to_numpy(x)
        with np.errstate(over="ignore", invalid="ignore"):  # reported below
            m, S = empirical_moments(arr)
            finite = bool(np.all(np.isfinite(S)) and np.all(np.isfinite(m)))  # d × d: cheap
        if not finite:
            raise SolverError(f"the empirical covariance of the particle cloud overflows float64 "
                              f"at t = {t:.6g} (tokens up to {np.abs(arr).max():.3g} in size)")
        means.append(m)
        covs.append(S)
        if keep_particles:
            clouds.append(arr.copy())
        if metrics:
            rows.append(statistics(arr, seed=metrics_seed).as_dict())

    x = ops.asarray(x)
    record(x, 0.0)
    for k in range(n_steps):
        t = ts[k]
        with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported below
            k1 = field(t, x)
            if method == "euler":
                x = x + tau * k1
            else:
                k2 = field(t + tau / 2, x + tau / 2 * k1)
                k3 = field(t + tau / 2, x + tau / 2 * k2)
                k4 = field(t + tau, x + tau * k3)
                x = x + tau / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        if not ops.all_finite(x):
            raise SolverError(f"the particle cloud overflowed at t = {ts[k + 1]:.6g}")
        record(x, ts[k + 1])
    trace = None
    if metrics:
        trace = GaussianityTrace({name: np.array([r[name] for r in rows]) for name in rows[0]
                                  if name not in ("n", "rank")})
    return ParticleRun(ts, np.array(means), np.array(covs), x.shape[0], method,
                       np.array(clouds) if keep_particles else None, trace, ops.name)

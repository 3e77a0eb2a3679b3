"""The symbols of the moment calculus, element-wise (fixed d) and dimension-free (MatrixSymbol).

Element-wise: for a fixed dimension d, x ~ N(m, Σ) is written with scalar symbols x_i, m_i and
Σ_ij = Σ_ji (one symbol per unordered pair, so the covariance is symmetric by construction), and
the controls A, b, (V_h, B_h), K_h, (W, U, c) as matrices of scalar symbols. Names are valid Python
identifiers (``A_1_2``, ``Sigma_1_2``, ``V2_1_1`` for head 2) so that generated code can use them;
the LaTeX names (``A_{1,2}``, ``\\Sigma_{1,2}``, ``V^{(2)}_{1,1}``) are kept in `LATEX_NAMES`.

Dimension-free: the same objects as `MatrixSymbol`s of symbolic size `DIM` × `DIM` (hidden width
`WIDTH` for the feed-forward layer). Σ is symmetric by convention: derivations replace Σᵀ by Σ.
Indices in names and LaTeX are 1-based, as in the mathematics.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import sympy as sp

from ..errors import InvalidInputError
from ..state.validation import as_count

#: symbolic dimension of the dimension-free (MatrixSymbol) form
DIM = sp.Symbol("d", integer=True, positive=True)
#: symbolic hidden width of the ReLU feed-forward layer in the dimension-free form
WIDTH = sp.Symbol("k", integer=True, positive=True)

KERNELS = ("dot", "l2")
FFNS = ("affine", "relu")

#: LaTeX spelling of every element-wise symbol created here (used by `latex`)
LATEX_NAMES: dict[sp.Symbol, str] = {}


def _symbol(name: str, latex: str) -> sp.Symbol:
    s = sp.Symbol(name, real=True)
    LATEX_NAMES[s] = latex
    return s


def _head_tags(base: str, head: int | None) -> tuple[str, str]:
    if head is None:
        return base, base
    return f"{base}{head}", f"{base}^{{({head})}}"


def symbol_matrix(base: str, rows: int, cols: int, *, head: int | None = None,
                  symmetric: bool = False, latex: str | None = None) -> sp.ImmutableMatrix:
    """A rows × cols matrix of real scalar symbols ``base_i_j`` (1-based); with symmetric=True
    entry (i, j) and (j, i) are the same symbol ``base_min_max``."""
    name, tex = _head_tags(base, head)
    tex = latex if latex is not None else tex

    def entry(i, j):
        if symmetric and i > j:
            i, j = j, i
        return _symbol(f"{name}_{i + 1}_{j + 1}", f"{tex}_{{{i + 1},{j + 1}}}")

    return sp.ImmutableMatrix(rows, cols, lambda i, j: entry(i, j))


def symbol_vector(base: str, n: int) -> sp.ImmutableMatrix:
    """An n × 1 column of real scalar symbols ``base_i`` (1-based)."""
    return sp.ImmutableMatrix(n, 1, lambda i, _: _symbol(f"{base}_{i + 1}", f"{base}_{{{i + 1}}}"))


@dataclass(frozen=True, eq=False)
class GaussianSymbols:
    """x ~ N(m, Σ) on R^d: `x`, `mean` (d×1) and `cov` (d×d, symmetric), element-wise symbols or
    dimension-free MatrixSymbols (`matrix=True`)."""

    x: sp.MatrixBase | sp.MatrixSymbol
    mean: sp.MatrixBase | sp.MatrixSymbol
    cov: sp.MatrixBase | sp.MatrixSymbol
    matrix: bool = False

    @property
    def d(self):
        return self.x.shape[0]

    @property
    def xs(self) -> tuple[sp.Symbol, ...]:
        """The coordinates x_1, ..., x_d (element-wise form only)."""
        return tuple(self.x)


@cache
def gaussian_symbols(d: int) -> GaussianSymbols:
    """Element-wise symbols of x ~ N(m, Σ) in R^d."""
    d = as_count("d", d)
    return GaussianSymbols(symbol_vector("x", d), symbol_vector("m", d),
                           symbol_matrix("Sigma", d, d, symmetric=True, latex=r"\Sigma"))


@cache
def matrix_gaussian() -> GaussianSymbols:
    """Dimension-free symbols x, m (DIM × 1) and Σ (DIM × DIM, symmetric by convention)."""
    return GaussianSymbols(sp.MatrixSymbol("x", DIM, 1), sp.MatrixSymbol("m", DIM, 1),
                           sp.MatrixSymbol("Sigma", DIM, DIM), matrix=True)


@dataclass(frozen=True, eq=False)
class LayerSymbols:
    """The controls of SPEC §1 as symbols: A (d×d), b (d×1), heads ((V_h, B_h), ...), keys (K_h,
    one per head, Gaussian-kernel attention only, else None) and ffn (W d×k, U k×d, c k×1, ReLU
    feed-forward only, else None). Entries are element-wise symbol matrices or MatrixSymbols."""

    A: object
    b: object
    heads: tuple[tuple[object, object], ...]
    keys: tuple[object, ...] | None = None
    ffn: tuple[object, object, object] | None = None

    def items(self) -> list[tuple[str, object]]:
        """(binding name, symbol matrix) in a fixed order: "A", "b", ("V", h), ("B", h), ("K", h),
        "W", "U", "c" — the names `compile_moment_rhs` maps to numbers."""
        out = [("A", self.A), ("b", self.b)]
        for h, (V, B) in enumerate(self.heads):
            out += [(("V", h), V), (("B", h), B)]
        for h, K in enumerate(self.keys or ()):
            out.append((("K", h), K))
        if self.ffn is not None:
            out += list(zip(("W", "U", "c"), self.ffn, strict=True))
        return out


def check_options(heads, kernel, ffn) -> int:
    """Validate the transformer options; returns heads as an int."""
    heads = as_count("heads", heads)
    if kernel not in KERNELS:
        raise InvalidInputError(f"kernel must be one of {KERNELS}, got {kernel!r}")
    if ffn not in FFNS:
        raise InvalidInputError(f"ffn must be one of {FFNS}, got {ffn!r}")
    return heads


@cache
def layer_symbols(d: int, heads: int = 1, kernel: str = "dot", ffn: str = "affine",
                  width: int | None = None) -> LayerSymbols:
    """Element-wise control symbols on R^d (hidden width `width`, default d, for ffn="relu")."""
    d = as_count("d", d)
    heads = check_options(heads, kernel, ffn)
    tag = (lambda h: None) if heads == 1 else (lambda h: h + 1)
    pairs = tuple((symbol_matrix("V", d, d, head=tag(h)), symbol_matrix("B", d, d, head=tag(h)))
                  for h in range(heads))
    keys = (tuple(symbol_matrix("K", d, d, head=tag(h)) for h in range(heads))
            if kernel == "l2" else None)
    ffn_syms = None
    if ffn == "relu":
        k = d if width is None else as_count("width", width)
        ffn_syms = (symbol_matrix("W", d, k), symbol_matrix("U", k, d), symbol_vector("c", k))
    return LayerSymbols(symbol_matrix("A", d, d), symbol_vector("b", d), pairs, keys, ffn_syms)


@cache
def matrix_layer_symbols(heads: int = 1, kernel: str = "dot", ffn: str = "affine") -> LayerSymbols:
    """Dimension-free control symbols (MatrixSymbols of size DIM, hidden width WIDTH)."""
    heads = check_options(heads, kernel, ffn)
    n, k = DIM, WIDTH
    tag = (lambda base, h: base) if heads == 1 else (lambda base, h: f"{base}_{h + 1}")
    pairs = tuple((sp.MatrixSymbol(tag("V", h), n, n), sp.MatrixSymbol(tag("B", h), n, n))
                  for h in range(heads))
    keys = (tuple(sp.MatrixSymbol(tag("K", h), n, n) for h in range(heads))
            if kernel == "l2" else None)
    ffn_syms = ((sp.MatrixSymbol("W", n, k), sp.MatrixSymbol("U", k, n),
                 sp.MatrixSymbol("c", k, 1)) if ffn == "relu" else None)
    return LayerSymbols(sp.MatrixSymbol("A", n, n), sp.MatrixSymbol("b", n, 1), pairs, keys,
                        ffn_syms)

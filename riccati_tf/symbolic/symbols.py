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

__all__ = [
    "DIM",
    "WIDTH",
    "GaussianSymbols",
    "LayerSymbols",
    "gaussian_symbols",
    "layer_symbols",
    "matrix_gaussian",
    "matrix_layer_symbols",
    "symbol_matrix",
    "symbol_vector",
]

#: symbolic dimension of the dimension-free (MatrixSymbol) form
DIM = sp.Symbol("d", integer=True, positive=True)
#: symbolic hidden width of the ReLU feed-forward layer in the dimension-free form
WIDTH = sp.Symbol("k", integer=True, positive=True)

KERNELS = ("dot", "l2")
FFNS = ("affine", "relu")

#: LaTeX spelling of every element-wise symbol created here (used by `latex`)
LATEX_NAMES: dict[sp.Symbol, str] = {}

#: the binding name of a control in `LayerSymbols.items`: "A", "b", "W", "U", "c", or
#: (kind, head) with kind "V", "B" or "K" and head 0-based
Binding = str | tuple[str, int]


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
    """A rows × cols matrix of real scalar symbols ``base_i_j`` (indices 1-based).

    The element-wise form of a control or of a covariance: entry (i, j) is the real symbol
    ``base_i_j`` (``base<head>_i_j`` for head `head` of a multi-head layer), spelt
    ``base_{i,j}`` in LaTeX (`LATEX_NAMES`). With ``symmetric=True`` entries (i, j) and (j, i)
    are the same symbol ``base_min_max``, so that Σ = Σᵀ holds by construction.

    Parameters
    ----------
    base : str
        The letter of the matrix (a valid Python identifier: generated code uses the names).
    rows, cols : int
        The shape.
    head : int, optional
        The 1-based head number, appended to the name (``V2_1_1``) and set as a superscript in
        LaTeX (``V^{(2)}_{1,1}``); None (default) for a single head.
    symmetric : bool, optional
        One symbol per unordered pair of indices (default False).
    latex : str, optional
        The LaTeX spelling of `base` (e.g. ``\\Sigma``); default: derived from `base` and
        `head`.

    Returns
    -------
    sympy.ImmutableMatrix
        The (rows, cols) matrix of real symbols.

    Raises
    ------
    None
        The arguments are used as given (SymPy refuses non-integer shapes).

    See Also
    --------
    symbol_vector : the column of symbols ``base_i``.
    gaussian_symbols : Σ built with ``symmetric=True``.
    layer_symbols : the controls A, V_h, B_h, K_h, W, U built from it.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §1 "The model: a Transformer as a flow of measures".

    Examples
    --------
    >>> from riccati_tf.symbolic.symbols import symbol_matrix
    >>> S = symbol_matrix("S", 2, 2, symmetric=True)
    >>> S[0, 1] == S[1, 0], S.is_symmetric()
    (True, True)
    >>> symbol_matrix("V", 1, 2, head=2)
    Matrix([[V2_1_1, V2_1_2]])
    """
    name, tex = _head_tags(base, head)
    tex = latex if latex is not None else tex

    def entry(i: int, j: int) -> sp.Symbol:
        if symmetric and i > j:
            i, j = j, i
        return _symbol(f"{name}_{i + 1}_{j + 1}", f"{tex}_{{{i + 1},{j + 1}}}")

    return sp.ImmutableMatrix(rows, cols, lambda i, j: entry(i, j))


def symbol_vector(base: str, n: int) -> sp.ImmutableMatrix:
    """An n × 1 column of real scalar symbols ``base_i`` (indices 1-based).

    Parameters
    ----------
    base : str
        The letter of the vector (a valid Python identifier), e.g. ``"b"`` for the bias.
    n : int
        The number of components.

    Returns
    -------
    sympy.ImmutableMatrix
        The (n, 1) column of real symbols ``base_1, ..., base_n``.

    Raises
    ------
    None
        The arguments are used as given.

    See Also
    --------
    symbol_matrix : a matrix of symbols.
    gaussian_symbols : x and m built from it.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §1 "The model: a Transformer as a flow of measures".

    Examples
    --------
    >>> from riccati_tf.symbolic.symbols import symbol_vector
    >>> b = symbol_vector("b", 2)
    >>> b.shape, b[1], b[1].is_real
    ((2, 1), b_2, True)
    """
    return sp.ImmutableMatrix(n, 1, lambda i, _: _symbol(f"{base}_{i + 1}", f"{base}_{{{i + 1}}}"))


@dataclass(frozen=True, eq=False)
class GaussianSymbols:
    """The symbols of x ~ N(m, Σ) on R^d: the token x, the mean m and the covariance Σ.

    Element-wise (`matrix` False): x and m are d × 1 columns of real symbols ``x_i``, ``m_i`` and
    Σ a d × d matrix with one symbol ``Sigma_i_j`` per unordered pair (symmetric by
    construction). Dimension-free (`matrix` True): MatrixSymbols of size `DIM`, Σ symmetric by
    the convention Σᵀ = Σ of the derivations.

    Parameters
    ----------
    x : (d, 1) sympy.MatrixBase or MatrixSymbol
        The token.
    mean : (d, 1) sympy.MatrixBase or MatrixSymbol
        The mean m.
    cov : (d, d) sympy.MatrixBase or MatrixSymbol
        The covariance Σ.
    matrix : bool, optional
        True for the dimension-free form (default False).

    Raises
    ------
    None
        Built by `gaussian_symbols` and `matrix_gaussian`, which check d.

    See Also
    --------
    gaussian_symbols : the element-wise symbols at a fixed d.
    matrix_gaussian : the dimension-free symbols.
    LayerSymbols : the controls the field is written with.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".

    Examples
    --------
    >>> from riccati_tf.symbolic import gaussian_symbols
    >>> g = gaussian_symbols(2)
    >>> g.d, g.xs, g.cov.is_symmetric()
    (2, (x_1, x_2), True)
    """

    x: sp.MatrixBase | sp.MatrixSymbol
    mean: sp.MatrixBase | sp.MatrixSymbol
    cov: sp.MatrixBase | sp.MatrixSymbol
    matrix: bool = False

    @property
    def d(self) -> int | sp.Expr:
        """The dimension: an int (element-wise) or the symbol `DIM` (dimension-free)."""
        return self.x.shape[0]

    @property
    def xs(self) -> tuple[sp.Symbol, ...]:
        """The coordinates x_1, ..., x_d (element-wise form only)."""
        return tuple(self.x)


@cache
def gaussian_symbols(d: int) -> GaussianSymbols:
    """Element-wise symbols of x ~ N(m, Σ) in R^d.

    Parameters
    ----------
    d : int
        The dimension, d ≥ 1.

    Returns
    -------
    GaussianSymbols
        x = (x_1, ..., x_d)ᵀ, m = (m_1, ..., m_d)ᵀ and the symmetric Σ = (Sigma_i_j); the same
        object for the same d (cached).

    Raises
    ------
    InvalidInputError
        If d is not a positive integer.

    See Also
    --------
    matrix_gaussian : the dimension-free symbols.
    derive_moment_equations : fields are written in these symbols.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".

    Examples
    --------
    >>> from riccati_tf.symbolic import gaussian_symbols
    >>> g = gaussian_symbols(2)
    >>> g.mean.T, g.cov[0, 1] == g.cov[1, 0]
    (Matrix([[m_1, m_2]]), True)
    """
    d = as_count("d", d)
    return GaussianSymbols(symbol_vector("x", d), symbol_vector("m", d),
                           symbol_matrix("Sigma", d, d, symmetric=True, latex=r"\Sigma"))


@cache
def matrix_gaussian() -> GaussianSymbols:
    """Dimension-free symbols x, m (DIM × 1) and Σ (DIM × DIM, symmetric by convention).

    Returns
    -------
    GaussianSymbols
        MatrixSymbols ``x``, ``m`` and ``Sigma`` of symbolic size `DIM` with ``matrix=True``
        (cached: the same object at every call).

    Raises
    ------
    None
        Nothing to check.

    See Also
    --------
    gaussian_symbols : the element-wise symbols at a fixed d.
    matrix_layer_symbols : the dimension-free controls.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".

    Examples
    --------
    >>> from riccati_tf.symbolic import matrix_gaussian
    >>> g = matrix_gaussian()
    >>> g.matrix, g.cov.shape
    (True, (d, d))
    """
    return GaussianSymbols(sp.MatrixSymbol("x", DIM, 1), sp.MatrixSymbol("m", DIM, 1),
                           sp.MatrixSymbol("Sigma", DIM, DIM), matrix=True)


@dataclass(frozen=True, eq=False)
class LayerSymbols:
    """The controls of SPEC §1 as symbols, for the field

        X(x) = A x + b + Σ_h V_h E_h[y | x] (+ W relu(U x + c)).

    Entries are element-wise symbol matrices (`layer_symbols`) or MatrixSymbols
    (`matrix_layer_symbols`).

    Parameters
    ----------
    A : (d, d) sympy matrix or MatrixSymbol
        The affine feed-forward matrix.
    b : (d, 1) sympy matrix or MatrixSymbol
        The bias.
    heads : tuple of ((d, d), (d, d)) pairs
        (V_h, B_h) for every attention head: value and query–key matrices.
    keys : tuple of (d, d) matrices, optional
        K_h, one per head, for Gaussian-kernel ("l2") attention only; None otherwise.
    ffn : tuple (W, U, c), optional
        The ReLU feed-forward layer, W (d, k), U (k, d), c (k, 1); None for an affine layer.

    Raises
    ------
    None
        Built by `layer_symbols` and `matrix_layer_symbols`, which check the options.

    See Also
    --------
    layer_symbols : the element-wise controls.
    matrix_layer_symbols : the dimension-free controls.
    compile_moment_rhs : maps the `items` to the arrays of a `Params`.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §1 "The model: a Transformer as a flow of measures".

    Examples
    --------
    >>> from riccati_tf.symbolic import layer_symbols
    >>> L = layer_symbols(1, heads=2)
    >>> [name for name, _ in L.items()]
    ['A', 'b', ('V', 0), ('B', 0), ('V', 1), ('B', 1)]
    """

    A: sp.MatrixBase | sp.MatrixSymbol
    b: sp.MatrixBase | sp.MatrixSymbol
    heads: tuple[tuple[sp.MatrixBase | sp.MatrixSymbol, sp.MatrixBase | sp.MatrixSymbol], ...]
    keys: tuple[sp.MatrixBase | sp.MatrixSymbol, ...] | None = None
    ffn: tuple[sp.MatrixBase | sp.MatrixSymbol, sp.MatrixBase | sp.MatrixSymbol,
               sp.MatrixBase | sp.MatrixSymbol] | None = None

    def items(self) -> list[tuple[Binding, sp.MatrixBase | sp.MatrixSymbol]]:
        """(binding name, symbol matrix) in a fixed order: "A", "b", ("V", h), ("B", h), ("K", h),
        "W", "U", "c" — the names `compile_moment_rhs` maps to numbers."""
        out: list[tuple[Binding, sp.MatrixBase | sp.MatrixSymbol]] = [("A", self.A),
                                                                       ("b", self.b)]
        for h, (V, B) in enumerate(self.heads):
            out += [(("V", h), V), (("B", h), B)]
        for h, K in enumerate(self.keys or ()):
            out.append((("K", h), K))
        if self.ffn is not None:
            out += list(zip(("W", "U", "c"), self.ffn, strict=True))
        return out


def check_options(heads: int, kernel: str, ffn: str) -> int:
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
    """Element-wise control symbols on R^d (hidden width `width`, default d, for ffn="relu").

    Parameters
    ----------
    d : int
        The dimension, d ≥ 1.
    heads : int, optional
        The number of attention heads (default 1); with more than one, the head number is part
        of the names (``V2_1_1``).
    kernel : {"dot", "l2"}, optional
        "dot" (default): softmax of ⟨B_h x, y⟩; "l2": Gaussian-kernel attention, which adds the
        key matrices K_h.
    ffn : {"affine", "relu"}, optional
        "affine" (default): A x + b; "relu": also W relu(U x + c).
    width : int, optional
        The hidden width k of the ReLU layer (default d).

    Returns
    -------
    LayerSymbols
        A (d, d), b (d, 1), the heads (V_h, B_h), the keys K_h ("l2") and (W, U, c) ("relu")
        as matrices of real symbols (cached per argument tuple).

    Raises
    ------
    InvalidInputError
        If d, heads or width is not a positive integer, or kernel or ffn is not one of the
        names above.

    See Also
    --------
    matrix_layer_symbols : the dimension-free controls.
    transformer_field : the field written with these controls.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §1 "The model: a Transformer as a flow of measures".

    Examples
    --------
    >>> from riccati_tf.symbolic import layer_symbols
    >>> L = layer_symbols(2, kernel="l2")
    >>> L.A.shape, L.b.shape, len(L.heads), L.keys[0].shape
    ((2, 2), (2, 1), 1, (2, 2))
    """
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
    """Dimension-free control symbols (MatrixSymbols of size DIM, hidden width WIDTH).

    Parameters
    ----------
    heads : int, optional
        The number of attention heads (default 1); with more than one the names are ``V_1``,
        ``B_1``, ...
    kernel : {"dot", "l2"}, optional
        "dot" (default) or Gaussian-kernel attention "l2" (adds K_h).
    ffn : {"affine", "relu"}, optional
        "affine" (default) or "relu" (adds W (DIM × WIDTH), U (WIDTH × DIM), c (WIDTH × 1)).

    Returns
    -------
    LayerSymbols
        The controls as MatrixSymbols (cached per argument tuple).

    Raises
    ------
    InvalidInputError
        If heads is not a positive integer or kernel or ffn is not one of the names above.

    See Also
    --------
    layer_symbols : the element-wise controls.
    matrix_gaussian : the dimension-free Gaussian.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §1 "The model: a Transformer as a flow of measures".

    Examples
    --------
    >>> from riccati_tf.symbolic import matrix_layer_symbols
    >>> L = matrix_layer_symbols(heads=2)
    >>> L.A.shape, [str(V) for V, _ in L.heads]
    ((d, d), ['V_1', 'V_2'])
    """
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

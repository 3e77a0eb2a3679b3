"""Symbolic engine: derive, verify and compile the moment equations (SPEC §2–§5).

Pipeline: a velocity field built from SymPy objects → Gaussian expectations (`expectations`:
Isserlis/Wick, ReLU closed forms, exponential tilting) → moment equations (`derivation`:
ṁ = E[X], Σ̇ = E[(x − m)Xᵀ] + E[X(x − m)ᵀ], exact iff X is affine in x) → numeric right-hand side
(`compile`). `transformer_system` builds the Transformer field of SPEC §1 (dot-product or
Gaussian-kernel attention, any number of heads, optional ReLU feed-forward) and derives its
system in dimension-free matrix form at once and element-wise on demand.

    >>> import numpy as np
    >>> from riccati_tf import Gaussian, Params
    >>> from riccati_tf.symbolic import compile_moment_rhs, transformer_system
    >>> rhs = compile_moment_rhs(transformer_system(8, heads=2))
    >>> rng = np.random.default_rng(0)
    >>> heads = [(0.1 * rng.standard_normal((8, 8)), np.eye(8)) for _ in range(2)]
    >>> params = Params(-np.eye(8), heads=heads)
    >>> dmean, dcov = rhs(params, Gaussian(np.zeros(8), np.eye(8)))
    >>> rhs.mode, dmean.shape, dcov.shape, np.allclose(dcov, dcov.T)
    ('matrix', (8,), (8, 8), True)

The public API takes SymPy objects or numbers only; strings are never parsed.
"""

from .compile import ELEMENTWISE_MAX_D, CompiledMomentRHS, clear_compiled, compile_moment_rhs
from .derivation import (
    MAX_ELEMENT_D,
    ElementForm,
    GaussianFeature,
    MatrixForm,
    MomentSystem,
    derive_moment_equations,
)
from .expectations import (
    Relu,
    expectation,
    expectations,
    isserlis,
    log_mgf,
    rectified_gaussian,
    relu,
    tilt,
    tilted_mean,
)
from .latex import to_latex
from .reference import spec_matrix_equations, spec_moment_equations
from .symbols import (
    DIM,
    WIDTH,
    GaussianSymbols,
    LayerSymbols,
    gaussian_symbols,
    layer_symbols,
    matrix_gaussian,
    matrix_layer_symbols,
)
from .transformer import (
    _matrix_system,
    _transformer_system,
    attention_term,
    explicit_matrix_form,
    transformer_field,
    transformer_system,
)


def clear_caches() -> None:
    """Forget derived systems and compiled code (the next call derives and compiles again).

    `transformer_system` caches its derivations (the dimension-free one is shared by every d)
    and `compile_moment_rhs` its generated code; this empties both caches, e.g. to measure the
    cost of a derivation or to release memory.

    Raises
    ------
    None
        Nothing to check.

    See Also
    --------
    transformer_system : derives (and caches) the moment system.
    compile_moment_rhs : compiles (and caches) its right-hand side.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".

    Examples
    --------
    >>> from riccati_tf.symbolic import clear_caches, transformer_system
    >>> first = transformer_system(1)
    >>> transformer_system(1) is first
    True
    >>> clear_caches()
    >>> transformer_system(1) is first
    False
    """
    _transformer_system.cache_clear()
    _matrix_system.cache_clear()
    clear_compiled()


__all__ = [
    "DIM",
    "ELEMENTWISE_MAX_D",
    "MAX_ELEMENT_D",
    "WIDTH",
    "CompiledMomentRHS",
    "ElementForm",
    "GaussianFeature",
    "GaussianSymbols",
    "LayerSymbols",
    "MatrixForm",
    "MomentSystem",
    "Relu",
    "attention_term",
    "clear_caches",
    "compile_moment_rhs",
    "derive_moment_equations",
    "expectation",
    "expectations",
    "explicit_matrix_form",
    "gaussian_symbols",
    "isserlis",
    "layer_symbols",
    "log_mgf",
    "matrix_gaussian",
    "matrix_layer_symbols",
    "rectified_gaussian",
    "relu",
    "spec_matrix_equations",
    "spec_moment_equations",
    "tilt",
    "tilted_mean",
    "to_latex",
    "transformer_field",
    "transformer_system",
]

"""Accessibility of the Gaussian moment system by Lie brackets (SPEC §3–§4).

    ż = f0(z) + Σ_i u_i g_i(z),   z = (m, vech Σ),   [f, g](z) = Dg(z) f(z) − Df(z) g(z)

The moment equations ṁ = (A + V)m + VΣBm + b, Σ̇ = AΣ + ΣAᵀ + VΣBΣ + ΣBᵀΣVᵀ are polynomial in
the layer parameters. A *configuration* says which parameters are controls (free at every depth)
and which are held at given values; every monomial in the controls contributes one vector field
g_i (for "full" the products V_kl B_ij are monomials of their own, so the family
{F(·, u) : u} and {f0, g_i} generate the same Lie algebra), and the rest is the drift f0.

The fields are polynomials with rational coefficients in SymPy's sparse ring over QQ, so brackets
are exact and the rank of their span at a rational point is exact (elimination over QQ). For a
rank-r covariance the fields are tangent to the stratum {rank Σ = r}, so the rank of the span is
at most the state dimension d + r d − r(r−1)/2 (SPEC §3), with equality when the Lie-algebra rank
condition holds. Brackets are generated right-normed ([X_1, [X_2, [..., X_k]]] with X_i
generators span the Lie algebra), level by level up to `depth`; a bracket identically (as a
polynomial field) dependent on those already kept is dropped with all its extensions, which is
exact. The rank found is a lower bound of the Lie-algebra rank that is exact once it reaches the
stratum dimension.

By Nagano's theorem (analytic fields) the Lie-algebra rank is constant along an orbit, which
contains every reachable set: two points of different rank cannot be connected by any control.

Run `python -m riccati_tf.reachability.lie --table --out docs/accessibility.md` to regenerate
the table of ranks against stratum dimensions.

The modules follow the method: `configurations` (which parameters are controls), `exact`
(rationals from floats, rank over QQ, the work budget), `system` (the fields f0, g_i of a
configuration, and of a layer's heads), `brackets` (Lie brackets and jets at a point), `points`
(rational points of the strata and their dimension), `rank` (`accessibility_rank`) and `table`
(`accessibility_table` and docs/accessibility.md).
"""

from .brackets import lie_bracket as lie_bracket
from .configurations import CONFIGURATIONS, Configuration
from .configurations import PARAMETERS as PARAMETERS
from .configurations import configuration as configuration
from .exact import RATIONAL_DENOMINATOR as RATIONAL_DENOMINATOR
from .exact import exact_rank as exact_rank
from .exact import generic_matrix as generic_matrix
from .exact import rational as rational
from .exact import rational_array as rational_array
from .points import rational_point as rational_point
from .points import stratum_dimension
from .points import stratum_point as stratum_point
from .rank import DEFAULT_DEPTH, MAX_DEPTH, MAX_WORK, Accessibility, accessibility_rank
from .system import MAX_DIMENSION
from .system import ControlSystem as ControlSystem
from .system import Field as Field
from .system import control_system as control_system
from .system import layer_system as layer_system
from .system import state_names as state_names
from .table import MAX_TABLE_ROWS, MAX_TABLE_WORK, accessibility_table
from .table import accessibility_document as accessibility_document
from .table import main as main
from .table import table_markdown as table_markdown

__all__ = [
    "CONFIGURATIONS",
    "DEFAULT_DEPTH",
    "MAX_DEPTH",
    "MAX_DIMENSION",
    "MAX_TABLE_ROWS",
    "MAX_TABLE_WORK",
    "MAX_WORK",
    "Accessibility",
    "Configuration",
    "accessibility_rank",
    "accessibility_table",
    "stratum_dimension",
]

"""Stability (SPEC §5–§6): equilibria of the covariance flow, their linearisation, and
certificates of convergence, collapse or blow-up that can be re-checked.

`riccati` solves the algebraic equations behind them (the Bernoulli/Riccati equation
AΣ + ΣAᵀ − ΣGΣ = 0 through a Schur split, and the Lyapunov equations of the certificates);
`equilibria` finds the equilibria Σ* and decides their stability; `certificates` decides the
regime of given layer parameters from its theorem's premises, with every tolerance recorded.
"""

from .certificates import Certificate, certify
from .equilibria import (
    EquilibriaUndetermined,
    Equilibrium,
    EquilibriumSearch,
    SearchBudget,
    SearchWork,
    Stability,
    equilibria,
    equilibrium_search,
    linearization_stability,
)
from .riccati import LyapunovSolution, RiccatiSolution, bernoulli, care_g, lyapunov_function

__all__ = ["Certificate", "EquilibriaUndetermined", "Equilibrium", "EquilibriumSearch",
           "LyapunovSolution", "RiccatiSolution", "SearchBudget", "SearchWork", "Stability",
           "bernoulli", "care_g", "certify", "equilibria", "equilibrium_search",
           "linearization_stability", "lyapunov_function"]

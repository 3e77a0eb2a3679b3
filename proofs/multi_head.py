"""Multi-head attention: the heads' contributions add (SPEC §1–§2).

    ṁ = (A + Σ_h V_h) m + Σ_h V_h Σ B_h m + b,   Σ̇ = AΣ + ΣAᵀ + Σ_h (V_h Σ B_h Σ + Σ B_hᵀ Σ V_hᵀ)

Proved: the derivation from the multi-head field minus these equations simplifies to 0 for
(d, heads) = (1, 2), (2, 2), (3, 2), (1, 3), (2, 3); as matrix expressions for 2 and 3 heads
(any d); the element-wise and matrix-form derivations agree (d = 2, 2 heads).
"""

from __future__ import annotations

import sys
from functools import partial

from ._verify import main
from .moment_equations import claim_forms_agree, claim_spec_elements, claim_spec_matrix

CLAIMS = (
    *(partial(claim_spec_elements, d, 2) for d in (1, 2, 3)),
    *(partial(claim_spec_elements, d, 3) for d in (1, 2)),
    partial(claim_spec_matrix, 2),
    partial(claim_spec_matrix, 3),
    partial(claim_forms_agree, 2, 2),
)

if __name__ == "__main__":
    sys.exit(main(CLAIMS, __doc__))

"""The scalar-V classifier of `certify`, on stacks of n layers at once (SPEC §5).

With V_h = v_h I the covariance obeys Σ̇ = AΣ + ΣAᵀ − ΣGΣ, G = −Σ_h v_h(B_h + B_hᵀ), and

    Σ(t) = e^{At}Σ0(I + W(t)Σ0)⁻¹e^{Aᵀt},   W(t) = ∫_0^t e^{Aᵀu} G e^{Au} du.

The batched verdict is certify's verdict, or none (handled False: the case goes to `certify`).
certify decides the premises of its theorems exactly, in rational arithmetic on the floats as
given (d ≤ EXACT_MAX_D, V_h exactly v_h I, Σ0 exactly PSD); the batched path decides them in
floating point only where a margin far larger than every rounding error shows that the exact
decision is the same (documented at each rule):

    Σ0 = 0                                  → collapses ("zero")
    Σ0 exactly symmetric, λ_min(Σ0) > ROUNDING_ULPS d eps ‖Σ0‖₂ (eigvalsh's backward error):
                                              Σ0 ≻ 0, rank d
    G: λ(G) all > m, all < −m, m = δG + ROUNDING_ULPS d eps ‖G‖₂ (δG ≥ ‖G_exact − G‖₂,
       `g_rounding`): G ≻ 0 / G ≺ 0; G = 0 when G and δG are 0
    A: triangular (λ = diagonal), or Bauer–Fike discs about LAPACK's eigenvalues clear of iℝ:
       the half-plane counts (`_half_plane_counts`)
    G ≺ 0, A Hurwitz: sign of λ_max(W∞Σ0) − 1 beyond a residual-based error bound
       (`_threshold_bound`)

From such exact premises (certificates.Premises) the theorem is certify's own `theorem_of`:
G ≻ 0 has no unobservable mode (unseen = False), G = 0 makes every mode unobservable, and with
Σ0 ≻ 0 range Σ0 lies in the stable subspace iff A is Hurwitz. Cases that the margins do not
settle get certify's `premises` case by case when the heads (V, B) are passed (a few ms each, in
place of certify's whole run), and are handed to `certify` otherwise; so are d > EXACT_MAX_D
without the heads, magnitudes outside MAGNITUDE_RANGE, and every case for which certify would
integrate. Beyond EXACT_MAX_D certify's premises are numerical (exact False); `_settle` keeps
only the verdicts whose re-check depends on those premises alone, and the collapses to Σ* = 0
and to the stabilizing solution whose local Lyapunov certificate provably passes its
re-check (`_lyapunov_certified`).

A blow-up time is the first root of λ_min(I + L0ᵀW(t)L0) (monotone in t since G ⪯ 0), searched up
to certify's horizon MAX_NORM_TIME / max(‖A‖₂, c‖Σ0‖₂), c = 2Σ_h‖V_h‖₂‖B_h‖₂, and kept only when
certify's own check (`certificates.blowup_check`, redone on the stack with a margin, per case
when the margin is not met) confirms it; otherwise the case goes to certify.
A "psd_gramian_pd" verdict is kept only when certify's `equilibria` will return the stabilizing
solution (`stabilizing_found`, the same Bernoulli solve case by case).

Batched numerics: stacked eigvals/eigvalsh/eigh, one eigendecomposition A = XΛX⁻¹ per case
(`_eigen_discs`) shared by the half-plane counts, the Lyapunov equations (O(k³) time and O(k²)
memory a case, `lyapunov_stack`) and T*; W(t) from a stacked Padé-13 Van Loan exponential with
the semigroup rule W(t + h) = W(t) + E_tᵀW(h)E_t: a doubling march brackets T*, a dyadic descent
shrinks the bracket to one step ‖A‖₂h ≤ 1, and Newton's method, kept inside the bracket,
finishes it to 4·eps relative — on the eigen form LᵀW(t)L = Yᵀ(H ∘ F(t))Y (Y = X⁻¹L,
H = XᵀGX, F_ij = (e^{(λ_i+λ_j)t} − 1)/(λ_i + λ_j): k×k products instead of 2k×2k exponentials)
where κ₂(X) ≤ ROOT_EIGVEC_COND, with one last Newton step on the Padé form; certify's check at
T*(1 ± BLOWUP_CHECK_RTOL) is redone on the eigen form there too.
"""

from .blowup import blowup_times
from .classify import BatchedCertificates, classify_scalar
from .heads import g_matrix as g_matrix
from .heads import quadratic_constants as quadratic_constants
from .heads import scalar_values as scalar_values
from .stack import lyapunov_stack as lyapunov_stack
from .stack import van_loan_stack

__all__ = ["BatchedCertificates", "blowup_times", "classify_scalar", "van_loan_stack"]

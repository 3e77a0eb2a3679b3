"""Exact covariance flow for scalar value matrices (SPEC §5), in square-root form.

With V_h = v_h I and G = −Σ_h v_h (B_h + B_hᵀ) the covariance obeys Σ̇ = AΣ + ΣAᵀ − ΣGΣ, whose
solution over a step of length s from Σ_k = L Lᵀ (L of size d×r, r = rank Σ_k) is

    Σ(t_k + s) = E_s L S(s)⁻¹ Lᵀ E_sᵀ,   S(s) = I_r + Lᵀ W(s) L,
    E_s = e^{As},   W(s) = ∫_0^s e^{Aᵀu} G e^{Au} du   (Van Loan: expm of [[−Aᵀ, G], [0, A]] s).

This is the closed form Σ(t) = e^{At}Σ0(I + W(t)Σ0)⁻¹e^{Aᵀt} (push-through identity), applied
step by step because the flow is a semigroup and recovering W(s) = e^{Aᵀs}F from the block
exponential amplifies rounding by κ(s) = ‖e^{As}‖₂‖e^{−Aᵀs}‖₂. With the logarithmic norm
μ(A) = λ_max((A + Aᵀ)/2), ‖e^{As}‖₂ ≤ e^{μ(A)s}, so steps with e^{(μ(A) + μ(−A))h} ≤ STEP_KAPPA
keep κ ≤ STEP_KAPPA (SPEC §5's "‖A‖h ≲ 1", made quantitative), and steps with
e^{max(|μ(A)|, |μ(−A)|)h} ≤ STEP_KAPPA keep E_h, E_h⁻¹ and W(h) in range however large A is.
S = CCᵀ (Cholesky) gives the next factor L⁺ = E_s L C⁻ᵀ: the rank is kept exactly and every Σ is
symmetric PSD by construction. The covariance blows up at the first s where S(s) is singular
(det(I + W(t)Σ0) = 0); the time is located by Brent's method on λ_min(S(s)).

The mean obeys the linear equation ṁ = K(t) m + b, K = A + v̄ I + Σ(t) B̄ with v̄ = Σ_h v_h and
B̄ = Σ_h v_h B_h (no closed form is known), integrated with Gauss–Legendre collocation on the
exact covariance at the collocation nodes, in sub-steps with ‖K‖₂ h ≤ MEAN_THETA at both ends
(singular values, or the bound ‖A_v‖₂ + ‖L‖_F²‖B̄‖_F where it already selects the cheapest
pair), refined by halving where K is large (it grows like 1/(T* − t) near a blow-up). Each
sub-step is error-controlled by an embedded pair chosen by ‖K‖₂h (MEAN_PAIRS, from 4 and 6
stages up to 14 and 16): one step of s_lo and one of s_hi stages (orders 2 s_lo < 2 s_hi) over
the same sub-step, their difference the error of the lower-order step and so an upper estimate
of the kept s_hi step's; the sub-step is halved until they agree to MEAN_RTOL relative. One
pair costs s_lo + s_hi covariance evaluations and two stage solves (the second started from the
first's collocation polynomial), where a Richardson test (one step of h against two of h/2)
cost three steps for the same safety. The mean does not stop at every output time: it is
advanced over spans of up to the covariance step length past as many outputs as fit, the
means there from the kept step's collocation polynomial (accurate to stage order s + 1 only:
the larger DENSE_PAIRS on sub-steps with ‖K‖₂h ≤ DENSE_THETA, the pair's two polynomials
compared at those outputs too), wherever that takes fewer collocation nodes than a span per
output interval (`_dense_pays`: on the 101 default output times the mean costs about three end
states, not a hundred). The exponentials at a step's nodes come from one set of Taylor terms
of the Van Loan block, walked node to node by the semigroup F(a + Δ) = F(a)F(Δ) in increments
with ‖M‖Δ ≤ 1 (as accurate as one expm per node, at a fraction of its cost). ‖K‖h alone does
not bound the error, since K(t) has complex singularities (poles of (I + W(t)Σ0)⁻¹) that can
lie near the real axis; the control makes the mean at a time independent of the other output
times (which set the covariance steps and the spans) to MEAN_RTOL, in practice to rounding.

What the flow refuses to guess (each refusal is a SolverError with a sentence):

- Work. Covariance steps and the mean's collocation steps count against `max_steps`
  (DEFAULT_MAX_STEPS); a flow needing more stops there, and before the work when the count is
  known in advance (the mean sub-steps of one step). Brent's method and the certification of a
  step are bounded too.
- Long horizons. Stepping stops early once the state provably stays where it is (`_settled`):
  (a) collapse — A Hurwitz and G ⪰ 0: W(s) = W∞ − E_sᵀW∞E_s with AᵀW∞ + W∞A = −G is the closed
  form at every offset, S(s) ⪰ I, so one exponential reaches any time; with a mean, once
  ‖B̄‖‖L‖²‖X‖ (X = ∫ e^{As}e^{Aᵀs} ds) is below rounding, ṁ = A_v m + b from there on;
  (b) equilibrium — Σ_k is an equilibrium up to rounding (Newton's correction
  A_cΔ + ΔA_cᵀ = −(AΣ_k + Σ_kAᵀ − Σ_kGΣ_k) is no larger than the rounding of that residual or
  the step's own rounding) and it is exponentially stable: A_c = A − Σ_kG Hurwitz (SPEC §5:
  A anti-stable, G ≻ 0 gives A_c = −P*⁻¹AᵀP*), restricted to the range of Σ_k when it is
  singular, where the range (moving by e^{At} alone) must also be invariant and dominant. A
  step must first map every entry to itself, |ΔΣ_ij| ≤ SETTLE_GATE √(Σ_ii Σ_jj), so that tiny
  variances still growing or decaying are followed to the end. The mean then solves
  ṁ = K m + b with the constant K exactly (expm of [[K, b], [0, 0]] τ), unless rounding in K
  (cancellation in A + v̄I + Σ*B̄) would be amplified beyond MEAN_JUMP_RTOL over the horizon.
- Tiny variances. Σ0 is factored keeping every positive direction the data determine: Cholesky
  when each pivot stands above its own cancellation error, else pivoted Cholesky stopping only
  at pivots at the level of rounding relative to their own diagonal entry (`_factor`).
- Rounding-level G. Where G (on the coordinates coupled through A or G) has an eigenvalue
  within δ = G_ROUNDING·d·eps·‖G‖ of zero, or a negative one small enough for δ to move T*
  by BLOWUP_RTOL, the covariance is also run with G ∓ δI on those coordinates: by Loewner
  monotonicity of W in G those bracket every G' the rounding cannot tell from G. The answer is
  returned only when the brackets agree (no blow-up by t_final, or T* to BLOWUP_RTOL).
- Overflow. A state that leaves the floating-point range is not a blow-up (S(s) stayed
  non-singular): it is reported as a SolverError naming exponential growth.
- Ill-conditioned states. A step rounds W(h) by about ω = G_ROUNDING·eps·‖W(h)‖_F, which
  moves Σ_{k+1} = E L S⁻¹ LᵀEᵀ by −E Y δW Y Eᵀ, between ∓ω‖Y‖₂ Σ_{k+1} (Y = L S⁻¹ Lᵀ,
  ‖Y‖₂ ≤ tr Y = ‖C⁻¹Lᵀ‖_F² for S = CCᵀ, and tr Y ≤ tr Σ_k when G ⪰ 0 since then S ⪰ I): a
  relative error of at most ω tr Y, large where Σ is large along directions in which G nearly
  vanishes (there S ≈ I while ‖Σ‖‖G‖ ≫ ‖A‖). The sum of these along the steps, plus the
  sensitivity ‖D‖/‖Σ*‖ of a settled equilibrium (A_c D + D A_cᵀ = Σ* δG Σ*), each amplified by
  (T* − t_k)/(T* − t) ahead of a blow-up at T*, bounds the error to first order (otherwise an
  earlier error is not amplified: with G ⪰ 0 the step's linearisation Φ = E(I + Σ_k W)⁻¹
  gives Φ Σ_k Φᵀ ⪯ Σ_{k+1}). Above CONDITION_CHECK the states are recomputed with G ∓ Δ
  (`_conditioning`: Δ = δ as for the brackets above on the coupled coordinates); their largest
  relative distance from the returned states is the error estimate, and a flow whose estimate
  exceeds ACCURACY_RTOL raises SolverError: no smaller step helps, the data fix Σ(t) no better
  in double precision. States of a blow-up trajectory whose estimate exceeds ACCURACY_RTOL lie
  within rounding reach of T* and are not returned.

The modules follow the method: `gauss` (the collocation method's nodes, weights and matrix),
`covariance` (the Van Loan exponentials, the step rule, the factor of Σ0, the square-root step
and the certified root of det S), `mean` (the error-controlled collocation of the mean),
`settling` (when stepping may stop), `rounding` (what rounding leaves undetermined), `budget`
(the work budget) and `flow` (`exact_flow` and `exact_from`: the steps between the output
times, and every refusal).
"""

from .budget import DEFAULT_MAX_STEPS
from .covariance import van_loan
from .flow import ExactResult, exact_flow, exact_from
from .rounding import NEAR_BLOWUP_RTOL

__all__ = ["DEFAULT_MAX_STEPS", "NEAR_BLOWUP_RTOL", "ExactResult", "exact_flow", "exact_from",
           "van_loan"]

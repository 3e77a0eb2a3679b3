"""The differentiable stability margin (riccati_tf.design.margin) against independent numpy
computations: the operator from Kronecker products, λ_min(G) in the scalar case, autograd against
central differences, the no-blow-up theorem against `certify` and `flow`, the blow-up start of
the scalar case, and the encoder reader against the model's state_dict."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from riccati_tf.design.margin import (  # noqa: E402
    MAX_MARGIN_D,
    encoder_horizon_margins,
    encoder_margins,
    horizon_margin,
    stability_margin,
    trace_growth_rate,
)
from riccati_tf.empirical.encoders.extraction import extract  # noqa: E402
from riccati_tf.errors import InvalidInputError  # noqa: E402
from riccati_tf.flows.integrate import flow  # noqa: E402
from riccati_tf.stability.certificates.entry import certify  # noqa: E402
from riccati_tf.state.moments import moment_rhs  # noqa: E402
from riccati_tf.state.params import Gaussian, Params  # noqa: E402


def numpy_margin(pairs):
    """−2 λ_max of q(X) = Σ_h tr(V_h X B_h X) on Sym(d), by Kronecker products: q(X) =
    vec(X)ᵀ(Σ_h B_hᵀ ⊗ V_h)vec(X) (column-major vec), restricted to the symmetric subspace
    (the eigenvectors of eigenvalue 1 of the projector (I + swap)/2)."""
    d = pairs[0][0].shape[0]
    K = sum(np.kron(B.T, V) for V, B in pairs)
    swap = np.zeros((d * d, d * d))
    for i in range(d):
        for j in range(d):
            swap[i + d * j, j + d * i] = 1.0
    w, U = np.linalg.eigh((np.eye(d * d) + swap) / 2)
    U = U[:, w > 0.5]
    assert U.shape[1] == d * (d + 1) // 2
    return -2 * np.linalg.eigvalsh(U.T @ ((K + K.T) / 2) @ U)[-1]


def random_layer(rng, d, n_heads, *, scalar, r=2, s=None):
    """Factors (W_Q, W_K, W_V, W_O) as float64 tensors; scalar: W_V = v I, W_O = I."""
    heads = []
    for _ in range(n_heads):
        Q, K = rng.standard_normal((r, d)), rng.standard_normal((r, d))
        if scalar:
            Wv, Wo = rng.standard_normal() * np.eye(d), np.eye(d)
        else:
            k = s or d
            Wv, Wo = rng.standard_normal((k, d)), rng.standard_normal((d, k))
        heads.append(tuple(torch.tensor(x) for x in (Q, K, Wv, Wo)))
    return heads


def pairs_of(heads):
    return [((Wo @ Wv).detach().numpy(), (Wk.T @ Wq).detach().numpy())
            for Wq, Wk, Wv, Wo in heads]


def stable_general_layer(rng, d, n_heads, eps):
    """Heads with V_h = v_h I + eps N_h and v_h(B_h + B_hᵀ) ≺ 0: G ≻ 0 perturbed."""
    heads = []
    for _ in range(n_heads):
        v = -1.0 if rng.random() < 0.5 else 1.0
        L = rng.standard_normal((d, d)) / np.sqrt(d)
        S = rng.standard_normal((d, d))
        B = -v * (L @ L.T + np.eye(d)) + (S - S.T)  # a skew part: B not symmetric
        V = v * np.eye(d) + eps * rng.standard_normal((d, d))
        heads.append(tuple(torch.tensor(x) for x in (B, np.eye(d), V, np.eye(d))))
    return heads


# --- the value ------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(4))
def test_scalar_values_give_lambda_min_of_G(seed):
    rng = np.random.default_rng(seed)
    d = 2 + seed
    heads = random_layer(rng, d, 3, scalar=True)
    G = Params(np.zeros((d, d)), heads=pairs_of(heads)).G
    assert float(stability_margin(heads)) == pytest.approx(np.linalg.eigvalsh(G)[0],
                                                           rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_general_values_match_the_kronecker_form_and_bound_q(seed):
    rng = np.random.default_rng(10 + seed)
    d = 3 + seed % 2
    heads = random_layer(rng, d, 2, scalar=False, r=2, s=2)
    pairs = pairs_of(heads)
    mu = float(stability_margin(heads))
    assert mu == pytest.approx(numpy_margin(pairs), rel=1e-12, abs=1e-12)
    # q(X) ≤ −μ/2 ‖X‖² on Sym(d) (random symmetric X, no eigen-solver)
    X = rng.standard_normal((4000, d, d))
    X = X + X.transpose(0, 2, 1)
    q = sum(np.einsum("ik,nkl,lj,nji->n", V, X, B, X) for V, B in pairs)
    ratio = q / np.einsum("nij,nij->n", X, X)
    assert np.all(ratio <= -mu / 2 + 1e-12)


def test_temperature_gives_a_conservative_smooth_margin():
    rng = np.random.default_rng(3)
    heads = random_layer(rng, 4, 2, scalar=False)
    mu = float(stability_margin(heads))
    n = 4 * 5 // 2
    for tau in (1e-3, 0.1, 1.0):
        soft = float(stability_margin(heads, temperature=tau))
        assert mu - 2 * tau * np.log(n) - 1e-12 <= soft <= mu + 1e-12
    assert float(stability_margin(heads, temperature=1e-4)) == pytest.approx(mu, abs=1e-3)


def test_margin_is_scale_covariant_and_ignores_head_order():
    rng = np.random.default_rng(5)
    heads = random_layer(rng, 3, 3, scalar=False)
    mu = float(stability_margin(heads))
    scaled = [(2 * Wq, Wk, 3 * Wv, Wo) for Wq, Wk, Wv, Wo in heads]
    assert float(stability_margin(scaled)) == pytest.approx(6 * mu, rel=1e-12)
    assert float(stability_margin(heads[::-1])) == pytest.approx(mu, rel=1e-12)


# --- gradients against central differences ---------------------------------------------------

def _directional_check(fn, heads, rng, h=1e-5):
    """|autograd · direction − central difference| / |central difference| for a random
    direction in all factors."""
    leaves = [w.clone().requires_grad_(True) for head in heads for w in head]
    grouped = [tuple(leaves[4 * i:4 * i + 4]) for i in range(len(heads))]
    value = fn(grouped)
    grads = torch.autograd.grad(value, leaves)
    dirs = [torch.tensor(rng.standard_normal(w.shape)) for w in leaves]
    auto = sum(float((g * e).sum()) for g, e in zip(grads, dirs, strict=True))

    def at(t):
        moved = [(w + t * e).detach() for w, e in zip(leaves, dirs, strict=True)]
        return float(fn([tuple(moved[4 * i:4 * i + 4]) for i in range(len(heads))]))

    fd = (at(h) - at(-h)) / (2 * h)
    return abs(auto - fd) / abs(fd)


@pytest.mark.parametrize("scalar", [True, False])
@pytest.mark.parametrize("seed", range(3))
def test_gradient_matches_central_differences(scalar, seed):
    rng = np.random.default_rng(100 + seed)
    heads = random_layer(rng, 3 + seed, 2, scalar=scalar)
    err = _directional_check(stability_margin, heads, rng)
    assert err < 1e-6
    err_soft = _directional_check(lambda hs: stability_margin(hs, temperature=0.3), heads, rng)
    assert err_soft < 1e-6


def test_gradient_entries_match_central_differences():
    rng = np.random.default_rng(7)
    heads = random_layer(rng, 3, 2, scalar=False)
    Wq = heads[0][0].clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(stability_margin([(Wq, *heads[0][1:]), heads[1]]), Wq)
    h = 1e-5
    for i, j in [(0, 0), (1, 2), (0, 1)]:
        E = torch.zeros_like(Wq)
        E[i, j] = h
        fd = (float(stability_margin([(Wq.detach() + E, *heads[0][1:]), heads[1]]))
              - float(stability_margin([(Wq.detach() - E, *heads[0][1:]), heads[1]]))) / (2 * h)
        assert abs(float(grad[i, j]) - fd) <= 1e-6 * abs(fd)


def test_trace_rate_gradient_and_value():
    rng = np.random.default_rng(8)
    d = 4
    heads = random_layer(rng, d, 2, scalar=False)
    L = rng.standard_normal((d, d))
    S0, A = L @ L.T, rng.standard_normal((d, d))
    params = Params(A, heads=pairs_of(heads))
    _, dS = moment_rhs(params, Gaussian(np.zeros(d), S0))
    rho = trace_growth_rate(heads, torch.tensor(S0), torch.tensor(A))
    assert float(rho) == pytest.approx(np.trace(dS) / np.trace(S0), rel=1e-12)
    err = _directional_check(lambda hs: trace_growth_rate(hs, torch.tensor(S0), torch.tensor(A)),
                             heads, rng)
    assert err < 1e-6


# --- the theorem ---------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(3))
def test_positive_margin_never_blows_up(seed):
    rng = np.random.default_rng(200 + seed)
    d = 3
    heads = stable_general_layer(rng, d, 2, eps=0.1)
    mu = float(stability_margin(heads))
    assert mu > 0
    A = rng.standard_normal((d, d))
    alpha = np.linalg.eigvalsh((A + A.T) / 2)[-1]
    params = Params(A, heads=pairs_of(heads))
    assert params.value_scalars is None  # the general-V case
    for k in range(3):
        L = rng.standard_normal((d, d)) * 10.0 ** (k - 1)
        S0 = L @ L.T
        assert certify(params, S0).regime != "blows_up"
        T = 2.0
        traj = flow(params, Gaussian(np.zeros(d), S0), T, method="rk")
        assert traj.status == "completed"
        tr = np.trace(traj.cov, axis1=1, axis2=2)
        assert np.all(tr <= np.trace(S0) * np.exp(2 * alpha * traj.t) * (1 + 1e-6))
        if alpha > 0:  # the logistic bound of the Notes
            assert np.all(tr <= max(np.trace(S0), 2 * alpha * d / mu) * (1 + 1e-6))


@pytest.mark.parametrize("seed", range(3))
def test_negative_scalar_margin_has_a_blowup_start(seed):
    rng = np.random.default_rng(300 + seed)
    d = 3
    heads = random_layer(rng, d, 2, scalar=True)
    params = Params(rng.standard_normal((d, d)), heads=pairs_of(heads))
    mu = float(stability_margin(heads))
    if mu > -0.1:  # make it clearly negative: flip the sign of every value
        heads = [(Wq, Wk, -Wv, Wo) for Wq, Wk, Wv, Wo in heads]
        params = Params(params.A, heads=pairs_of(heads))
        mu = float(stability_margin(heads))
    assert mu < -0.1
    g, U = np.linalg.eigh(params.G)
    u = U[:, 0]
    c = 10 * max(1.0, np.linalg.norm(params.A, 2)) / abs(g[0])
    S0 = c * np.outer(u, u)
    cert = certify(params, S0)
    assert cert.regime == "blows_up"
    traj = flow(params, Gaussian(np.zeros(d), S0), 1.0)
    assert traj.status == "blowup"
    assert traj.blowup_time == pytest.approx(1 / (c * abs(g[0])), rel=0.5)


# --- the finite-depth margin ------------------------------------------------------------------

def _m(alpha, kappa, z0, t):
    """m(t) = e^{−2αt} − κ z0 (1 − e^{−2αt})/α in numpy (α ≠ 0), 1 − 2κz0t (α = 0)."""
    if alpha == 0:
        return 1 - 2 * kappa * z0 * t
    return np.exp(-2 * alpha * t) - kappa * z0 * (1 - np.exp(-2 * alpha * t)) / alpha


def _kappa(pairs):
    per_head = sum(np.linalg.norm(V, 2) * np.linalg.norm(B, 2) for V, B in pairs)
    stacked = (np.linalg.norm(np.hstack([V for V, _ in pairs]), 2)
               * np.linalg.norm(np.vstack([B for _, B in pairs]), 2))
    return min(per_head, stacked)


@pytest.mark.parametrize("a", [-0.7, 0.0, 0.4])
def test_horizon_margin_is_attained_by_the_isotropic_flow(a):
    # V = vI, B = βI, A = aI, Σ0 = z0 I: Σ(t) = z(t) I with ż = 2az + 2vβz², the comparison
    # equation itself; z(t) = z0/m(t) and T* is the root of m
    d, v, beta, z0 = 3, 0.8, 1.5, 0.9
    I = torch.eye(d, dtype=torch.float64)
    heads = [(beta * I, I, v * I, I)]
    params = Params(a * np.eye(d), heads=[(v * np.eye(d), beta * np.eye(d))])
    cert = certify(params, z0 * np.eye(d))
    assert cert.regime == "blows_up"
    T = cert.blowup_time
    m = lambda t: float(horizon_margin(heads, z0 * I, a * I, horizon=t))  # noqa: E731
    assert abs(m(T)) < 1e-8
    assert m(0.5 * T) > 0 > m(1.01 * T)
    t = np.linspace(0.05, 0.9, 5) * T
    traj = flow(params, Gaussian(np.zeros(d), z0 * np.eye(d)), t[-1], t_eval=t, rtol=1e-11)
    z = np.linalg.eigvalsh(traj.cov)[:, -1]
    assert np.allclose(z, [z0 / m(s) for s in t], rtol=1e-8)


def _multihead(rng, d, n_heads, r, scale):
    """Factored heads of rank r with N(0, scale²/d) factors, as tensors, and their pairs."""
    heads = [tuple(torch.tensor(rng.standard_normal(shape) * scale / np.sqrt(d))
                   for shape in ((r, d), (r, d), (r, d), (d, r))) for _ in range(n_heads)]
    return heads, pairs_of(heads)


@pytest.mark.parametrize("seed", range(6))
def test_horizon_margin_bounds_multihead_flows(seed):
    # the bound ‖Σ(t)‖₂ ≤ ‖Σ0‖₂/m(t) on the rk flow of random factored multi-head layers with
    # drifts of either sign, scaled so that the bound gives out near t = 1; where m(τ) > 0 the
    # layer does not blow up before τ (certify's T*, when it finds one, lies beyond)
    rng = np.random.default_rng(400 + seed)
    d, n_heads = 6, 3
    heads, pairs = _multihead(rng, d, n_heads, 2, 3.0)
    A = rng.standard_normal((d, d)) / np.sqrt(d) + (seed - 3) * 0.3 * np.eye(d)
    L = rng.standard_normal((d, d))
    S0 = L @ L.T / d
    alpha = np.linalg.eigvalsh((A + A.T) / 2)[-1]
    kappa, z0 = _kappa(pairs), np.linalg.eigvalsh(S0)[-1]
    S0 *= 1 / (2 * kappa * z0)  # the α = 0 bound reaches 0 at t = 1
    z0 = np.linalg.eigvalsh(S0)[-1]
    At, St = torch.tensor(A), torch.tensor(S0)
    tau = np.linspace(0.1, 2.0, 20)
    m = np.array([float(horizon_margin(heads, St, At, horizon=t)) for t in tau])
    assert np.allclose(m, [_m(alpha, kappa, z0, t) for t in tau], rtol=1e-10, atol=1e-12)
    params = Params(A, heads=pairs)
    good = tau[m > 0]
    assert good.size > 0
    traj = flow(params, Gaussian(np.zeros(d), S0), good[-1], t_eval=good, rtol=1e-10)
    assert traj.status == "completed"
    z = np.linalg.eigvalsh(traj.cov)[:, -1]
    assert np.all(z <= z0 / m[m > 0] * (1 + 1e-8))
    cert = certify(params, S0)
    if cert.regime == "blows_up":
        assert cert.blowup_time > good[-1]


def test_horizon_margin_certifies_collapse_under_a_contracting_drift():
    # α < 0 and κ z0 < −α: m(t) grows without bound, ‖Σ(t)‖₂ → 0; certify agrees (no blow-up)
    rng = np.random.default_rng(5)
    d = 6
    heads, pairs = _multihead(rng, d, 3, 2, 2.0)
    A = -np.eye(d) + 0.2 * rng.standard_normal((d, d)) / np.sqrt(d)
    alpha, kappa = np.linalg.eigvalsh((A + A.T) / 2)[-1], _kappa(pairs)
    assert alpha < 0
    S0 = 0.5 * (-alpha / kappa) * np.eye(d)
    t = np.array([1.0, 4.0, 8.0])  # ‖Σ(8)‖₂ ≈ 1e-7, well above the flow's atol
    m = np.array([float(horizon_margin(heads, torch.tensor(S0), torch.tensor(A), horizon=s))
                  for s in t])
    assert 1 < m[0] < m[1] < m[2]
    params = Params(A, heads=pairs)
    assert certify(params, S0).regime in ("collapses", "converges", "bounded")
    traj = flow(params, Gaussian(np.zeros(d), S0), t[-1], t_eval=t, rtol=1e-10, atol=1e-20)
    assert np.all(np.linalg.eigvalsh(traj.cov)[:, -1] <= S0[0, 0] / m * (1 + 1e-8))


@pytest.mark.parametrize("seed", range(3))
def test_horizon_margin_gradient_matches_central_differences(seed):
    rng = np.random.default_rng(500 + seed)
    d = 5
    heads, _ = _multihead(rng, d, 2 + seed, 2, 1.0)
    L = rng.standard_normal((d, d))
    S0, A = torch.tensor(L @ L.T / d), torch.tensor(rng.standard_normal((d, d)) / 3)
    for drift in (None, A):
        err = _directional_check(lambda hs, A=drift: horizon_margin(hs, S0, A, horizon=0.7),
                                 heads, rng)
        assert err < 1e-6


def test_encoder_horizon_margins_match_the_layers_heads():
    model = _tiny_bert(3)
    S = torch.eye(16, dtype=torch.float64) * 0.5
    m_t = encoder_horizon_margins(model, S, horizon=0.3)
    assert m_t.shape == (2,) and m_t.requires_grad
    m = m_t.detach()
    enc = extract(model)
    for layer in range(2):
        pairs = list(enc.layers[layer].params().heads)
        assert float(m[layer]) == pytest.approx(1 - 2 * _kappa(pairs) * 0.5 * 0.3, rel=1e-10)
    per_layer = encoder_horizon_margins(model, [S, 2 * S], horizon=0.3).detach()
    assert float(per_layer[0]) == pytest.approx(float(m[0]), rel=1e-12)
    assert float(1 - per_layer[1]) == pytest.approx(2 * float(1 - m[1]), rel=1e-10)
    big = pytest.importorskip("transformers").BertModel(  # no MAX_MARGIN_D limit here
        _tiny_bert(4).config.__class__(vocab_size=8, hidden_size=2 * MAX_MARGIN_D,
                                       num_hidden_layers=1, num_attention_heads=8,
                                       intermediate_size=8, max_position_embeddings=8)).double()
    with pytest.raises(InvalidInputError, match="MAX_MARGIN_D"):
        encoder_margins(big)
    S_big = torch.eye(2 * MAX_MARGIN_D, dtype=torch.float64)
    pairs = list(extract(big).layers[0].params().heads)
    assert float(encoder_horizon_margins(big, S_big)[0].detach()) == pytest.approx(
        1 - 2 * _kappa(pairs), rel=1e-10)
    with pytest.raises(InvalidInputError, match="3 covariances for 2 layers"):
        encoder_horizon_margins(model, [S, S, S])
    with pytest.raises(InvalidInputError, match="horizon"):
        encoder_horizon_margins(model, S, horizon=0.0)


# --- the encoder reader --------------------------------------------------------------------

def _tiny_bert(seed=0):
    transformers = pytest.importorskip("transformers")
    config = transformers.BertConfig(vocab_size=32, hidden_size=16, num_hidden_layers=2,
                                     num_attention_heads=2, intermediate_size=32,
                                     max_position_embeddings=16, hidden_dropout_prob=0.0,
                                     attention_probs_dropout_prob=0.0, initializer_range=0.3)
    torch.manual_seed(seed)
    return transformers.BertModel(config).double()


def test_encoder_margins_match_the_state_dict():
    model = _tiny_bert()
    mu_t = encoder_margins(model)
    assert mu_t.shape == (2,) and mu_t.dtype == torch.float64 and mu_t.requires_grad
    mu = mu_t.detach()
    sd = {k: v.numpy() for k, v in model.state_dict().items()}
    d_h = 8
    for layer in range(2):
        p = f"encoder.layer.{layer}.attention."
        Wq, Wk, Wv = (sd[f"{p}self.{n}.weight"] for n in ("query", "key", "value"))
        Wo = sd[f"{p}output.dense.weight"]
        pairs = [(Wo[:, r] @ Wv[r], Wk[r].T @ Wq[r] / np.sqrt(d_h))
                 for r in (slice(0, 8), slice(8, 16))]
        assert float(mu[layer]) == pytest.approx(numpy_margin(pairs), rel=1e-10)
        # the same heads as the package's numpy extraction reads them
        params = extract(model).layers[layer].params()
        assert float(mu[layer]) == pytest.approx(numpy_margin(list(params.heads)), rel=1e-10)


def test_encoder_margin_gradient_matches_central_differences():
    model = _tiny_bert(1)
    W = model.encoder.layer[1].attention.self.value.weight
    rng = np.random.default_rng(0)
    E = torch.tensor(rng.standard_normal(W.shape))
    (grad,) = torch.autograd.grad(encoder_margins(model)[1], W)
    h = 1e-5
    with torch.no_grad():
        W += h * E
        up = float(encoder_margins(model)[1])
        W -= 2 * h * E
        down = float(encoder_margins(model)[1])
        W += h * E
    fd = (up - down) / (2 * h)
    assert abs(float((grad * E).sum()) - fd) <= 1e-6 * abs(fd)


def test_regulariser_raises_the_margin():
    model = _tiny_bert(2)
    before = encoder_margins(model).detach()
    assert float(before.min()) < 0
    ids = torch.tensor([[2, 5, 7, 9, 3]])
    target = torch.zeros(1, 5, 16, dtype=torch.float64)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(3):
        opt.zero_grad()
        task = ((model(input_ids=ids).last_hidden_state - target) ** 2).mean()
        loss = task + 10.0 * torch.relu(-encoder_margins(model)).sum()
        loss.backward()
        opt.step()
    after = encoder_margins(model).detach()
    assert torch.all(after > before + 0.1)


# --- refusals ------------------------------------------------------------------------------

def test_refusals():
    I = torch.eye(3, dtype=torch.float64)
    with pytest.raises(InvalidInputError):
        stability_margin([])
    with pytest.raises(InvalidInputError):
        stability_margin([(I, I, I)])
    with pytest.raises(InvalidInputError):
        stability_margin([(I, I[:2], I, I)])
    with pytest.raises(InvalidInputError):
        stability_margin([(I, I, I, I.float())])
    with pytest.raises(InvalidInputError):
        stability_margin([(I * float("nan"), I, I, I)])
    with pytest.raises(InvalidInputError):
        stability_margin([(I, I, I, I)], temperature=0.0)
    big = torch.eye(MAX_MARGIN_D + 1, dtype=torch.float64)
    with pytest.raises(InvalidInputError):
        stability_margin([(big, big, big, big)])
    with pytest.raises(InvalidInputError):
        trace_growth_rate([(I, I, I, I)], torch.zeros(3, 3, dtype=torch.float64))
    with pytest.raises(InvalidInputError):
        trace_growth_rate([(I, I, I, I)], I, A=torch.eye(2, dtype=torch.float64))
    with pytest.raises(InvalidInputError):
        encoder_margins(torch.nn.Linear(2, 2))


def test_horizon_margin_at_extreme_depths_and_sizes():
    # one head V = ⅒I, B = I from Σ0 = I: κ z0 = 0.1; A = aI. A collapse (a < −0.1) has m → +∞
    # (the largest float: a lower bound), a contraction too weak for the attention
    # (−0.1 < a < 0) m → −∞, never NaN
    I = torch.eye(2, dtype=torch.float64)
    heads = [(I, I, 0.1 * I, I)]
    for tau in (1e3, 1e300):
        assert float(horizon_margin(heads, I, -I, horizon=tau)) == np.finfo(float).max
        assert float(horizon_margin(heads, I, -0.05 * I, horizon=tau)) < -1e40
        assert float(horizon_margin(heads, I, I, horizon=tau)) == pytest.approx(-0.1)
    for a in (-1.0, -0.05, 0.0, 0.3):  # the two forms agree with the numpy closed form
        for tau in (1e-9, 0.5, 3.0):
            got = float(horizon_margin(heads, I, a * I, horizon=tau))
            assert got == pytest.approx(_m(a, 0.1, 1.0, tau), rel=1e-12, abs=1e-15)
    with pytest.raises(InvalidInputError, match="overflow"):
        horizon_margin([(1e200 * I, 1e200 * I, I, I)], I)
    with pytest.raises(InvalidInputError, match="horizon"):
        horizon_margin(heads, I, horizon=float("nan"))
    with pytest.raises(InvalidInputError, match="cov0"):
        horizon_margin(heads, torch.full((2, 2), float("nan"), dtype=torch.float64))

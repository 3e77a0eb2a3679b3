"""The validity map of the N → ∞ attention formula (SPEC §7, last bullet): logit spread and
effective counts against their Gaussian closed forms and a direct softmax, the finite-n bias
against a brute-force simulation, and the flag on either side of the limit."""

import numpy as np
import pytest
from scipy.special import softmax
from scipy.stats import entropy

from riccati_tf.empirical.encoders import (
    Encoder,
    EncoderLayer,
    HeadFactors,
    LayerNormParams,
    MLPParams,
)
from riccati_tf.empirical.encoders.attention import gaussian_attention
from riccati_tf.empirical.encoders.forward import attention_output
from riccati_tf.empirical.encoders.validity import validity_map
from riccati_tf.errors import InvalidInputError

D = 2


def _encoder(c: float, placement: str = "post", value: float = 1.0) -> Encoder:
    """One layer, one head with B = c I and V = value · I (d = 2)."""
    eye, z = np.eye(D), np.zeros(D)
    head = HeadFactors(c * eye, z, eye, z, value * eye, z, eye, 1.0)
    norm = LayerNormParams(np.ones(D), z, 1e-5)
    layer = EncoderLayer((head,), z, None if placement == "post" else norm, norm,
                         MLPParams(eye, z, eye, z, "relu"), placement)
    return Encoder((layer,), "bert", None, False)


def _tokens(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, D))


def test_spread_and_effective_count_are_the_direct_softmax_statistics():
    """Median over queries of std_j s_ij and of exp(H(softmax_j s_ij)), recomputed here with
    scipy's softmax and entropy on each sequence."""
    rng = np.random.default_rng(3)
    W = [rng.standard_normal((3, 4)) for _ in range(3)]
    head = HeadFactors(W[0], rng.standard_normal(3), W[1], rng.standard_normal(3), W[2],
                       np.zeros(3), rng.standard_normal((4, 3)), 0.4)
    z = np.zeros(4)
    norm = LayerNormParams(1 + rng.random(4), rng.standard_normal(4), 1e-5)
    layer = EncoderLayer((head,), z, norm, norm,
                         MLPParams(np.eye(4), z, np.eye(4), z, "relu"), "pre")
    x = rng.standard_normal((300, 4)) * 2 + 1
    lengths = (100, 120, 80)
    vm = validity_map(Encoder((layer,), "bert", None, False), [x], lengths, repeats=1)
    spreads, counts = [], []
    for seq in np.split(norm(x), np.cumsum(lengths)[:-1]):  # pre-norm: attention sees LN(x)
        logits = 0.4 * (seq @ W[0].T + head.b_Q) @ (seq @ W[1].T + head.b_K).T
        spreads.append(logits.std(axis=1))
        counts.append(np.exp(entropy(softmax(logits, axis=1), axis=1)))
    assert vm.logit_spread[0, 0] == pytest.approx(np.median(np.concatenate(spreads)), rel=1e-12)
    assert vm.effective_tokens[0, 0] == pytest.approx(np.median(np.concatenate(counts)),
                                                      rel=1e-12)


@pytest.mark.parametrize("c", [0.2, 0.5, 1.0])
def test_effective_count_follows_the_gaussian_closed_form(c):
    """Query y_i, keys N(0, I): the logits c⟨y_i, y_j⟩ are N(0, σ_i²), σ_i = c|y_i|, and
    exp(H) → n e^{−σ_i²/2} as n → ∞ (the tilted law N(σ_i², σ_i²) has KL σ_i²/2 to the base):
    medians within 3 % at n = 4096."""
    n = 4096
    x = _tokens(n, seed=1)
    vm = validity_map(_encoder(c), [x], (n,), repeats=1)
    sigma = c * np.linalg.norm(x, axis=1)
    assert vm.logit_spread[0, 0] == pytest.approx(np.median(sigma), rel=0.03)
    assert vm.effective_tokens[0, 0] == pytest.approx(np.median(n * np.exp(-sigma ** 2 / 2)),
                                                      rel=0.03)


def test_bias_against_a_brute_force_simulation():
    """The attention output's finite-n covariance error, ‖Ĉ − MΣMᵀ‖_F/‖MΣMᵀ‖_F with M from
    `gaussian_attention` and Ĉ from `forward.attention_output` on 40 independent draws of
    4 sequences of 64 tokens: in the limit's failure regime (c = 3, median exp(H) ≈ 3) the map's
    layer bias is the brute-force one within 10 % and far above its floor."""
    enc = _encoder(3.0)
    lengths = (64,) * 4
    x = _tokens(sum(lengths))
    vm = validity_map(enc, [x], lengths, repeats=40, seed=5)
    layer = enc.layers[0]
    m, S = x.mean(axis=0), np.cov(x, rowvar=False)
    M, _ = gaussian_attention(layer, m, S)
    C = M @ S @ M.T
    rng = np.random.default_rng(11)
    root = np.linalg.cholesky(S)
    errors = []
    for _ in range(40):
        y = m + rng.standard_normal((sum(lengths), D)) @ root.T
        out = np.vstack([attention_output(layer, seq) for seq in np.split(y, 4)])
        errors.append(np.linalg.norm(np.cov(out, rowvar=False) - C) ** 2)
    brute = np.sqrt(np.mean(errors)) / np.linalg.norm(C)
    assert vm.layer_bias[0] == pytest.approx(brute, rel=0.1)
    assert vm.layer_bias[0] > 5 * vm.layer_floor[0]
    assert vm.effective_tokens[0, 0] < 8
    assert vm.flagged[0, 0] and vm.layer_flagged[0]


def test_flag_clears_in_the_limit_and_tracks_the_effective_count():
    """c = 0.05 with n = 1024: the formula holds (no material excess over the floor); c = 3:
    exp(H) of a few tokens flags the head whatever the floor; the logit spread grows with c."""
    lengths = (1024,) * 2
    x = _tokens(sum(lengths))
    weak = validity_map(_encoder(0.05), [x], lengths)
    strong = validity_map(_encoder(3.0), [x], lengths)
    assert not weak.flagged[0, 0] and not weak.layer_flagged[0]
    assert weak.impact[0, 0] < weak.min_impact
    assert strong.flagged[0, 0] and strong.layer_flagged[0]
    assert strong.logit_spread[0, 0] > 10 * weak.logit_spread[0, 0]
    text = strong.summary()
    assert "flagged: heads [1]" in text and "exp(H) < 8" in text
    assert weak.summary().rstrip().endswith("clear")
    stored = weak.to_json()
    assert stored["flagged"] == [[False]] and stored["lengths"] == [1024, 1024]


def test_validity_map_refuses_bad_input():
    enc = _encoder(1.0)
    x = _tokens(64)
    with pytest.raises(InvalidInputError, match="Encoder"):
        validity_map("bert", [x], (64,))
    with pytest.raises(InvalidInputError, match="at least 2 tokens"):
        validity_map(enc, [x], (63, 1))
    with pytest.raises(InvalidInputError, match="shape"):
        validity_map(enc, [x], (32,))
    with pytest.raises(InvalidInputError, match="input arrays"):
        validity_map(enc, [], (64,))
    for bad in [{"repeats": 0}, {"bias_factor": 0.0}, {"min_effective": -1.0}, {"seed": -1},
                {"min_impact": float("nan")}]:
        with pytest.raises(InvalidInputError):
            validity_map(enc, [x], (64,), **bad)


def test_token_map_against_a_direct_computation():
    """The unexplained shares recomputed here from the softmax on each sequence: real output
    Σ_j p_ij y_j against m_s + Σ_s B y_i (the sequence's own ML moments) and against the
    pooled moments; on Gaussian tokens with many effective tokens the formula explains most
    of the real output."""
    c, lengths = 0.3, (256, 256)
    x = _tokens(sum(lengths), seed=4)
    vm = validity_map(_encoder(c), [x], lengths)
    real, own, pooled = [], [], []
    m_all, S_all = x.mean(axis=0), np.cov(x, rowvar=False, bias=True)
    for seq in (x[:256], x[256:]):
        p = softmax(c * seq @ seq.T, axis=1)
        real.append(p @ seq)
        m_s, S_s = seq.mean(axis=0), np.cov(seq, rowvar=False, bias=True)
        own.append(m_s + c * seq @ S_s)
        pooled.append(m_all + c * seq @ S_all)
    real, own, pooled = (np.vstack(a) for a in (real, own, pooled))
    spread2 = np.sum((real - real.mean(axis=0)) ** 2)
    assert vm.token_unexplained[0, 0] == pytest.approx(np.sum((real - own) ** 2) / spread2,
                                                       rel=1e-10)
    assert vm.token_unexplained_pooled[0, 0] == pytest.approx(
        np.sum((real - pooled) ** 2) / spread2, rel=1e-10)
    assert vm.token_unexplained[0, 0] < 0.1 and not vm._token_flags()[0].any()


def test_heavy_tailed_tokens_are_flagged_on_the_tokens_where_gaussian_stand_ins_are_clear():
    """Tokens N(0, 0.49 I) with 2 % of them spiked to ±6 on the first coordinate (a massive
    activation), one head with B = 0.2 I: Gaussian sequences of the same moments leave a bias
    below the material impact and ~500 effective tokens (the stand-in map is clear), but on
    the tokens the spikes take the softmax of every query that points their way and the
    formula leaves over a quarter of the real output unexplained: the token map flags the
    head and says the tokens did it. Gaussian tokens of the same moments pass both."""
    rng = np.random.default_rng(5)
    lengths = (512, 512)
    n = sum(lengths)
    x = 0.7 * rng.standard_normal((n, D))
    spikes = rng.random(n) < 0.02
    x[spikes, 0] = 6.0 * rng.choice([-1.0, 1.0], size=spikes.sum())
    vm = validity_map(_encoder(0.2), [x], lengths)
    gaussian_heads, gaussian_layer = vm._gaussian_flags()
    assert not gaussian_heads.any() and not gaussian_layer.any()
    assert vm.effective_tokens[0, 0] > 400
    assert vm.token_unexplained[0, 0] > vm.max_unexplained
    assert vm.flagged[0, 0] and vm.layer_flagged[0] and vm.flag_source == ["tokens"]
    assert "(on tokens)" in vm.summary()
    g = rng.multivariate_normal(x.mean(axis=0), np.cov(x, rowvar=False), size=n)
    assert validity_map(_encoder(0.2), [g], lengths).flag_source == ["clear"]


def _multi_head_layer(seed: int, heads: int = 3, d: int = 6, d_h: int = 2,
                      twins: bool = False) -> EncoderLayer:
    """A post-norm layer of several low-rank heads with biases (twins: every head the same)."""
    rng = np.random.default_rng(seed)

    def head():
        return HeadFactors(rng.standard_normal((d_h, d)), rng.standard_normal(d_h),
                           rng.standard_normal((d_h, d)), rng.standard_normal(d_h),
                           rng.standard_normal((d_h, d)), rng.standard_normal(d_h),
                           rng.standard_normal((d, d_h)), 0.3)

    made = [head()] * heads if twins else [head() for _ in range(heads)]
    z = np.zeros(d)
    norm = LayerNormParams(np.ones(d), z, 1e-5)
    return EncoderLayer(tuple(made), rng.standard_normal(d), None, norm,
                        MLPParams(np.eye(d), z, np.eye(d), z, "relu"), "post")


def _token_reference(layer, y, lengths):
    """The token statistics written out in R^d per head and for the whole output: real
    output Σ_j p_ij W_O(W_V y_j + b_V), the formula W_O(W_V(m + Σ w_i) + b_V) with the
    sequence's own and the pooled moments (w_i the tilt s W_Kᵀ(W_Q y_i + b_Q))."""
    from scipy.special import softmax

    heads, N, d = layer.heads, y.shape[0], y.shape[1]
    arrays = np.zeros((3, len(heads) + 1, N, d))
    m_all, S_all = y.mean(axis=0), np.cov(y, rowvar=False, bias=True)
    start = 0
    for seq in np.split(y, np.cumsum(lengths)[:-1]):
        stop = start + seq.shape[0]
        m_s, S_s = seq.mean(axis=0), np.cov(seq, rowvar=False, bias=True)
        for k, h in enumerate(heads):
            w = h.scale * (seq @ h.W_Q.T + h.b_Q) @ h.W_K
            p = softmax(w @ seq.T + h.scale * (seq @ h.W_Q.T + h.b_Q) @ h.b_K[:, None], axis=1)
            arrays[0, k, start:stop] = (p @ (seq @ h.W_V.T + h.b_V)) @ h.W_O.T
            for j, (m, S) in ((1, (m_s, S_s)), (2, (m_all, S_all))):
                arrays[j, k, start:stop] = ((m + w @ S) @ h.W_V.T + h.b_V) @ h.W_O.T
        start = stop
    arrays[:, -1] = arrays[:, :-1].sum(axis=1)
    rows = []
    for real, own, pooled in zip(*arrays, strict=True):
        spread2 = np.sum((real - real.mean(axis=0)) ** 2)
        rows.append([np.sum((real - own) ** 2) / spread2,
                     np.sum((real - pooled) ** 2) / spread2,
                     np.sum((own - own.mean(axis=0)) ** 2) / spread2,
                     np.sqrt(np.sum((real - own) ** 2) / N / np.trace(S_all))])
    return np.array(rows)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_token_statistics_in_value_space_equal_those_in_the_output_space(seed):
    """The token map's four numbers per head and for the whole attention output, computed in
    the heads' value coordinates with the metric W_OᵀW_O, equal the same numbers computed on
    the d-dimensional outputs (to 1e-10), on ragged sequences of a three-head layer."""
    from riccati_tf.empirical.encoders.validity import _token_layer

    layer = _multi_head_layer(seed)
    lengths = (40, 7, 25)
    y = np.random.default_rng(seed + 10).standard_normal((sum(lengths), 6)) * 1.5 + 0.3
    got, _ = _token_layer(layer, y, lengths)
    np.testing.assert_allclose(got, _token_reference(layer, y, lengths), rtol=1e-10, atol=0)


def test_whole_output_floor_includes_the_heads_cross_terms():
    """Two identical heads: the whole output is y ↦ 2W_O P y + c, of covariance MΣMᵀ with
    M = Σ_h W_O,h P_h (4 times one head's), not Σ_h (W_O,h P_h)Σ(W_O,h P_h)ᵀ (2 times): the
    formula's own map on 8 192 Gaussian tokens lies within its sampling floor of MΣMᵀ (a few
    per cent), and the layer floor equals the per-head floor."""
    layer = _multi_head_layer(4, heads=2, twins=True)
    enc = Encoder((layer,), "bert", None, False)
    lengths = (1024,) * 8
    x = np.random.default_rng(5).standard_normal((sum(lengths), 6))
    vm = validity_map(enc, [x], lengths, repeats=1, seed=3)
    assert vm.layer_floor[0] < 0.1
    assert vm.layer_floor[0] == pytest.approx(vm.floor[0, 0], rel=1e-8)

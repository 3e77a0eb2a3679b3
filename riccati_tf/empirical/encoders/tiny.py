"""Float64 encoders built offline (no download) for tests, benchmarks and demonstrations: small
randomly initialised ones of every supported family (`tiny_encoder`), and BERT encoders whose
weights have the statistics of trained ones (`trained_like_encoder`), saved with a WordPiece
tokenizer (`save_encoder`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import InvalidInputError
from ...state.validation import as_count, as_seed

__all__ = ["TINY_FAMILIES", "save_encoder", "tiny_encoder", "trained_like_encoder",
           "wordpiece_vocab"]

TINY_FAMILIES = ("bert", "roberta", "vit", "deit", "modernbert")


def tiny_encoder(family: str = "bert", *, hidden_size: int = 32, n_heads: int = 4,
                 n_layers: int = 2, intermediate_size: int | None = None,
                 max_positions: int = 512, activation: str = "gelu",
                 initializer_range: float = 0.02, seed: int = 0) -> Any:
    """A small float64 transformers encoder of the family with random weights (no download).

    Weights N(0, initializer_range²) and biases as transformers initialises them (zero), in
    evaluation mode: the models SPEC §7 asks tests to run on in place of pretrained weights.

    Parameters
    ----------
    family : {"bert", "roberta", "vit", "deit", "modernbert"}, optional
        The model family (TINY_FAMILIES; default "bert").
    hidden_size : int, optional
        The hidden size d, ≥ 1 (default 32; a multiple of n_heads for transformers).
    n_heads : int, optional
        Attention heads, ≥ 1 (default 4).
    n_layers : int, optional
        Encoder layers, ≥ 1 (default 2).
    intermediate_size : int, optional
        Hidden units of the feed-forward block (default 4·hidden_size).
    max_positions : int, optional
        The position limit of the text families (default 512).
    activation : str, optional
        The transformers activation name (default "gelu").
    initializer_range : float, optional
        The standard deviation of the weights (default 0.02).
    seed : int, optional
        The torch seed of the weights (default 0).

    Returns
    -------
    transformers.PreTrainedModel
        The encoder, float64, in evaluation mode.

    Raises
    ------
    InvalidInputError
        For a family outside TINY_FAMILIES or a count that is not a positive integer.
    ImportError
        Without torch and transformers.
    ValueError
        From transformers for a configuration it refuses (e.g. hidden_size not a multiple of
        n_heads).

    See Also
    --------
    riccati_tf.empirical.probe.tiny_model : the models of the probe, with bounds.
    riccati_tf.empirical.encoders.extract : the factored parameters of the model.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".

    Examples
    --------
    >>> from riccati_tf.empirical.encoders.tiny import tiny_encoder
    >>> model = tiny_encoder("roberta", hidden_size=8, n_heads=2, n_layers=1)
    >>> type(model).__name__, str(next(model.parameters()).dtype), model.training
    ('RobertaModel', 'torch.float64', False)
    """
    import torch
    import transformers as tf

    if family not in TINY_FAMILIES:
        raise InvalidInputError(f"family must be one of {TINY_FAMILIES}, got {family!r}")
    hidden_size = as_count("hidden_size", hidden_size)
    common = {"hidden_size": hidden_size,
              "num_hidden_layers": as_count("n_layers", n_layers),
              "num_attention_heads": as_count("n_heads", n_heads),
              "intermediate_size": intermediate_size or 4 * hidden_size,
              "initializer_range": initializer_range}
    torch.manual_seed(as_seed("seed", seed))
    if family in ("bert", "roberta"):
        config_cls, model_cls = ((tf.BertConfig, tf.BertModel) if family == "bert" else
                                 (tf.RobertaConfig, tf.RobertaModel))
        config = config_cls(vocab_size=64, max_position_embeddings=max_positions,
                            hidden_act=activation, hidden_dropout_prob=0.0,
                            attention_probs_dropout_prob=0.0, **common)
    elif family in ("vit", "deit"):
        config_cls, model_cls = ((tf.ViTConfig, tf.ViTModel) if family == "vit" else
                                 (tf.DeiTConfig, tf.DeiTModel))
        config = config_cls(image_size=32, patch_size=16, hidden_act=activation,
                            hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                            **common)
    else:
        config_cls, model_cls = tf.ModernBertConfig, tf.ModernBertModel
        config = config_cls(vocab_size=64, max_position_embeddings=max_positions,
                            global_attn_every_n_layers=1, hidden_activation=activation,
                            pad_token_id=0, bos_token_id=1, eos_token_id=2, cls_token_id=1,
                            sep_token_id=2, **common)
    return model_cls(config).double().eval()


#: a small lower-case WordPiece vocabulary: special tokens, characters, their continuation
#: pieces and a few hundred frequent English words (any lower-case ASCII text tokenizes
#: without [UNK])
_SPECIAL = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
_CHARACTERS = tuple("abcdefghijklmnopqrstuvwxyz0123456789.,;:!?'\"()-")
_WORDS = tuple("""
the of and to in is was for that on as with by he at from his an were are which this be or
has had not but also have one their its it new after who they two her she been other when
there all during into school time may years more most only over city some world would where
later up such used many can state about national out known university united then made first
between than under both three him would while being through against team well part these
high second because game season film war since each until early law series city house life
group year area music before same area war work family century number people no called due
including around what so like local public following government american however back home
within best did four five became several age best water end way any age form great system
power often based general good small long day place line how set play old large them very
name field just both among could should must might next even make told take took make upon
our us we you your my me i do does done say said see seen go went come came get got know
think world still own found give given left right man men woman women child children word
words sentence text model layer head token tokens attention matrix value query key flow depth
mean covariance gaussian random theory measure time point points space order result results
small large deep learning network networks language train trained data set sets test tests
""".split())


def wordpiece_vocab() -> tuple[str, ...]:
    """The tokens of the offline WordPiece vocabulary of `trained_like_encoder` (module order).

    Special tokens ([PAD] = 0, [UNK], [CLS], [SEP], [MASK]), the single characters, their
    continuation pieces "##c" and a few hundred frequent lower-case English words, each once:
    every lower-case ASCII word is split into known pieces, so text never maps to [UNK].

    Returns
    -------
    tuple of str
        The vocabulary, index = token id.

    Raises
    ------
    None
        The vocabulary is built from constants: nothing is raised.

    See Also
    --------
    trained_like_encoder : the model whose embedding table has one row per token.
    save_encoder : saves it as the vocabulary of a BertTokenizerFast.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".

    Examples
    --------
    >>> from riccati_tf.empirical.encoders.tiny import wordpiece_vocab
    >>> vocab = wordpiece_vocab()
    >>> vocab[:4], "##q" in vocab, len(vocab) == len(set(vocab))
    (('[PAD]', '[UNK]', '[CLS]', '[SEP]'), True, True)
    """
    pieces = _SPECIAL + _CHARACTERS + tuple("##" + c for c in _CHARACTERS if c.isalnum())
    return tuple(dict.fromkeys(pieces + _WORDS))


def _logit_spread(x: np.ndarray, Wq: np.ndarray, bq: np.ndarray, Wk: np.ndarray,
                  scale: float) -> float:
    """The mean over queries of the standard deviation over keys of s⟨W_Q x + b_Q, W_K y⟩."""
    logits = scale * (x @ Wq.T + bq) @ (x @ Wk.T).T
    return float(np.mean(np.std(logits, axis=1)))


def _field(Wq: np.ndarray, Wk: np.ndarray, Wv: np.ndarray, Wo: np.ndarray, n_heads: int,
           scale: float) -> Callable[[np.ndarray], np.ndarray]:
    """Σ ↦ Σ_h V_hΣB_hΣ + (…)ᵀ with B_h = s W_K,hᵀW_Q,h, V_h = W_O,hW_V,h, kept factored."""
    d_h = Wq.shape[0] // n_heads
    blocks = [slice(h * d_h, (h + 1) * d_h) for h in range(n_heads)]

    def f(S: np.ndarray) -> np.ndarray:
        QS, VS = Wq @ S, Wv @ S
        VSK = VS @ Wk.T
        inner = np.zeros((Wq.shape[0], Wq.shape[0]))
        for r in blocks:
            inner[r, r] = scale * VSK[r, r]
        P = Wo @ (inner @ QS)
        return P + P.T
    return f


def _blowup_time(field: Callable[[np.ndarray], np.ndarray], cov0: np.ndarray,
                 t_max: float) -> float:
    """T* of Σ̇ = field(Σ) (quadratic, homogeneous) from cov0, integrated in the time
    σ with dt/dσ = tr Σ0/tr Σ until tr Σ grows 10³-fold, then T* − t ≈ tr Σ / (d tr Σ/dt)
    (the 1/(T* − t) growth of a quadratic blow-up; ~1e-5 relative); inf when t passes t_max
    first."""
    from scipy.integrate import solve_ivp

    d = cov0.shape[0]
    tr0 = float(np.trace(cov0))

    def rhs(_s, y):
        S = y[:-1].reshape(d, d)
        rate = tr0 / float(np.trace(S))
        return np.concatenate([(rate * field(S)).ravel(), [rate]])

    def grown(_s, y):
        return float(np.log(np.trace(y[:-1].reshape(d, d)) / tr0)) - np.log(1e3)
    grown.terminal = True  # type: ignore[attr-defined]

    def late(_s, y):
        return y[-1] - t_max
    late.terminal = True  # type: ignore[attr-defined]

    sol = solve_ivp(rhs, (0.0, np.inf), np.concatenate([cov0.ravel(), [0.0]]), "DOP853",
                    rtol=1e-4, atol=1e-8 * tr0, events=(grown, late))
    if sol.status != 1 or sol.t_events[0].size == 0:
        return float("inf")
    y = sol.y_events[0][0]
    S = y[:-1].reshape(d, d)
    return float(y[-1] + np.trace(S) / np.trace(field(S)))


def trained_like_encoder(hidden_size: int = 384, n_heads: int = 12, n_layers: int = 6, *,
                         intermediate_size: int | None = None, max_positions: int = 512,
                         logit_std: tuple[float, float] = (2.0, 12.0),
                         blowup_time: tuple[float, float] = (0.4, 5.0),
                         embedding_trace: float = 100.0, n_sample: int = 1024,
                         seed: int = 0) -> Any:
    """A float64 BERT encoder whose weights have the statistics of trained ones (no download).

    Built layer by layer on the hidden states of random token sequences X (n_sample tokens,
    sequences of ≤ 256 tokens) so that, unlike `tiny_encoder`'s N(0, 0.02²) weights:

    - the embedding output LN(w + p + t) has an anisotropic token covariance of trace
      embedding_trace (a decaying spectrum of the word table, LayerNorm gains γ_i spread
      log-normally) and one heavy-tailed "massive activation" coordinate (about 0.3 % of
      the words and "." put most of their norm on it; its gain is 2.5× the spread of the
      others in the embedding LayerNorm; every later LayerNorm has Σγ² = embedding_trace);
    - head h of each layer has W_K,h = ρ_h W_Q,h + (1 − ρ_h²)^{1/2} N and
      W_O,h = α_h W_V,hᵀ + (1 − α_h²)^{1/2} N with ρ_h spread over ±½ and |α_h| ∈ [0.3, 0.8]
      of the sign of ρ_h in three heads of four (graded signed spectral masses of sym(B_h) and
      sym(V_h), and d tr Σ/dt > 0 at the layer's inputs in most heads); W_Q,h and W_K,h are
      scaled by a common factor so that the logits s⟨W_Q x_i
      + b_Q, W_K x_j⟩ of the layer's inputs have a spread (mean over queries of the standard
      deviation over keys) drawn log-uniformly in `logit_std`;
    - W_O of each layer is scaled so that the multi-head attention flow
      Σ̇ = Σ_h V_hΣB_hΣ + ΣB_hᵀΣV_hᵀ (SPEC §2, A = 0) from the covariance of the layer's inputs
      blows up at T* drawn log-uniformly in `blowup_time` (the flow is homogeneous of degree 2,
      so scaling V by c divides T* by c exactly; T* at c = 1 is integrated).

    Parameters
    ----------
    hidden_size, n_heads, n_layers : int, optional
        d (a multiple of n_heads), heads and layers (default 384, 12, 6: a MiniLM shape).
    intermediate_size : int, optional
        Hidden units of the feed-forward block (default 4·hidden_size).
    max_positions : int, optional
        The position limit (default 512).
    logit_std : (float, float), optional
        The range of the per-head logit spread (default (2, 12)).
    blowup_time : (float, float), optional
        The range of the per-layer blow-up time of the attention flow (default (0.4, 5)).
    embedding_trace : float, optional
        tr Cov of the embedding output (default 100).
    n_sample : int, optional
        Tokens of the calibration sample, ≥ 64 (default 1024).
    seed : int, optional
        The seed of every random draw (default 0).

    Returns
    -------
    transformers.BertModel
        The encoder, float64, in evaluation mode; its vocabulary is `wordpiece_vocab()`.

    Raises
    ------
    InvalidInputError
        For a count that is not a positive integer, a range that is not 0 < low ≤ high, or a
        layer whose attention flow does not blow up (then another seed).
    ImportError
        Without torch and transformers.

    See Also
    --------
    save_encoder : writes the model with a tokenizer to a folder.
    tiny_encoder : small encoders with the default initialisation.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".
    .. [2] M. Sun et al., "Massive activations in large language models", COLM 2024.

    Examples
    --------
    >>> from riccati_tf.empirical.encoders.tiny import trained_like_encoder, wordpiece_vocab
    >>> model = trained_like_encoder(hidden_size=16, n_heads=2, n_layers=1, n_sample=256)
    >>> type(model).__name__, str(next(model.parameters()).dtype), model.config.hidden_size
    ('BertModel', 'torch.float64', 16)
    >>> model.config.vocab_size == len(wordpiece_vocab()), model.config.num_hidden_layers
    (True, 1)
    """
    import torch
    import transformers as tf

    d = as_count("hidden_size", hidden_size)
    n_heads, n_layers = as_count("n_heads", n_heads), as_count("n_layers", n_layers)
    n_sample = as_count("n_sample", n_sample)
    for name, pair in (("logit_std", logit_std), ("blowup_time", blowup_time)):
        if not (len(pair) == 2 and 0 < pair[0] <= pair[1] < np.inf):
            raise InvalidInputError(f"{name} must be a range 0 < low ≤ high, got {pair!r}")
    seed = as_seed("seed", seed)
    if n_sample < 64 or d % n_heads:
        raise InvalidInputError(f"n_sample must be ≥ 64 and hidden_size a multiple of n_heads, "
                                f"got {n_sample} and {d}/{n_heads}")
    vocab = wordpiece_vocab()
    width = intermediate_size or 4 * d
    config = tf.BertConfig(vocab_size=len(vocab), hidden_size=d, num_hidden_layers=n_layers,
                           num_attention_heads=n_heads, intermediate_size=width,
                           max_position_embeddings=max_positions, hidden_dropout_prob=0.0,
                           attention_probs_dropout_prob=0.0, pad_token_id=0)
    torch.manual_seed(seed)
    model = tf.BertModel(config).double().eval()
    rng = np.random.default_rng(seed)
    d_h, scale = d // n_heads, (d // n_heads) ** -0.5
    massive = int(rng.integers(d))

    def loguniform(pair, size=None):
        return np.exp(rng.uniform(np.log(pair[0]), np.log(pair[1]), size))

    def gains(boost, total):
        """LayerNorm gains spread log-normally, the massive coordinate's boosted, Σγ² = total."""
        g = np.exp(0.35 * rng.standard_normal(d))
        g[massive] *= boost
        return g * np.sqrt(total / np.sum(g**2))

    def put(param, value):
        param.copy_(torch.as_tensor(np.asarray(value, dtype=float).reshape(param.shape)))

    # the calibration sample: random ids in sequences of at most 256 tokens
    length = min(256, max_positions)
    n_seq = -(-n_sample // length)
    ids = torch.as_tensor(rng.integers(5, len(vocab), (n_seq, length)))
    ids[:, 0], ids[:, -1] = 2, 3  # [CLS] … [SEP]

    def hidden(k):
        with torch.inference_mode():
            out = model(input_ids=ids, output_hidden_states=True).hidden_states[k]
        return [s.numpy().copy() for s in out]

    emb = model.embeddings
    with torch.no_grad():
        spectrum = (1.0 + np.arange(d)) ** -0.6
        basis = np.linalg.qr(rng.standard_normal((d, d)))[0]
        words = rng.standard_normal((len(vocab), d)) * spectrum @ basis.T
        words += 0.5 * rng.standard_normal(d) * np.sqrt(spectrum.mean())
        # the massive activation: a few words (and ".") put most of their norm on one coordinate
        spikes = np.flatnonzero(rng.random(len(vocab)) < 0.003)
        words[np.append(spikes, vocab.index(".")), massive] = 4.0 * np.sqrt(spectrum.sum())
        positions = 0.3 * np.sqrt(spectrum.mean()) * np.cos(
            np.outer(np.arange(max_positions), rng.uniform(0, 0.2, d)) + rng.uniform(0, 6, d))
        put(emb.word_embeddings.weight, words)
        put(emb.position_embeddings.weight, positions)
        put(emb.token_type_embeddings.weight,
            0.05 * rng.standard_normal((config.type_vocab_size, d)))
        put(emb.LayerNorm.weight, np.ones(d))
        put(emb.LayerNorm.bias, np.zeros(d))
        u = np.concatenate(hidden(0))
        g = gains(2.5, 1.0)
        g *= np.sqrt(embedding_trace / np.sum(g**2 * np.var(u, axis=0)))
        put(emb.LayerNorm.weight, g)
        put(emb.LayerNorm.bias, 0.02 * rng.standard_normal(d))

        for k, layer in enumerate(model.encoder.layer):
            xs = hidden(k)
            x_all = np.concatenate(xs)
            cov0 = np.cov(x_all.T)
            trace = float(np.trace(cov0))
            rho = rng.permutation(np.linspace(-0.5, 0.5, n_heads)) + 0.05 * rng.standard_normal(
                n_heads)
            alpha = rng.uniform(0.3, 0.8, n_heads) * np.sign(rho)
            alpha[rng.permutation(n_heads)[: n_heads // 4]] *= -1.0
            Wq = rng.standard_normal((d, d)) / np.sqrt(trace)
            Wk = np.empty_like(Wq)
            Wv = rng.standard_normal((d, d)) / np.sqrt(trace)
            Wo = np.empty_like(Wq)
            bq = 0.1 * rng.standard_normal(d)
            for h in range(n_heads):
                r = slice(h * d_h, (h + 1) * d_h)
                Wk[r] = rho[h] * Wq[r] + np.sqrt(1 - rho[h]**2) * rng.standard_normal(
                    (d_h, d)) / np.sqrt(trace)
                Wo[:, r] = (alpha[h] * Wv[r].T + np.sqrt(1 - alpha[h]**2)
                            * rng.standard_normal((d, d_h)) / np.sqrt(trace))
                target = loguniform(logit_std)
                spread = np.mean([_logit_spread(x, Wq[r], bq[r], Wk[r], scale) for x in xs])
                c = np.sqrt(target / spread)
                Wq[r] *= c
                Wk[r] *= c
                bq[r] *= c
            t1 = _blowup_time(_field(Wq, Wk, Wv, Wo, n_heads, scale), cov0,
                              1e3 * blowup_time[1])
            if not np.isfinite(t1):
                raise InvalidInputError(f"layer {k + 1}: the attention flow from its input "
                                        f"covariance does not blow up; try another seed")
            Wo *= t1 / loguniform(blowup_time)
            att = layer.attention
            for lin, W, b in ((att.self.query, Wq, bq),
                              (att.self.key, Wk, 0.1 * rng.standard_normal(d)),
                              (att.self.value, Wv, 0.1 * rng.standard_normal(d)),
                              (att.output.dense, Wo, 0.1 * rng.standard_normal(d))):
                put(lin.weight, W)
                put(lin.bias, b)
            put(att.output.LayerNorm.weight, gains(1.0, embedding_trace))
            put(att.output.LayerNorm.bias, 0.02 * rng.standard_normal(d))
            put(layer.intermediate.dense.weight,
                rng.standard_normal((width, d)) / np.sqrt(embedding_trace))
            put(layer.intermediate.dense.bias, -0.5 + 0.2 * rng.standard_normal(width))
            put(layer.output.dense.weight, rng.standard_normal((d, width)) / np.sqrt(width))
            put(layer.output.dense.bias, 0.05 * rng.standard_normal(d))
            put(layer.output.LayerNorm.weight, gains(1.0, embedding_trace))
            put(layer.output.LayerNorm.bias, 0.02 * rng.standard_normal(d))
    return model


def save_encoder(model: Any, folder: str | Path) -> Path:
    """Write a BERT encoder of `wordpiece_vocab()` and its tokenizer to a folder (offline).

    model.save_pretrained(folder) (config.json, weights) and a BertTokenizerFast built from
    the vocabulary (lower-casing, WordPiece), saved beside it: the folder that
    `riccati-tf probe --model DIR --text FILE` reads.

    Parameters
    ----------
    model : transformers.BertModel
        A model whose vocabulary size is len(wordpiece_vocab()) (`trained_like_encoder`).
    folder : str or pathlib.Path
        The folder (created if missing).

    Returns
    -------
    pathlib.Path
        The folder.

    Raises
    ------
    InvalidInputError
        If the model's vocabulary size is not that of `wordpiece_vocab()`.
    ImportError
        Without torch and transformers.

    See Also
    --------
    trained_like_encoder : the model.
    riccati_tf.empirical.encoders.loading.load_model : reads it back.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".

    Examples
    --------
    >>> import tempfile
    >>> from transformers import AutoTokenizer
    >>> from riccati_tf.empirical.encoders.tiny import save_encoder, trained_like_encoder
    >>> model = trained_like_encoder(hidden_size=16, n_heads=2, n_layers=1, n_sample=256)
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     tok = AutoTokenizer.from_pretrained(save_encoder(model, folder),
    ...                                         local_files_only=True)
    >>> tok.convert_ids_to_tokens(tok("Gaussian tokens flow.")["input_ids"])
    ['[CLS]', 'gaussian', 'tokens', 'flow', '.', '[SEP]']
    """
    from transformers import BertTokenizerFast

    vocab = wordpiece_vocab()
    if getattr(model.config, "vocab_size", None) != len(vocab):
        raise InvalidInputError(f"the model's vocabulary has {model.config.vocab_size} tokens, "
                                f"wordpiece_vocab() {len(vocab)}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    BertTokenizerFast(vocab={token: i for i, token in enumerate(vocab)}, do_lower_case=True,
                      model_max_length=model.config.max_position_embeddings
                      ).save_pretrained(folder)
    return folder

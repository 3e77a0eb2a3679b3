"""Gaussian tokens through a real Transformer encoder, layer by layer (SPEC §7).

N tokens x_i ~ N(0, I_d) (d = hidden size) replace the output of the encoder's embedding module
(a forward hook), the encoder runs on that one sequence of N tokens, and forward hooks capture
every layer's hidden states h^ℓ (n, d) and every attention sublayer's input z and output a. For
each layer the distances of `gaussianity` are measured and compared with the Gaussian
prediction: their Monte-Carlo null distribution for exactly Gaussian clouds of the same size (the
median and 95% quantile), and, for the attention sublayer, the theory's statement that attention
acts on a Gaussian cloud N(m, Σ) as the affine map z ↦ V(m + Σ B z) (SPEC §2): the relative
residual of the least-squares affine fit a ≈ [z, 1] Θ,

    ρ = ‖a − [z, 1] Θ̂‖_F / ‖a − ā‖_F,

which the Gaussian theory predicts to vanish as N → ∞ for position-free attention. (Rotary
position embeddings, as in ModernBERT, make attention depend on the token index and ρ need not
vanish.)

Works with `transformers` encoders that have an `embeddings` module and a ModuleList of
`config.num_hidden_layers` layers whose attention child's class name ends in "Attention"
(ModernBertModel, DeiTModel). torch and transformers are imported inside the functions only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import InvalidInputError
from .gaussianity import MAX_NULL, TESTS, check_alpha, normality_test
from .particles import as_limited_count, as_seed
from .validation import as_count, as_time

#: statistics reported per layer (TESTS plus the relative moment errors)
REPORTED = (*TESTS, "third", "fourth")
FAMILIES = ("deit", "modernbert")
#: most Gaussian tokens fed to an encoder (one sequence; ModernBERT's tiny config allows 8192)
MAX_TOKENS = 8192
#: bounds of `tiny_model`: hidden size, encoder layers and attention heads
MAX_HIDDEN = 4096
MAX_MODEL_LAYERS = 64
MAX_MODEL_HEADS = 64


@dataclass(frozen=True, eq=False)
class ProbeResult:
    """Per-layer Gaussianity of hidden states for Gaussian input tokens.

    layers (L+1,): 0 is the Gaussian input at the embedding output, ℓ the output of layer ℓ;
    stats[name], p_values[name] (L+1,) for name in REPORTED (p-values for TESTS only);
    reject (L+1,) bool (normality_test at alpha); null_median[name], null_q95[name] (L+1,):
    the Gaussian prediction (Monte-Carlo null of the same n and rank); rank (L+1,);
    attention_residual (L,) the relative residual ρ of the affine fit of each attention
    sublayer (NaN when a layer has no attention child found).
    """

    model: str
    n_tokens: int
    hidden_size: int
    seed: int
    alpha: float
    layers: np.ndarray
    rank: np.ndarray
    stats: dict[str, np.ndarray]
    p_values: dict[str, np.ndarray]
    reject: np.ndarray
    null_median: dict[str, np.ndarray]
    null_q95: dict[str, np.ndarray]
    attention_residual: np.ndarray

    def as_dict(self) -> dict:
        """JSON-ready numbers (lists of floats)."""
        def listed(d):
            return {k: np.asarray(v).tolist() for k, v in d.items()}

        return {"model": self.model, "n_tokens": self.n_tokens, "hidden_size": self.hidden_size,
                "seed": self.seed, "alpha": self.alpha, "layers": self.layers.tolist(),
                "rank": self.rank.tolist(), "stats": listed(self.stats),
                "p_values": listed(self.p_values), "reject": self.reject.tolist(),
                "null_median": listed(self.null_median), "null_q95": listed(self.null_q95),
                "attention_residual": self.attention_residual.tolist()}


def _require_transformers() -> None:
    """Raise ImportError with the install command when torch or transformers is missing."""
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as exc:
        raise ImportError("the Transformer probe needs torch and transformers: "
                          "pip install 'riccati-tf[models]'") from exc


def load_model(path: str):
    """transformers.AutoModel.from_pretrained(path) from a local directory (no download), in
    evaluation mode. Any failure to load is an InvalidInputError naming the path."""
    from pathlib import Path

    if not isinstance(path, str | Path):
        raise InvalidInputError(f"model path must be a str or a Path, got {type(path).__name__}")
    _require_transformers()
    from transformers import AutoModel

    try:
        ok = (Path(path) / "config.json").is_file()
    except OSError:  # a name too long, ...
        ok = False
    if not ok:
        raise InvalidInputError(f"model path {str(path)!r} is not a directory holding a saved "
                                f"transformers model (config.json and weights)")
    try:
        model = AutoModel.from_pretrained(path, local_files_only=True).eval()
    except Exception as exc:  # a foreign folder: whatever fails is the folder's fault
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InvalidInputError(f"model path {str(path)!r}: transformers could not load it "
                                f"({type(exc).__name__}: {detail})") from None
    hidden = getattr(model.config, "hidden_size", None)
    if not isinstance(hidden, int) or not 1 <= hidden <= MAX_HIDDEN:
        raise InvalidInputError(f"model path {str(path)!r}: hidden_size {hidden!r} is not an "
                                f"integer in [1, {MAX_HIDDEN}] (models.MAX_HIDDEN)")
    return model


def tiny_model(family: str = "deit", *, hidden_size: int = 32, n_layers: int = 2,
               n_heads: int = 2, initializer_range: float = 0.02, seed: int = 0):
    """A randomly initialised encoder of the given family ("deit" or "modernbert") with
    intermediate size 4·hidden_size; initializer_range is the standard deviation of the
    weights (0.02 in the published models). For tests and demonstrations: no download."""
    _require_transformers()
    import torch
    from transformers import DeiTConfig, DeiTModel, ModernBertConfig, ModernBertModel

    if not isinstance(family, str) or family not in FAMILIES:
        raise InvalidInputError(f"family must be one of {FAMILIES}, got {family!r}")
    hidden_size = as_limited_count("hidden_size", hidden_size, maximum=MAX_HIDDEN,
                                   limit="models.MAX_HIDDEN")
    n_layers = as_limited_count("n_layers", n_layers, maximum=MAX_MODEL_LAYERS,
                                limit="models.MAX_MODEL_LAYERS")
    n_heads = as_limited_count("n_heads", n_heads, maximum=MAX_MODEL_HEADS,
                               limit="models.MAX_MODEL_HEADS")
    if hidden_size % n_heads:
        raise InvalidInputError(f"hidden_size = {hidden_size} must be a multiple of n_heads = "
                                f"{n_heads} (each head gets hidden_size / n_heads dimensions)")
    if family == "modernbert" and (hidden_size // n_heads) % 2:
        raise InvalidInputError(f"ModernBERT's rotary embeddings need an even head size; "
                                f"hidden_size / n_heads = {hidden_size // n_heads}")
    initializer_range = as_time("initializer_range", initializer_range)
    seed = as_seed("seed", seed)
    common = {"hidden_size": hidden_size, "num_hidden_layers": n_layers,
              "num_attention_heads": n_heads, "intermediate_size": 4 * hidden_size,
              "initializer_range": initializer_range}
    torch.manual_seed(seed)
    if family == "deit":
        return DeiTModel(DeiTConfig(image_size=32, patch_size=16, **common)).eval()
    config = ModernBertConfig(vocab_size=64, max_position_embeddings=8192,
                              global_attn_every_n_layers=1, pad_token_id=0, bos_token_id=1,
                              eos_token_id=2, cls_token_id=1, sep_token_id=2, **common)
    return ModernBertModel(config).eval()


def _layer_list(model):
    """The ModuleList of config.num_hidden_layers encoder layers."""
    import torch

    n_layers = model.config.num_hidden_layers
    for _, module in model.named_modules():
        if isinstance(module, torch.nn.ModuleList) and len(module) == n_layers:
            return module
    raise InvalidInputError(f"{type(model).__name__} has no list of {n_layers} encoder layers")


def _attention_child(layer):
    for _, child in layer.named_children():
        if type(child).__name__.endswith("Attention"):
            return child
    return None


def _dummy_inputs(model, n_tokens: int) -> dict:
    """Inputs whose embedding output the hook replaces (their values never reach the layers)."""
    import torch

    config = model.config
    dtype = next(model.parameters()).dtype
    if model.main_input_name == "pixel_values":
        size = config.image_size
        return {"pixel_values": torch.zeros(1, config.num_channels, size, size, dtype=dtype)}
    return {"inputs_embeds": torch.zeros(1, n_tokens, config.hidden_size, dtype=dtype)}


def capture(model, tokens: np.ndarray) -> tuple[list[np.ndarray], list, list]:
    """Run the encoder on one sequence `tokens` (n, d) placed at the embedding output.

    Returns (hidden, attn_in, attn_out): hidden[0] = tokens, hidden[ℓ] the output of layer ℓ;
    attn_in[ℓ−1], attn_out[ℓ−1] the input and output of layer ℓ's attention child (None if it
    has none). All as float64 numpy arrays of shape (n, d).
    """
    import torch

    embeddings = getattr(model, "embeddings", None)
    if embeddings is None:
        raise InvalidInputError(f"{type(model).__name__} has no `embeddings` module to feed")
    dtype = next(model.parameters()).dtype
    x = torch.tensor(tokens[None], dtype=dtype)
    layers = _layer_list(model)
    hidden = [None] * len(layers)
    attn_in, attn_out = [None] * len(layers), [None] * len(layers)

    def first(value):
        return value[0] if isinstance(value, tuple | list) else value

    def as_numpy(t):
        return t[0].detach().to(torch.float64).cpu().numpy()

    def keep_layer(i):
        def hook(_module, _args, output):
            hidden[i] = as_numpy(first(output))
        return hook

    def keep_attention(i):
        def hook(_module, args, kwargs, output):
            attn_in[i] = as_numpy(args[0] if args else kwargs["hidden_states"])
            attn_out[i] = as_numpy(first(output))
        return hook

    handles = [embeddings.register_forward_hook(lambda _m, _a, _o: x)]
    for i, layer in enumerate(layers):
        handles.append(layer.register_forward_hook(keep_layer(i)))
        attention = _attention_child(layer)
        if attention is not None:
            handles.append(attention.register_forward_hook(keep_attention(i), with_kwargs=True))
    try:
        with torch.inference_mode():
            model(**_dummy_inputs(model, tokens.shape[0]))
    finally:
        for handle in handles:
            handle.remove()
    return [np.asarray(tokens, dtype=float), *hidden], attn_in, attn_out


def affine_residual(z: np.ndarray, a: np.ndarray) -> float:
    """ρ = ‖a − [z, 1]Θ̂‖_F / ‖a − ā‖_F with Θ̂ the least-squares solution."""
    design = np.hstack([z, np.ones((z.shape[0], 1))])
    theta, *_ = np.linalg.lstsq(design, a, rcond=None)
    return float(np.linalg.norm(a - design @ theta) / np.linalg.norm(a - a.mean(axis=0)))


def check_probe_arguments(*, n_tokens: int, seed: int = 0, n_null: int = 200,
                          alpha: float = 0.05) -> None:
    """The bounds of `probe` that do not depend on the model: 2 ≤ n_tokens ≤ MAX_TOKENS,
    0 ≤ seed ≤ particles.MAX_SEED, 1 ≤ n_null ≤ gaussianity.MAX_NULL, 0 < alpha < 1."""
    as_limited_count("n_tokens", n_tokens, minimum=2, maximum=MAX_TOKENS,
                     limit="models.MAX_TOKENS")
    as_seed("seed", seed)
    as_limited_count("n_null", n_null, maximum=MAX_NULL, limit="gaussianity.MAX_NULL")
    check_alpha(alpha)


def probe(model, *, n_tokens: int, seed: int = 0, n_null: int = 200,
          alpha: float = 0.05) -> ProbeResult:
    """Gaussianity of each layer's hidden states for tokens x_i ~ N(0, I_d) fed at the embedding
    output (module docstring). model: a transformers encoder (e.g. from `load_model`);
    n_tokens > hidden_size + 1; seed fixes the tokens, the sliced-W2 directions and the null;
    n_null: Gaussian samples in the Monte-Carlo null."""
    config = getattr(model, "config", None)
    d = getattr(config, "hidden_size", None)
    if not isinstance(d, int) or not 1 <= d <= MAX_HIDDEN:
        raise InvalidInputError(f"model must be a transformers encoder with an integer "
                                f"config.hidden_size in [1, {MAX_HIDDEN}], got {d!r}")
    check_probe_arguments(n_tokens=n_tokens, seed=seed, n_null=n_null, alpha=alpha)
    n_tokens = as_count("n_tokens", n_tokens, minimum=d + 2)
    tokens = np.random.default_rng(seed).standard_normal((n_tokens, d))
    try:
        hidden, attn_in, attn_out = capture(model, tokens)
    except InvalidInputError:
        raise
    except (RuntimeError, ValueError, TypeError, IndexError, KeyError, AttributeError) as exc:
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InvalidInputError(f"{type(model).__name__} could not run on one sequence of "
                                f"{n_tokens} Gaussian tokens ({type(exc).__name__}: "
                                f"{detail})") from None
    tests = [normality_test(h, alpha=alpha, n_null=n_null, seed=seed) for h in hidden]

    def per_layer(fn):
        return {name: np.array([fn(t, name) for t in tests]) for name in REPORTED}

    residual = np.array([np.nan if z is None else affine_residual(z, a)
                         for z, a in zip(attn_in, attn_out, strict=True)])
    return ProbeResult(
        type(model).__name__, n_tokens, d, seed, alpha, np.arange(len(hidden)),
        np.array([t.stats.rank for t in tests]),
        per_layer(lambda t, name: getattr(t.stats, name)),
        {name: np.array([t.p_values[name] for t in tests]) for name in TESTS},
        np.array([t.reject for t in tests]),
        per_layer(lambda t, name: t.null.quantile(name, 0.5)),
        per_layer(lambda t, name: t.null.quantile(name, 0.95)),
        residual)

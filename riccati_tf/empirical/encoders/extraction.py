"""Read the factored layer parameters (`factors`) out of a loaded transformers encoder.

Supported families (config.model_type): the BERT family ("bert", "roberta", "xlm-roberta";
a sentence-transformers folder holds a BertModel saved with save_pretrained), ViT and DeiT
("vit", "deit") and ModernBERT ("modernbert"). Head h owns rows h·d_h … (h+1)·d_h − 1 of the
query/key/value projections and the same columns of the output projection (transformers'
`view(…, n_heads, d_h)` layout); ModernBERT's fused Wqkv stacks the three projections.

What is refused (InvalidInputError), because Params would not mean what the model computes:
a model without encoder layers; a parameter holding NaN or Inf (named); a LayerNorm with
ε ≤ 0 (it divides by √(var + ε)); a head whose logits can exceed MAX_LOGIT on the tokens its
attention sees (`logit_bound`: far beyond any trained model, and where the Gaussian moments of
the head overflow float64); a causal (decoder) or cross-attention BERT; an activation outside
ACTIVATIONS; and, unless
`position_free=True`, ModernBERT, whose rotary position embeddings rotate queries and keys by
the token index (and whose local layers see only a window of positions): the logit between
tokens i and j is ⟨R_i W_Q x_i, R_j W_K x_j⟩ with rotations R, so no single B_h describes it.
With `position_free=True` the rotations and windows are dropped and the extracted heads are the
position-free part (R = I, global attention); `Encoder.position_free` records it.

torch and transformers are imported by the caller's model only; this module needs neither.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ...errors import InvalidInputError
from .factors import Encoder, EncoderLayer, HeadFactors, LayerNormParams, MLPParams

__all__ = ["ACTIVATION_NAMES", "BERT_FAMILY", "CAUSAL_REFUSAL", "DECODER_FAMILY", "FAMILIES",
           "MAX_LOGIT", "ROTARY_FAMILY",
           "VIT_FAMILY", "attention_layers", "check_model", "extract", "logit_bound",
           "position_limit"]

BERT_FAMILY = ("bert", "roberta", "xlm-roberta")
VIT_FAMILY = ("vit", "deit")
ROTARY_FAMILY = ("modernbert",)
FAMILIES = BERT_FAMILY + VIT_FAMILY + ROTARY_FAMILY
#: decoders (causal attention): their hidden states are measured (`probe`), nothing extracted
DECODER_FAMILY = ("gpt2",)
#: why a decoder has no layer to extract
CAUSAL_REFUSAL = ("{name} is a decoder: its attention is causal (token i attends to tokens "
                  "j ≤ i only), while the mean-field flow, the moment prediction, the atlas "
                  "and the comparison of this package are of unmasked attention (SPEC §1); "
                  "`probe` measures its hidden states")
#: transformers activation names → ACTIVATIONS
ACTIVATION_NAMES = {"relu": "relu", "gelu": "gelu", "gelu_new": "gelu_tanh",
                    "gelu_pytorch_tanh": "gelu_tanh", "gelu_fast": "gelu_tanh"}
#: the largest attention logit bound accepted (`logit_bound`; a trained encoder's is ≲ 1e5)
MAX_LOGIT = 1e15


class _UnboundedLogits(InvalidInputError):
    """A head whose logit bound exceeds MAX_LOGIT."""


def _model_name(model: Any) -> str:
    """The class name and, for a model loaded from a folder, the folder."""
    path = getattr(model, "name_or_path", "") or ""
    return type(model).__name__ + (f" ({path})" if path else "")


def _check_parameters(model: Any, name: str) -> None:
    """Every parameter finite and every LayerNorm's ε > 0, else InvalidInputError naming the
    first offender (its parameter or module name)."""
    import torch

    for pname, param in model.named_parameters():
        t = param.detach()
        bad = ~torch.isfinite(t)
        if bool(bad.any()):
            first = tuple(int(i) for i in torch.nonzero(bad)[0])
            raise InvalidInputError(
                f"model {name}: parameter {pname} holds {int(bad.sum())} NaN or infinite "
                f"entr{'ies' if int(bad.sum()) > 1 else 'y'} of {t.numel()} (first at "
                f"{first}): the layer it belongs to computes no finite output")
    for mname, module in model.named_modules():
        eps = getattr(module, "eps", None)
        if (isinstance(eps, float | int) and hasattr(module, "weight")
                and not (np.isfinite(eps) and eps > 0)):
            raise InvalidInputError(
                f"model {name}: {mname}.eps = {eps:g} (config.layer_norm_eps): a LayerNorm "
                f"divides by √(var + ε), which needs ε > 0")


def _array(t: Any) -> NDArray[np.float64]:
    out = t.detach().cpu().double().numpy().copy()
    if not np.all(np.isfinite(out)):
        raise InvalidInputError(f"a parameter of shape {tuple(out.shape)} holds NaN or infinite "
                                f"entries: the layer it belongs to computes no finite output")
    return out


def _bias(linear: Any, n: int) -> NDArray[np.float64]:
    return np.zeros(n) if linear.bias is None else _array(linear.bias)


def _activation(name: object) -> str:
    if not isinstance(name, str) or name not in ACTIVATION_NAMES:
        raise InvalidInputError(f"activation {name!r} has no Gaussian closure here: supported are "
                                f"{sorted(ACTIVATION_NAMES)}")
    return ACTIVATION_NAMES[name]


def _layer_norm(module: Any, d: int) -> LayerNormParams:
    gamma = np.ones(d) if module.weight is None else _array(module.weight)
    beta = np.zeros(d) if module.bias is None else _array(module.bias)
    return LayerNormParams(gamma, beta, float(module.eps))


def _heads(qkv: Sequence[np.ndarray], Wo: np.ndarray, n_heads: int, scale: float
           ) -> tuple[HeadFactors, ...]:
    """Split stacked projections (n_heads·d_h, d), given with their biases as
    qkv = (W_Q, b_Q, W_K, b_K, W_V, b_V), and the output projection (d, n_heads·d_h)."""
    Wq, bq, Wk, bk, Wv, bv = qkv
    d_h = Wq.shape[0] // n_heads
    rows = [slice(h * d_h, (h + 1) * d_h) for h in range(n_heads)]
    return tuple(HeadFactors(Wq[r], bq[r], Wk[r], bk[r], Wv[r], bv[r], Wo[:, r], scale)
                 for r in rows)


def _linear_heads(query: Any, key: Any, value: Any, output: Any, scale: float, config: Any
                  ) -> tuple[HeadFactors, ...]:
    """The heads of separate query, key and value Linear modules and an output Linear."""
    return _heads([x for lin in (query, key, value)
                   for x in (_array(lin.weight), _bias(lin, lin.out_features))],
                  _array(output.weight), config.num_attention_heads, scale)


def _mlp(fc_in: Any, fc_out: Any, activation: str, gated: bool) -> MLPParams:
    W, b = _array(fc_in.weight), _bias(fc_in, fc_in.out_features)
    W_out, b_out = _array(fc_out.weight), _bias(fc_out, fc_out.out_features)
    if not gated:
        return MLPParams(W, b, W_out, b_out, activation)
    n = W.shape[0] // 2
    return MLPParams(W[:n], b[:n], W_out, b_out, activation, W[n:], b[n:])


#: where a layer's attention sits in transformers 5, per layout: the module whose `scaling` is
#: the logit scale, then the query, key, value and output Linear modules (paths from the layer)
_ATTENTION_PATHS = {
    "bert": ("attention.self", ("attention.self.query", "attention.self.key",
                                "attention.self.value", "attention.output.dense")),
    "vit": ("attention", ("attention.q_proj", "attention.k_proj", "attention.v_proj",
                          "attention.o_proj")),
}


def _submodule(root: Any, path: str) -> Any:
    """root's attribute at the dotted path, or None where a step is missing."""
    for name in path.split("."):
        root = getattr(root, name, None)
    return root


def attention_projections(layer: Any, family: str) -> tuple[Any, Any, Any, Any, float]:
    """The query, key, value and output Linear modules of a BERT-family or ViT-family layer and
    its logit scale (the attention module's `scaling`), else InvalidInputError naming the layer
    class and the paths that are missing."""
    layout = "vit" if family in VIT_FAMILY else "bert" if family in BERT_FAMILY else None
    if layout is None:
        raise InvalidInputError(f"attention projections are read for the families "
                                f"{BERT_FAMILY + VIT_FAMILY}, got {family!r}")
    owner, paths = _ATTENTION_PATHS[layout]
    modules = [_submodule(layer, path) for path in paths]
    missing = [path for path, m in zip(paths, modules, strict=True)
               if getattr(m, "weight", None) is None or getattr(m, "out_features", None) is None]
    raw = getattr(_submodule(layer, owner), "scaling", None)
    scale = float(raw) if isinstance(raw, float | int) and not isinstance(raw, bool) else np.nan
    if not scale > 0:
        missing.append(f"{owner}.scaling > 0")
    if missing:
        raise InvalidInputError(
            f"{type(layer).__name__} ({family!r}) has no {', '.join(missing)}: its attention "
            f"is not laid out as transformers 5 lays out the family's layers")
    q, k, v, o = modules
    return q, k, v, o, scale


def attention_layers(model: Any) -> list[tuple[Any, Any, Any, Any, float]]:
    """Per encoder layer of a BERT-family or ViT/DeiT model, first to last, its query, key,
    value and output Linear modules and logit scale s (`attention_projections`).

    The layers are found where transformers 5 keeps them (`layer_list`: encoder.layer for the
    BERT family, layers for ViT/DeiT); a task model is read through its `base_model`.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        The encoder.

    Returns
    -------
    list of (query, key, value, output, s)
        The modules themselves (their weights keep the autograd graph) and s as a float.

    Raises
    ------
    InvalidInputError
        For a model of another family, without encoder layers, or whose layers lack a
        projection or the logit scale; the message names the model class.

    See Also
    --------
    extract : the numpy factors of the same heads.
    riccati_tf.design.margin.encoder_margins : the differentiable margins of these layers.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".

    Examples
    --------
    >>> from riccati_tf.empirical.encoders.extraction import attention_layers
    >>> from riccati_tf.empirical.encoders.tiny import tiny_encoder
    >>> layers = attention_layers(tiny_encoder("vit", hidden_size=8, n_heads=2, n_layers=3))
    >>> len(layers), tuple(layers[0][0].weight.shape), layers[0][4]
    (3, (8, 8), 0.5)
    """
    base = getattr(model, "base_model", model)
    family = getattr(getattr(base, "config", None), "model_type", None)
    name = _model_name(model)
    if family not in BERT_FAMILY + VIT_FAMILY:
        raise InvalidInputError(f"model {name}: attention projections are read for the "
                                f"families {BERT_FAMILY + VIT_FAMILY}, got model_type {family!r}")
    modules = layer_list(base)
    if not modules:
        raise InvalidInputError(f"model {name} has no encoder layer")
    out = []
    for i, layer in enumerate(modules):
        try:
            out.append(attention_projections(layer, family))
        except InvalidInputError as exc:
            raise InvalidInputError(f"model {name}, layer {i + 1}: {exc}") from None
    return out


def _bert_layer(layer: Any, config: Any) -> EncoderLayer:
    out = layer.attention.output
    heads = _linear_heads(*attention_projections(layer, config.model_type), config)
    mlp = _mlp(layer.intermediate.dense, layer.output.dense, _activation(config.hidden_act), False)
    return EncoderLayer(heads, _bias(out.dense, config.hidden_size),
                        _layer_norm(out.LayerNorm, config.hidden_size),
                        _layer_norm(layer.output.LayerNorm, config.hidden_size), mlp, "post")


def _vit_layer(layer: Any, config: Any) -> EncoderLayer:
    att = layer.attention
    heads = _linear_heads(*attention_projections(layer, config.model_type), config)
    mlp = _mlp(layer.mlp.fc1, layer.mlp.fc2, _activation(config.hidden_act), False)
    return EncoderLayer(heads, _bias(att.o_proj, config.hidden_size),
                        _layer_norm(layer.layernorm_before, config.hidden_size),
                        _layer_norm(layer.layernorm_after, config.hidden_size), mlp, "pre")


def _modernbert_layer(layer: Any, config: Any) -> EncoderLayer:
    import torch

    att, d = layer.attn, config.hidden_size
    W, b = _array(att.Wqkv.weight), _bias(att.Wqkv, 3 * d)
    parts = [(W[k * d:(k + 1) * d], b[k * d:(k + 1) * d]) for k in range(3)]
    heads = _heads([x for pair in parts for x in pair], _array(att.Wo.weight),
                   config.num_attention_heads, float(att.head_dim) ** -0.5)
    norm = None if isinstance(layer.attn_norm, torch.nn.Identity) else _layer_norm(
        layer.attn_norm, d)
    mlp = _mlp(layer.mlp.Wi, layer.mlp.Wo, _activation(config.hidden_activation), True)
    return EncoderLayer(heads, _bias(att.Wo, d), norm, _layer_norm(layer.mlp_norm, d), mlp, "pre")


#: where transformers 5 keeps a model's layers (BERT family: encoder.layer; ViT, DeiT and
#: ModernBERT: layers; GPT-2: h)
LAYER_PATHS = ("encoder.layer", "layers", "encoder.layers", "h")


def layer_container(model: Any) -> Any:
    """The module list holding the encoder layers of a transformers encoder, at the first of
    LAYER_PATHS it has, else InvalidInputError naming the model class."""
    for path in LAYER_PATHS:
        obj = _submodule(model, path)
        if obj is not None:
            return obj
    raise InvalidInputError(f"{type(model).__name__} has no list of encoder layers (none of "
                            f"{', '.join(LAYER_PATHS)})")


def layer_list(model: Any) -> list[Any]:
    """The encoder layers of a transformers encoder (`layer_container`) as a list."""
    return list(layer_container(model))


def position_limit(model: Any) -> int | None:
    """The most tokens one sequence may hold in a transformers encoder.

    Attention acts within one sequence, so each sequence is its own empirical measure μ_s
    (SPEC §7); N tokens are cut into sequences within this limit (`sequence_lengths`).

    Parameters
    ----------
    model : transformers.PreTrainedModel
        The encoder (a task model is read through its `base_model`).

    Returns
    -------
    int or None
        config.max_position_embeddings, less the padding_idx + 1 offset of RoBERTa's position
        ids; None for ViT/DeiT (their layers see no positions once the embedding output is
        replaced) and for a config without the field.

    Raises
    ------
    InvalidInputError
        If the configuration leaves fewer than one position.

    See Also
    --------
    sequence_lengths : cuts N tokens into sequences within the limit.
    extract : records the limit in `Encoder.position_limit`.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".

    Examples
    --------
    >>> from riccati_tf.empirical.encoders import position_limit
    >>> from riccati_tf.empirical.encoders.tiny import tiny_encoder
    >>> position_limit(tiny_encoder("bert", hidden_size=8, n_heads=2, n_layers=1,
    ...                             max_positions=64))
    64
    >>> position_limit(tiny_encoder("roberta", hidden_size=8, n_heads=2, n_layers=1,
    ...                             max_positions=64))  # padding_idx 1: positions start at 2
    62
    >>> position_limit(tiny_encoder("deit", hidden_size=8, n_heads=2, n_layers=1)) is None
    True
    """
    config: Any = getattr(getattr(model, "base_model", model), "config", None)
    limit = getattr(config, "max_position_embeddings", None)
    if getattr(config, "model_type", None) in VIT_FAMILY or not isinstance(limit, int):
        return None
    if config.model_type in ("roberta", "xlm-roberta"):
        limit -= int(config.pad_token_id) + 1
    if limit < 1:
        raise InvalidInputError(f"config.max_position_embeddings leaves {limit} positions")
    return limit


def _norm_radius(norm: LayerNormParams | None) -> float:
    """r with ‖γ ⊙ u + β‖ ≤ r for every LayerNorm output (‖u‖² = d var/(var + ε) ≤ d)."""
    if norm is None:
        return float("nan")
    return float(np.max(np.abs(norm.gamma)) * np.sqrt(norm.gamma.size)
                 + np.linalg.norm(norm.beta))


def logit_bound(encoder: Encoder, input_norm: LayerNormParams | None = None) -> np.ndarray:
    """A bound on every attention logit of every head, over all tokens its attention can see.

    Attention of a layer acts on LayerNorm outputs γ ⊙ u + β with ‖u‖ ≤ √d (the layer's own
    pre-norm, else the previous layer's last norm, else `input_norm`, the embedding output's
    norm), so ‖x‖ ≤ r = ‖γ‖_∞ √d + ‖β‖ and

        |s ⟨W_Q x + b_Q, W_K y + b_K⟩| ≤ s (‖W_Q‖₂ r + ‖b_Q‖)(‖W_K‖₂ r + ‖b_K‖).

    Parameters
    ----------
    encoder : Encoder
        The extracted layers.
    input_norm : LayerNormParams, optional
        The LayerNorm of the embedding output (None: the first layer's bound is NaN unless it
        has its own pre-norm).

    Returns
    -------
    (L, H) ndarray
        The bound per layer and head (NaN where the input is not a known LayerNorm output).

    Raises
    ------
    AttributeError
        If encoder is not an Encoder (its layers are read as given).

    See Also
    --------
    extract : refuses a model whose bound exceeds MAX_LOGIT.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §1 "The model: a Transformer as a flow of measures".

    Examples
    --------
    Unit gains in d = 4 give r = 2; W_Q = W_K = 3·e₁ᵀ with s = 1 gives 3r · 3r = 36:

    >>> import numpy as np
    >>> from riccati_tf.empirical.encoders import (Encoder, EncoderLayer, HeadFactors,
    ...     LayerNormParams, MLPParams)
    >>> from riccati_tf.empirical.encoders.extraction import logit_bound
    >>> z, W = np.zeros(4), 3 * np.eye(1, 4)
    >>> head = HeadFactors(W, np.zeros(1), W, np.zeros(1), W, np.zeros(1), W.T, 1.0)
    >>> norm = LayerNormParams(np.ones(4), z, 1e-5)
    >>> mlp = MLPParams(np.zeros((4, 4)), z, np.eye(4), z, "relu")
    >>> layer = EncoderLayer((head,), z, norm, norm, mlp, "pre")
    >>> logit_bound(Encoder((layer,), "vit", None, False)).tolist()
    [[36.0]]
    """
    rows = []
    previous = input_norm
    for layer in encoder.layers:
        seen = layer.attn_norm if layer.placement == "pre" and layer.attn_norm else previous
        r = _norm_radius(seen)
        rows.append([h.scale * (np.linalg.norm(h.W_Q, 2) * r + np.linalg.norm(h.b_Q))
                     * (np.linalg.norm(h.W_K, 2) * r + np.linalg.norm(h.b_K))
                     for h in layer.heads])
        previous = layer.mlp_norm if layer.placement == "post" else None
    width = max((len(row) for row in rows), default=0)
    return np.array([row + [np.nan] * (width - len(row)) for row in rows], dtype=float)


def _embedding_norm(base: Any) -> LayerNormParams | None:
    """The LayerNorm at the end of the embeddings (BERT: LayerNorm, ModernBERT: norm)."""
    embeddings = getattr(base, "embeddings", None)
    for attr in ("LayerNorm", "norm"):
        module = getattr(embeddings, attr, None)
        if module is not None and hasattr(module, "eps"):
            return _layer_norm(module, base.config.hidden_size)
    return None


def check_model(model: Any) -> None:
    """Refuse a model folder that is wrong, with one line naming the model and the cause.

    A model without encoder layers, a parameter holding NaN or Inf, a LayerNorm with ε ≤ 0,
    and (for a family `extract` supports) a head whose `logit_bound` exceeds MAX_LOGIT: what
    makes every analysis of the model meaningless, checked before any is run.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        The loaded encoder.

    Raises
    ------
    InvalidInputError
        Naming the model (class and folder), the parameter, module, layer or head, and why.

    See Also
    --------
    extract : makes the same checks.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".

    Examples
    --------
    >>> import torch
    >>> from riccati_tf.empirical.encoders.extraction import check_model
    >>> from riccati_tf.errors import InvalidInputError
    >>> from riccati_tf.empirical.encoders.tiny import tiny_encoder
    >>> model = tiny_encoder("bert", hidden_size=8, n_heads=2, n_layers=1)
    >>> check_model(model)
    >>> with torch.no_grad():
    ...     model.encoder.layer[0].output.LayerNorm.weight[3] = float("nan")
    >>> try:
    ...     check_model(model)
    ... except InvalidInputError as exc:
    ...     print(str(exc).split(" holds")[0])
    model BertModel: parameter encoder.layer.0.output.LayerNorm.weight
    """
    base = getattr(model, "base_model", model)
    name = _model_name(model)
    try:
        modules = layer_list(base)
    except InvalidInputError:
        raise InvalidInputError(f"model {name} has no list of encoder layers") from None
    if not modules:
        raise InvalidInputError(f"model {name} has no encoder layer (config.num_hidden_layers = "
                                f"{getattr(base.config, 'num_hidden_layers', None)})")
    _check_parameters(base, name)
    if getattr(base.config, "model_type", None) in FAMILIES:
        try:
            extract(model, position_free=True)
        except _UnboundedLogits:
            raise
        except InvalidInputError:  # a family refusal: the model is not wrong, only unsupported
            pass


def extract(model: Any, *, position_free: bool = False) -> Encoder:
    """The factored parameters of every layer of a transformers encoder (module docstring).

    Head h of a layer gives B_h = s W_K,hᵀ W_Q,h, V_h = W_O,h W_V,h and the query tilt
    β_h = s W_K,hᵀ b_Q,h (SPEC §1 in the package's convention, `HeadFactors`); the layer keeps
    its LayerNorms, their placement and its feed-forward block.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        A loaded encoder of FAMILIES (a task model is reduced to its `base_model`).
    position_free : bool, optional
        Accept position-dependent attention (ModernBERT's rotary embeddings and local windows)
        and extract its position-free part (R = I, global attention; default False).

    Returns
    -------
    Encoder
        The layers with their heads kept factored, the family, the position limit and whether
        only the position-free part was extracted.

    Raises
    ------
    InvalidInputError
        For an unsupported family; a causal (decoder) or cross-attention BERT; ModernBERT
        without position_free=True; an activation outside ACTIVATION_NAMES; a model without a
        layer list or without layers; a parameter holding NaN or Inf or a LayerNorm with
        ε ≤ 0 (each named); a head whose `logit_bound` exceeds MAX_LOGIT (named). The message
        names the model.

    See Also
    --------
    predict_moments : Gaussian moments through the extracted layers.
    atlas : the stability atlas of the heads.
    compare : the prediction against the model's hidden states.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §1 "The model: a Transformer as a flow of measures".

    Examples
    --------
    The extracted layer computes what the model computes:

    >>> import numpy as np
    >>> from riccati_tf.empirical.encoders import extract
    >>> from riccati_tf.empirical.encoders.forward import layer_forward
    >>> from riccati_tf.empirical.encoders.loading import capture
    >>> from riccati_tf.empirical.encoders.tiny import tiny_encoder
    >>> model = tiny_encoder("bert", hidden_size=8, n_heads=2, n_layers=1)
    >>> encoder = extract(model)
    >>> encoder.family, encoder.d, encoder.layers[0].heads[0].d_h, encoder.layers[0].placement
    ('bert', 8, 4, 'post')
    >>> x = np.random.default_rng(0).standard_normal((16, 8))
    >>> hidden, _, _ = capture(model, x)
    >>> bool(np.allclose(layer_forward(encoder.layers[0], x), hidden[1]))
    True
    """
    base = getattr(model, "base_model", model)
    config: Any = getattr(base, "config", None)
    family = getattr(config, "model_type", None)
    if family in DECODER_FAMILY:
        raise InvalidInputError(CAUSAL_REFUSAL.format(name=_model_name(model)))
    if family not in FAMILIES:
        raise InvalidInputError(f"model family {family!r} is not supported: supported are "
                                f"{FAMILIES}")
    if family in BERT_FAMILY and (config.is_decoder or config.add_cross_attention):
        raise InvalidInputError("the model is a decoder (causal mask or cross-attention): token i "
                                "attends to j ≤ i only, which no position-free Params describes")
    if family in ROTARY_FAMILY and not position_free:
        raise InvalidInputError(
            f"{family} rotates queries and keys by the token index (rotary position embeddings) "
            f"and restricts local layers to a window: its logits ⟨R_i W_Q x_i, R_j W_K x_j⟩ are "
            f"not ⟨B x_i, x_j⟩ for any B. Pass position_free=True to extract the position-free "
            f"part (R = I, global attention)")
    name = _model_name(model)
    modules = layer_list(base)
    if not modules:
        raise InvalidInputError(f"model {name} has no encoder layer (config.num_hidden_layers = "
                                f"{getattr(config, 'num_hidden_layers', None)})")
    _check_parameters(base, name)
    build = (_bert_layer if family in BERT_FAMILY else
             _vit_layer if family in VIT_FAMILY else _modernbert_layer)
    encoder = Encoder(tuple(build(layer, config) for layer in modules), family,
                      position_limit(base), family in ROTARY_FAMILY)
    bound = logit_bound(encoder, _embedding_norm(base))
    if np.any(bound > MAX_LOGIT):
        i, h = np.argwhere(bound > MAX_LOGIT)[0]
        head = encoder.layers[i].heads[h]
        raise _UnboundedLogits(
            f"model {name}: layer {i + 1} head {h + 1} has attention logits up to "
            f"{bound[i, h]:.3g} on its LayerNorm-output inputs (‖W_Q‖₂ = "
            f"{np.linalg.norm(head.W_Q, 2):.3g}, ‖W_K‖₂ = {np.linalg.norm(head.W_K, 2):.3g}), "
            f"beyond MAX_LOGIT = {MAX_LOGIT:g}: its softmax is a hard maximum and its Gaussian "
            f"moments overflow float64")
    return encoder

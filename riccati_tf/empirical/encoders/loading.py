"""Loading a saved encoder and its tokenizer (no download), the tokens fed at its embedding
output (`model_inputs`: text, token ids or hidden states read from files, or Gaussian tokens
matched to the embedding output's moments), and capturing its hidden states and attention
sublayers for them. torch and transformers are imported inside the functions only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ...errors import InvalidInputError
from ...state.validation import as_count, as_seed
from .inputfiles import check_input_files
from .sequences import GAUSSIAN_INPUTS, Inputs
from .tokenizing import TOKENIZER_FILES, tokenize_passages

__all__ = ["EMBEDDING_SAMPLE", "GAUSSIAN_INPUTS", "MAX_HIDDEN", "capture", "check_model_path",
           "embedding_moments", "load_model", "load_tokenizer", "model_inputs"]

#: the largest hidden size of a model this package loads
MAX_HIDDEN = 4096


def require_transformers() -> None:
    """Raise ImportError with the install command when torch or transformers is missing."""
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as exc:
        raise ImportError("the Transformer probe needs torch and transformers: "
                          "pip install 'riccati-tf[models]'") from exc


def check_model_path(path: str | Path) -> None:
    """Refuse a model path that is not a folder holding config.json, naming --model.

    The check of `load_model` that needs neither torch nor transformers, run before long work
    that ends in loading the model (`riccati_tf.app.report.write_report`).

    Parameters
    ----------
    path : str or pathlib.Path
        The model folder (save_pretrained).

    Raises
    ------
    InvalidInputError
        When path is not a str or Path, or names nothing, a file, or a folder without
        config.json (which of these, said).

    See Also
    --------
    load_model : loads the model after this check.

    References
    ----------
    .. [1] Hugging Face transformers, "PreTrainedModel.save_pretrained" (config.json beside
       the weights).

    Examples
    --------
    >>> import tempfile
    >>> from riccati_tf.empirical.encoders.loading import check_model_path
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     check_model_path(folder)
    Traceback (most recent call last):
        ...
    riccati_tf.errors.InvalidInputError: model path ... (--model) is not a directory holding ...
    """
    if not isinstance(path, str | Path):
        raise InvalidInputError(f"model path must be a str or a Path, got {type(path).__name__}")
    try:
        what = ("" if (Path(path) / "config.json").is_file() else
                "a folder without config.json" if Path(path).is_dir() else
                "a file" if Path(path).exists() else "missing")
    except OSError as exc:  # a name too long, ...
        what = exc.strerror or type(exc).__name__
    if what:
        raise InvalidInputError(f"model path {str(path)!r} (--model) is not a directory holding "
                                f"a saved transformers model (config.json and weights): it is "
                                f"{what}")


def load_model(path: str | Path) -> Any:
    """A saved transformers encoder from a local directory (no download), in evaluation mode.

    transformers.AutoModel.from_pretrained(path, local_files_only=True): the model whose layers
    SPEC §7 probes with Gaussian tokens.

    Parameters
    ----------
    path : str or pathlib.Path
        A directory written by save_pretrained (config.json and weights).

    Returns
    -------
    transformers.PreTrainedModel
        The model, in evaluation mode, with an integer hidden size in [1, MAX_HIDDEN].

    Raises
    ------
    InvalidInputError
        If path is not a str or Path, is not a directory holding config.json, transformers
        cannot load it (any failure, named in the message), or the hidden size is not an
        integer in [1, MAX_HIDDEN].
    ImportError
        Without torch and transformers (the install command in the message).

    See Also
    --------
    capture : the hidden states of the model for given tokens.
    riccati_tf.empirical.probe.probe : the per-layer Gaussianity of the model.
    riccati_tf.empirical.encoders.extract : the factored layer parameters.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".

    Examples
    --------
    >>> import tempfile
    >>> from riccati_tf.empirical.encoders.loading import load_model
    >>> from riccati_tf.empirical.encoders.tiny import tiny_encoder
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     tiny_encoder("bert", hidden_size=8, n_heads=2, n_layers=1).save_pretrained(folder)
    ...     model = load_model(folder)
    >>> type(model).__name__, model.config.hidden_size
    ('BertModel', 8)
    >>> load_model("no/such/folder")
    Traceback (most recent call last):
        ...
    riccati_tf.errors.InvalidInputError: model path 'no/such/folder' (--model) is not a ...
    """
    check_model_path(path)
    require_transformers()
    from transformers import AutoModel
    from transformers.utils import logging as hf_logging

    shown = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # its bar on stderr, terminal or not; restored below
    try:
        model = AutoModel.from_pretrained(path, local_files_only=True).eval()
    except Exception as exc:  # a foreign folder: whatever fails is the folder's fault
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InvalidInputError(f"model path {str(path)!r}: transformers could not load it "
                                f"({type(exc).__name__}: {detail})") from None
    finally:
        if shown:
            hf_logging.enable_progress_bar()
    hidden = getattr(model.config, "hidden_size", None)
    if not isinstance(hidden, int) or not 1 <= hidden <= MAX_HIDDEN:
        raise InvalidInputError(f"model path {str(path)!r}: hidden_size {hidden!r} is not an "
                                f"integer in [1, {MAX_HIDDEN}] (encoders.loading.MAX_HIDDEN)")
    return model


def attention_child(layer: Any) -> Any:
    """The module computing the attention sublayer: a descendant whose class name ends in
    "SelfAttention" (BERT, RoBERTa: softmax attention alone, without the residual and the
    post-norm LayerNorm of its parent), else the first child ending in "Attention"."""
    for _, module in layer.named_modules():
        if type(module).__name__.endswith("SelfAttention"):
            return module
    for _, child in layer.named_children():
        if type(child).__name__.endswith("Attention"):
            return child
    return None


def dummy_inputs(model: Any, n_tokens: int) -> dict[str, Any]:
    """Inputs whose embedding output the hook replaces (their values never reach the layers)."""
    import torch

    config = model.config
    dtype = next(model.parameters()).dtype
    if model.main_input_name == "pixel_values":
        size = config.image_size
        return {"pixel_values": torch.zeros(1, config.num_channels, size, size, dtype=dtype)}
    return {"inputs_embeds": torch.zeros(1, n_tokens, config.hidden_size, dtype=dtype)}


def capture(model: Any, tokens: np.ndarray) -> tuple[list[np.ndarray], list[Any], list[Any]]:
    """Run the encoder on one sequence `tokens` (n, d) placed at the embedding output.

    A forward hook replaces the output of the model's `embeddings` module by the tokens (the
    empirical measure of one sequence, SPEC §7), and hooks on every layer and every attention
    module keep their inputs and outputs.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        An encoder with an `embeddings` module and a list of layers.
    tokens : (n, d) ndarray of float
        One sequence, d the hidden size (n within the model's position limit).

    Returns
    -------
    hidden : list of (n, d) ndarray
        hidden[0] = tokens, hidden[ℓ] the output of layer ℓ (L + 1 arrays).
    attn_in : list of (n, d) ndarray or None
        attn_in[ℓ−1] the input of layer ℓ's attention module (`attention_child`; None if it
        has none).
    attn_out : list of (n, d) ndarray or None
        The output of that module.

    Raises
    ------
    InvalidInputError
        If the model has no `embeddings` module or no list of encoder layers.
    RuntimeError
        From torch when the tokens do not fit the model (e.g. a wrong hidden size).

    See Also
    --------
    load_model : a saved model.
    riccati_tf.empirical.encoders.compare : the moments of the captured states against the
        prediction.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf.empirical.encoders.loading import capture
    >>> from riccati_tf.empirical.encoders.tiny import tiny_encoder
    >>> model = tiny_encoder("bert", hidden_size=8, n_heads=2, n_layers=2)
    >>> x = np.random.default_rng(0).standard_normal((16, 8))
    >>> hidden, attn_in, attn_out = capture(model, x)
    >>> len(hidden), hidden[2].shape, attn_out[0].shape, bool(np.array_equal(hidden[0], x))
    (3, (16, 8), (16, 8), True)
    """
    import torch

    from .extraction import layer_list

    embeddings = feed_module(model)
    dtype = next(model.parameters()).dtype
    x = torch.tensor(tokens[None], dtype=dtype)
    layers = layer_list(model)
    hidden: list[Any] = [None] * len(layers)
    attn_in: list[Any] = [None] * len(layers)
    attn_out: list[Any] = [None] * len(layers)

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
        attention = attention_child(layer)
        if attention is not None:
            handles.append(attention.register_forward_hook(keep_attention(i), with_kwargs=True))
    try:
        with torch.inference_mode():
            model(**dummy_inputs(model, tokens.shape[0]))
    finally:
        for handle in handles:
            handle.remove()
    return [np.asarray(tokens, dtype=float), *hidden], attn_in, attn_out


#: tokens sampled from the embedding tables for the moments of the embedding output
EMBEDDING_SAMPLE = 8192


def _name(model: Any) -> str:
    """The model's class name and, when it was loaded from a folder, the folder."""
    path = getattr(model, "name_or_path", "") or ""
    return f"{type(model).__name__}" + (f" ({path})" if path else "")


def _decoder(model: Any) -> bool:
    """Whether the model is a GPT-2-family decoder (`extraction.DECODER_FAMILY`)."""
    from .extraction import DECODER_FAMILY

    return getattr(getattr(model, "config", None), "model_type", None) in DECODER_FAMILY


def feed_module(model: Any) -> Any:
    """The module whose output is the first layer's input, where tokens are placed: an
    encoder's `embeddings`; a GPT-2 decoder's `drop` (the dropout after word + position
    embeddings, the identity in evaluation). InvalidInputError for a model with neither."""
    module = getattr(model, "drop" if _decoder(model) else "embeddings", None)
    if module is None:
        raise InvalidInputError(f"{type(model).__name__} has no `embeddings` module to feed")
    return module


def _reads_ids(model: Any) -> bool:
    """Whether the model's embeddings read token ids (not pixels)."""
    return (getattr(model, "main_input_name", None) == "input_ids"
            and (getattr(model, "embeddings", None) is not None
                 or (_decoder(model) and getattr(model, "wte", None) is not None)))


def _embed(model: Any, ids: Any) -> Any:
    """The first layer's input for one id sequence (1, n): the `embeddings` module of an
    encoder; word + position embeddings wte(ids) + wpe(0..n−1) of a GPT-2 decoder."""
    import torch

    if _decoder(model):
        positions = torch.arange(ids.shape[1], dtype=torch.long)[None]
        return model.wte(ids) + model.wpe(positions)
    return model.embeddings(input_ids=ids)


def load_tokenizer(folder: str | Path) -> Any:
    """The tokenizer saved in a model folder (transformers.AutoTokenizer, offline).

    Parameters
    ----------
    folder : str or pathlib.Path
        The model folder (tokenizer.json, vocab.txt, ... beside config.json).

    Returns
    -------
    transformers.PreTrainedTokenizerBase
        The tokenizer.

    Raises
    ------
    InvalidInputError
        If the folder holds none of TOKENIZER_FILES or transformers cannot load them (with
        what to do instead).
    ImportError
        Without transformers.

    See Also
    --------
    model_inputs : tokenizes a text file with it.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".

    Examples
    --------
    >>> import tempfile
    >>> from riccati_tf.empirical.encoders.loading import load_tokenizer
    >>> from riccati_tf.empirical.encoders.tiny import tiny_encoder
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     tiny_encoder("bert", hidden_size=8, n_heads=2, n_layers=1).save_pretrained(folder)
    ...     load_tokenizer(folder)
    Traceback (most recent call last):
        ...
    riccati_tf.errors.InvalidInputError: model folder '...' holds no tokenizer ...
    """
    require_transformers()
    from transformers import AutoTokenizer

    try:
        files = {p.name for p in Path(folder).iterdir()}
    except OSError:
        files = set()
    if not files & set(TOKENIZER_FILES):
        raise InvalidInputError(
            f"model folder {str(folder)!r} holds no tokenizer (none of "
            f"{', '.join(TOKENIZER_FILES)}): save one beside the model "
            f"(tokenizer.save_pretrained) to read text, or pass token ids (--tokens) or hidden "
            f"states (--hidden)")
    try:
        return AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    except Exception as exc:  # whatever fails is the folder's fault
        detail = str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
        raise InvalidInputError(
            f"model folder {str(folder)!r} holds no tokenizer transformers can load "
            f"({type(exc).__name__}: {detail}): save one beside the model "
            f"(tokenizer.save_pretrained) to read text, or pass token ids (--tokens) or hidden "
            f"states (--hidden)") from None


def embed_ids(model: Any, sequences: list[np.ndarray]) -> list[np.ndarray]:
    """The embedding output of each token-id sequence (the model's `embeddings` module:
    word + position + type embeddings and their LayerNorm for BERT; wte + wpe for GPT-2),
    one sequence at a time.

    Raises InvalidInputError for a model that does not read token ids or an id outside
    [0, config.vocab_size) (the sequence, position and id named)."""
    import torch

    if not _reads_ids(model):
        raise InvalidInputError(f"{_name(model)} does not read token ids (its input is "
                                f"{getattr(model, 'main_input_name', None)!r}): pass its "
                                f"embedding outputs as hidden states (--hidden)")
    vocab = int(model.config.vocab_size)
    for i, ids in enumerate(sequences):
        bad = np.flatnonzero((ids < 0) | (ids >= vocab))
        if bad.size:
            raise InvalidInputError(f"{_name(model)}: token id {int(ids[bad[0]])} (sequence "
                                    f"{i + 1}, position {bad[0] + 1}) is outside its vocabulary "
                                    f"of {vocab} ids (config.vocab_size)")
    out = []
    with torch.inference_mode():
        for ids in sequences:
            e = _embed(model, torch.as_tensor(ids[None], dtype=torch.long))
            e = e[0] if isinstance(e, tuple | list) else e
            out.append(e[0].detach().to(torch.float64).cpu().numpy())
    return out


def embedding_moments(model: Any, *, seed: int = 0, n_tokens: int = EMBEDDING_SAMPLE
                      ) -> tuple[np.ndarray, np.ndarray] | None:
    """Mean and covariance of the embedding output over the embedding tables, sampled.

    n_tokens ids drawn uniformly from the vocabulary (the padding id left out) in sequences of
    min(position limit, 512) tokens (so positions 0, 1, … are equally represented, token type
    0) are embedded by the model's `embeddings` module; their pooled mean and unbiased
    covariance are the moments Gaussian input tokens are matched to. None for a model that
    does not read token ids (ViT, DeiT).

    Parameters
    ----------
    model : transformers.PreTrainedModel
        The encoder.
    seed : int, optional
        Draws the ids (default 0).
    n_tokens : int, optional
        Sampled tokens, ≥ 2 (default EMBEDDING_SAMPLE).

    Returns
    -------
    (mean, cov) : ((d,) ndarray, (d, d) ndarray) or None
        The moments.

    Raises
    ------
    InvalidInputError
        If the embedding output holds NaN or Inf (the model named).

    See Also
    --------
    model_inputs : Gaussian tokens with these moments.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".

    Examples
    --------
    A LayerNorm output with unit gains and zero biases has ‖x − x̄1‖² = d (up to ε), so the
    trace of its covariance is at most d:

    >>> import numpy as np
    >>> from riccati_tf.empirical.encoders.loading import embedding_moments
    >>> from riccati_tf.empirical.encoders.tiny import tiny_encoder
    >>> mean, cov = embedding_moments(tiny_encoder("bert", hidden_size=8, n_heads=2, n_layers=1))
    >>> mean.shape, cov.shape, bool(np.trace(cov) < 8)
    ((8,), (8, 8), True)
    """
    from .extraction import position_limit
    from .sequences import sequence_lengths, split

    if not _reads_ids(model):
        return None
    n_tokens = as_count("n_tokens", n_tokens, minimum=2)
    length = min(position_limit(model) or 512, 512)
    vocab = int(model.config.vocab_size)
    pad = getattr(model.config, "pad_token_id", None)
    allowed = np.setdiff1d(np.arange(vocab), [] if pad is None else [pad])
    rng = np.random.default_rng([as_seed("seed", seed), 2])
    ids = allowed[rng.integers(allowed.size, size=n_tokens)]
    x = np.vstack(embed_ids(model, split(ids, sequence_lengths(n_tokens, length))))
    if not np.all(np.isfinite(x)):
        raise InvalidInputError(f"{_name(model)}: its embedding output holds NaN or Inf")
    cov = np.cov(x.T)
    return x.mean(axis=0), 0.5 * (cov + cov.T)


def model_inputs(model: Any, *, text: str | Path | None = None,
                 tokens: str | Path | None = None, hidden: str | Path | None = None,
                 gaussian: str | None = None, n_tokens: int = 2048, seed: int = 0,
                 tokenizer: Any = None, max_tokens: int | None = None) -> Inputs:
    """The tokens fed at the embedding output of `model`: real inputs or Gaussian ones.

    Real inputs keep their own sequences (attention within each): passages of a text file
    (one a line) tokenized with the tokenizer saved in the model folder and embedded by the
    model; token-id sequences (.npy, .npz) embedded by the model; or hidden states of the embedding
    output (.npz) as they are. A sequence longer than the position limit is cut into chunks
    within it (`Inputs.notes` says so). Their pooled moments (m, C) start the prediction.

    Gaussian inputs x_i ~ N(m, C), cut into sequences within the position limit: "matched"
    (the default without a file) takes (m, C) from the file's tokens when one is given (the
    Gaussian tokens then have the file's sequence lengths), else from the embedding tables
    (`embedding_moments`; N(0, I) for a model that reads pixels, with a note); "standard"
    takes N(0, I).

    Parameters
    ----------
    model : transformers.PreTrainedModel
        The encoder.
    text, tokens, hidden : str or pathlib.Path, optional
        At most one file: UTF-8 text (one passage a line), a .npy of token ids (one row a
        sequence) or a .npz of token-id sequences (ragged ones as one array and "lengths"),
        or a .npz of hidden states (`inputfiles`; nothing is unpickled).
    gaussian : {"matched", "standard"}, optional
        Draw Gaussian tokens instead (default: the file's tokens when a file is given, else
        "matched").
    n_tokens : int, optional
        Gaussian tokens when no file is given, ≥ 2 (default 2048).
    seed : int, optional
        Draws the Gaussian tokens and the embedding-table sample (default 0).
    tokenizer : str, pathlib.Path or tokenizer, optional
        The tokenizer of the text, or its folder (default: the folder the model was loaded
        from).
    max_tokens : int, optional
        Keep the first sequences of a file up to this many tokens (a note says so).

    Returns
    -------
    Inputs
        The tokens, their lengths, the moments a prediction starts from, and notes.

    Raises
    ------
    InvalidInputError
        For more than one file; a file that is missing, empty or malformed; a model folder
        without a tokenizer, or a tokenizer that cannot read the text (`tokenize_passages`:
        too small a vocabulary, too many unknown tokens); an id outside the vocabulary;
        hidden states of another dimension than the model's or holding NaN/Inf; gaussian not
        in GAUSSIAN_INPUTS.
    ImportError
        Without torch and transformers.

    See Also
    --------
    riccati_tf.empirical.encoders.sequences.Inputs : the fields.
    riccati_tf.empirical.probe.probe : feeds them to the model.
    riccati_tf.empirical.encoders.compare : the prediction against the model on them.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> from riccati_tf.empirical.encoders.loading import load_model, model_inputs
    >>> from riccati_tf.empirical.encoders.tiny import save_encoder, trained_like_encoder
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     model = load_model(save_encoder(trained_like_encoder(
    ...         hidden_size=16, n_heads=2, n_layers=1, max_positions=8, n_sample=256), tmp))
    ...     text = pathlib.Path(tmp) / "text.txt"
    ...     _ = text.write_text("the model of a flow\\nattention is all you need ok\\n")
    ...     inputs = model_inputs(model, text=text)
    >>> inputs.kind, inputs.lengths
    ('text', (7, 6, 6))
    >>> print(*inputs.notes)
    1 passage longer than the position limit 8 cut into chunks of ≤ 8 tokens, each its own sequence
    >>> gauss = model_inputs(model, n_tokens=20)     # matched to the embedding tables
    >>> gauss.kind, gauss.lengths
    ('gaussian', (7, 7, 6))
    >>> print(gauss.source)
    N(m, C) matched to the embedding output over the embedding tables
    """
    from ...state.params import Gaussian
    from .extraction import position_limit
    from .inputfiles import read_hidden, read_passages, read_token_ids
    from .sequences import at_most, data_inputs, sequence_lengths, within_limit

    check_input_files(text=text, tokens=tokens, hidden=hidden, gaussian=gaussian)
    given = {k: v for k, v in (("text", text), ("tokens", tokens), ("hidden", hidden))
             if v is not None}
    seed = as_seed("seed", seed)
    d = int(model.config.hidden_size)
    limit = position_limit(model)
    data = None
    if given:
        kind, path = next(iter(given.items()))
        notes: tuple[str, ...] = ()
        if kind == "hidden":
            seqs = read_hidden(path)
            if seqs[0].shape[1] != d:
                raise InvalidInputError(f"hidden {str(path)!r}: states of dimension "
                                        f"{seqs[0].shape[1]}, but {_name(model)} has hidden "
                                        f"size {d}")
            seqs, notes = within_limit(seqs, limit)
        else:
            if kind == "text":
                tok = tokenizer
                if tok is None or isinstance(tok, str | Path):
                    folder = tok if tok is not None else getattr(model, "name_or_path", "")
                    if not folder:
                        raise InvalidInputError(f"{_name(model)} was not loaded from a folder: "
                                                f"give the tokenizer (or its folder) to read "
                                                f"text")
                    tok = load_tokenizer(folder)
                ids, notes = tokenize_passages(tok, read_passages(path),
                                               getattr(model.config, "vocab_size", None))
                what = "passage"
            else:
                ids, what = read_token_ids(path), "sequence"
            ids, cut = within_limit(ids, limit, what)
            notes += cut
            ids, more = at_most(ids, max_tokens, "sequence")
            seqs, notes = embed_ids(model, ids), notes + more
        if kind == "hidden":
            seqs, more = at_most(seqs, max_tokens, "sequence")
            notes += more
        data = data_inputs(kind, repr(str(path)), seqs, notes)
        if gaussian is None:
            return data
    gaussian = gaussian or "matched"
    if data is not None:
        lengths, n = data.lengths, data.n_tokens
    else:
        n = as_count("n_tokens", n_tokens, minimum=2)
        lengths = sequence_lengths(n, limit)
    notes = ()
    if gaussian == "standard":
        mean, cov, source = np.zeros(d), np.eye(d), "N(0, I)"
    elif data is not None:
        mean, cov = data.mean, data.cov
        source = f"N(m, C) matched to the moments of {data.kind} {data.source}"
    else:
        moments = embedding_moments(model, seed=seed)
        if moments is None:
            mean, cov, source = np.zeros(d), np.eye(d), "N(0, I)"
            notes = (f"{type(model).__name__} reads pixels, not token ids: no embedding table "
                     f"to match, N(0, I) used",)
        else:
            (mean, cov), source = moments, ("N(m, C) matched to the embedding output over the "
                                            "embedding tables")
    x = Gaussian(mean, cov).sample(n, np.random.default_rng(seed))
    return Inputs(x, lengths, np.array(mean, dtype=float), np.array(cov, dtype=float),
                  "gaussian", source, notes)

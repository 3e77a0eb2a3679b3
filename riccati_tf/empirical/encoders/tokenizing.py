"""Text to token ids with a model folder's tokenizer, refused where the tokenizer cannot read it.

A model folder whose vocabulary files are missing (tokenizer.json and vocab.txt deleted, only
tokenizer_config.json left) still loads in transformers: it builds a tokenizer of the special
tokens alone, which maps every word to the unknown token. The embedding output of such ids is
that of one token repeated, so every statistic of the text is meaningless. `tokenize_passages`
refuses a tokenizer whose vocabulary covers less than MIN_VOCABULARY_SHARE of the model's
embedding rows, or which maps more than MAX_UNKNOWN_SHARE of the text's tokens to the unknown
token, naming the vocabulary files the folder lacks. torch and transformers are not imported.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import InvalidInputError

__all__ = ["MAX_UNKNOWN_SHARE", "MIN_VOCABULARY_SHARE", "TOKENIZER_FILES", "VOCABULARY_FILES",
           "tokenize_passages"]

#: the files of a saved tokenizer (one of them must be in the model folder to read text)
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                   "vocab.txt", "vocab.json", "merges.txt", "spiece.model",
                   "sentencepiece.bpe.model", "tokenizer.model")
#: the sets of files that each hold a whole vocabulary (one set complete suffices)
VOCABULARY_FILES = (("tokenizer.json",), ("vocab.txt",), ("vocab.json", "merges.txt"),
                    ("spiece.model",), ("sentencepiece.bpe.model",), ("tokenizer.model",))
#: the largest share of the text's tokens (special tokens added by the tokenizer left out)
#: that may be the unknown token
MAX_UNKNOWN_SHARE = 0.1
#: the least share of the model's embedding rows (config.vocab_size) the vocabulary must cover
MIN_VOCABULARY_SHARE = 0.5

_INSTEAD = ("save the model's tokenizer beside it (tokenizer.save_pretrained), or pass token "
            "ids (--tokens) or hidden states (--hidden)")


def _folder_files(tokenizer: Any) -> str:
    """What the folder the tokenizer was loaded from holds and lacks of its vocabulary files
    (empty for a tokenizer not loaded from a folder)."""
    where = str(getattr(tokenizer, "name_or_path", "") or "")
    folder = Path(where)
    if not where or not folder.is_dir():
        return ""
    present = {p.name for p in folder.iterdir()}
    complete = [" + ".join(group) for group in VOCABULARY_FILES if present.issuperset(group)]
    held = ", ".join(sorted(present & set(TOKENIZER_FILES))) or "no tokenizer file"
    if complete:
        return f" The folder {str(folder)!r} holds {held}; its vocabulary is read from " \
               f"{complete[0]}."
    partial = [f"{' + '.join(g)} (missing {', '.join(f for f in g if f not in present)})"
               for g in VOCABULARY_FILES if len(g) > 1 and present & set(g)]
    missing = ", ".join(" + ".join(g) for g in VOCABULARY_FILES)
    return (f" The folder {str(folder)!r} holds {held} but no vocabulary: none of {missing} is "
            f"there" + (f" ({'; '.join(partial)})" if partial else "") + ".")


def tokenize_passages(tokenizer: Any, passages: Sequence[str], vocab_rows: int | None
                      ) -> tuple[list[np.ndarray], tuple[str, ...]]:
    """The token ids of each passage (the tokenizer's special tokens added), with the share of
    unknown tokens checked.

    With n the number of tokens the text gives (the special tokens the tokenizer adds, such as
    [CLS] and [SEP], left out) and u those that are the unknown token, the tokenizer is refused
    when

        |vocabulary| < MIN_VOCABULARY_SHARE · vocab_rows   or   u > MAX_UNKNOWN_SHARE · n,

    i.e. when it cannot read the text: its ids would be those of one token for most words.

    Parameters
    ----------
    tokenizer : transformers.PreTrainedTokenizerBase
        The tokenizer (`riccati_tf.empirical.encoders.loading.load_tokenizer`).
    passages : sequence of str
        The passages, one sequence each.
    vocab_rows : int or None
        The model's embedding rows (config.vocab_size); None skips the vocabulary-size test.

    Returns
    -------
    (ids, notes) : (list of (n_s,) int64 ndarray, tuple of str)
        The ids per passage, and a note counting the unknown tokens when there are any.

    Raises
    ------
    InvalidInputError
        Naming the sizes or the share, and, for a tokenizer loaded from a folder, the
        vocabulary files the folder holds or lacks.

    See Also
    --------
    riccati_tf.empirical.encoders.loading.model_inputs : embeds the ids.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".

    Examples
    --------
    >>> from transformers import BertTokenizerFast
    >>> from riccati_tf.empirical.encoders.tiny import wordpiece_vocab
    >>> from riccati_tf.empirical.encoders.tokenizing import tokenize_passages
    >>> vocab = wordpiece_vocab()
    >>> tok = BertTokenizerFast(vocab={t: i for i, t in enumerate(vocab)})
    >>> ids, notes = tokenize_passages(tok, ["the model of a flow"], len(vocab))
    >>> tok.convert_ids_to_tokens(ids[0]), notes
    (['[CLS]', 'the', 'model', 'of', 'a', 'flow', '[SEP]'], ())
    >>> five = BertTokenizerFast(vocab={t: i for i, t in enumerate(vocab[:5])})
    >>> tokenize_passages(five, ["the model of a flow"], len(vocab))
    Traceback (most recent call last):
        ...
    riccati_tf.errors.InvalidInputError: the tokenizer (...) cannot read the text: ... holds 5 ...
    """
    name = f"the tokenizer ({type(tokenizer).__name__})"
    size = len(tokenizer)
    if vocab_rows is not None and size < MIN_VOCABULARY_SHARE * vocab_rows:
        raise InvalidInputError(
            f"{name} cannot read the text: its vocabulary holds {size} tokens for the model's "
            f"{vocab_rows} embedding rows (config.vocab_size), fewer than MIN_VOCABULARY_SHARE "
            f"= {MIN_VOCABULARY_SHARE:g} of them.{_folder_files(tokenizer)} To read text, "
            f"{_INSTEAD}")
    unknown = getattr(tokenizer, "unk_token_id", None)
    ids, n, u = [], 0, 0
    for passage in passages:
        enc = tokenizer(passage, add_special_tokens=True, truncation=False, verbose=False,
                        return_special_tokens_mask=True)
        row = np.asarray(enc["input_ids"], dtype=np.int64)
        text = row[np.asarray(enc["special_tokens_mask"], dtype=bool) == 0]
        n += text.size
        u += 0 if unknown is None else int(np.count_nonzero(text == unknown))
        ids.append(row)
    if u > MAX_UNKNOWN_SHARE * n:
        raise InvalidInputError(
            f"{name} cannot read the text: {u} of its {n} tokens ({u / n:.0%}) are the unknown "
            f"token {tokenizer.unk_token!r}, more than MAX_UNKNOWN_SHARE = "
            f"{MAX_UNKNOWN_SHARE:.0%} (vocabulary of {size} tokens).{_folder_files(tokenizer)} "
            f"To read this text, {_INSTEAD}")
    notes = (f"{u} of the text's {n} tokens are the unknown token {tokenizer.unk_token!r}",
             ) if u else ()
    return ids, notes

"""`riccati-tf probe`, `atlas` and `compare`: saved Transformer encoders (SPEC §7) — Gaussianity
per layer, the stability atlas, predicted against measured moments.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import InvalidInputError
from .common import Outcome

if TYPE_CHECKING:

    pass


__all__: list[str] = []


def _add_input_arguments(p: argparse.ArgumentParser) -> None:
    """--text, --tokens, --hidden and --input of the model subcommands."""
    files = p.add_mutually_exclusive_group()
    files.add_argument("--text", metavar="FILE", default=None,
                       help="real input: passages one a line, tokenized with the tokenizer "
                            "saved in the model folder; each passage its own sequence")
    files.add_argument("--tokens", metavar="FILE", default=None,
                       help="real input: a .npy of token ids (one row a sequence) or a .npz of "
                            "sequences (ragged: one array and 'lengths'); never unpickled")
    files.add_argument("--hidden", metavar="FILE", default=None,
                       help="real input: a .npz of hidden states of the embedding output "
                            "(arrays (n, d) or (S, n, d), one sequence each)")
    p.add_argument("--input", choices=("data", "matched", "standard"), default=None,
                   help="data: the file's tokens (the default with a file); matched: Gaussian "
                        "tokens with the moments of the file, else of the embedding output "
                        "over the embedding tables (the default without a file); standard: "
                        "N(0, I)")


def _inputs(args: argparse.Namespace) -> dict[str, Any]:
    """The input keywords of model_inputs from --text/--tokens/--hidden/--input."""
    files = {k: getattr(args, k, None) for k in ("text", "tokens", "hidden")}
    choice = getattr(args, "input", None)
    if choice == "data" and not any(v is not None for v in files.values()):
        raise InvalidInputError("--input data needs a file: --text, --tokens or --hidden")
    return {**files, "gaussian": None if choice in (None, "data") else choice}


MODELS_EXTRA = "pip install 'riccati-tf[models]'"


def _models_extra(exc: ImportError) -> InvalidInputError:
    """The missing torch or transformers as one line naming the extra once (quoted for zsh)."""
    text = str(exc)
    return InvalidInputError(text if MODELS_EXTRA in text else
                             f"{text}; install the extra: {MODELS_EXTRA}")


def cmd_probe(args: argparse.Namespace, _spec: dict | None) -> Outcome:
    from ..experiments import probe_table, run_probe

    try:
        numbers = run_probe(args.model, args.out, n_tokens=args.n_tokens, seed=args.seed,
                            n_null=args.n_null, progress=True, **_inputs(args))
    except ImportError as exc:
        raise _models_extra(exc) from None
    text = (probe_table(numbers) + f"\nfigure and numbers written to "
            f"{Path(args.out) / 'probe.png'}, probe.json")
    return numbers, text, None


def cmd_atlas(args: argparse.Namespace, _spec: dict | None) -> Outcome:
    """Per layer: the regime and T* of the multi-head, general-V attention flow up to the
    horizon (A = 0 and A = E[J_MLP], with who decided); per head: signed spectral masses, trace
    and growth rates, the scalar fit as an extra column (SPEC §5, encoders.atlas)."""
    from ...empirical.encoders import tty_progress
    from ...empirical.encoders.outputs import write_atlas

    try:
        result, numbers = write_atlas(args.model, args.out, position_free=args.position_free,
                                      horizon=args.horizon, progress=tty_progress("atlas"),
                                      chained=args.chained, **_inputs(args))
    except ImportError as exc:
        raise _models_extra(exc) from None
    text = (f"moments from: {numbers['input_tokens']['description']}\n" + result.summary()
            + f"\nfigure and numbers written to {numbers['figure']}, "
            f"{numbers['json']}; input moments to {numbers['inputs']}")
    return numbers, text, None


def cmd_compare(args: argparse.Namespace, _spec: dict | None) -> Outcome:
    """Predicted moments against a saved encoder's own hidden states, one layer at a time and
    chained, with the baselines no_change, no_attention and oracle and the validity map of the
    attention formula (encoders.compare)."""
    from ...empirical.encoders import compare, plot_comparison, tty_progress
    from ...empirical.encoders.extraction import check_model
    from ...empirical.encoders.inputfiles import check_input_files
    from ...empirical.encoders.loading import model_inputs
    from ...empirical.encoders.outputs import load
    from ...io.figures import figure_png
    from ...io.files import OutputFolder
    from ...io.paths import relative_paths
    from ...io.serialize import json_document
    from ...state.validation import as_count

    folder = OutputFolder.open(args.out)
    folder.check(("comparison.png", "comparison.json"))
    as_count("--n-tokens", args.n_tokens, minimum=2)
    check_input_files(**_inputs(args))
    try:
        model = load(args.model)
        check_model(model)
        inputs = model_inputs(model, n_tokens=args.n_tokens, seed=args.seed, **_inputs(args))
        result = compare(model, n_tokens=args.n_tokens, seed=args.seed, inputs=inputs,
                         position_free=args.position_free, progress=tty_progress("compare"))
    except ImportError as exc:
        raise _models_extra(exc) from None
    numbers = {**result.to_json(), "inputs": inputs.to_json(), "model_path": args.model,
               "figure": str(folder.path / "comparison.png"),
               "json": str(folder.path / "comparison.json")}
    folder.write({"comparison.png": figure_png(plot_comparison(result)),
                  "comparison.json": json_document(relative_paths(numbers, folder.path, (
                      args.model, args.text, args.tokens, args.hidden)))})
    text = (f"inputs: {inputs.describe()}\n" + result.summary()
            + f"\nfigure and numbers written to {numbers['figure']}, {numbers['json']}")
    return numbers, text, None

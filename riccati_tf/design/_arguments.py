"""Arguments of the design functions: one validation path for names and tensors.

`names` reads a choice among registered names (a string or a sequence of strings).
`dense_tensor` accepts a factor, a reference covariance or a drift as a dense (strided) float32
or float64 tensor holding values, or an array-like torch converts to one; sparse layouts, meta
tensors (no values), half precisions (float16, bfloat16: torch's eigensolvers refuse them) and
non-numeric input are refused with InvalidInputError naming the argument. torch is imported
inside the functions only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import InvalidInputError

__all__: list[str] = []


def dense_tensor(name: str, value: Any) -> Any:
    """`value` as a dense float32/float64 torch tensor with values (a tensor is kept, with its
    autograd graph); InvalidInputError for anything else."""
    import torch

    try:
        X = torch.as_tensor(value)
    except (TypeError, ValueError, RuntimeError) as exc:
        raise InvalidInputError(f"{name} must be a real tensor or array_like, got "
                                f"{type(value).__name__} ({exc})") from None
    if X.layout != torch.strided:
        raise InvalidInputError(f"{name} is a {X.layout} tensor; pass a dense one "
                                f"(e.g. {name}.to_dense())")
    if X.device.type == "meta":
        raise InvalidInputError(f"{name} is a meta tensor, which holds no values")
    if X.dtype not in (torch.float32, torch.float64):
        raise InvalidInputError(f"{name} must be of dtype float32 or float64, got {X.dtype}"
                                + (" (half precisions have no eigensolver; convert with "
                                   ".double())" if X.is_floating_point() else ""))
    return X


def names(name: str, value: Any, allowed: Sequence[str]) -> tuple[str, ...]:
    """`value` (one name or a non-empty sequence of names, each in `allowed`) as a tuple;
    InvalidInputError naming the argument and the allowed names otherwise (None included)."""
    items = (value,) if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not items:
        raise InvalidInputError(f"{name} must be one of {tuple(allowed)} or a non-empty list of "
                                f"them, got {type(value).__name__}")
    for item in items:
        if not isinstance(item, str) or item not in allowed:
            raise InvalidInputError(f"{name}: {item!r} is not one of {tuple(allowed)}")
    return tuple(items)

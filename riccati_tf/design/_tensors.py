"""Tensor arguments of the margins (`riccati_tf.design.margin`): one validation path.

A factor, a reference covariance or a drift is accepted as a dense (strided) float32 or float64
tensor holding values, or an array-like torch converts to one; sparse layouts, meta tensors
(no values), half precisions (float16, bfloat16: torch's eigensolvers refuse them) and
non-numeric input are refused with InvalidInputError naming the argument. torch is imported
inside the functions only.
"""

from __future__ import annotations

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

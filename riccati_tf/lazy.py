"""Lazy attributes of a package (PEP 562): `riccati_tf.flow` imports `riccati_tf.flows.integrate`
on first use, so that `import riccati_tf` and `riccati-tf --help` do not pay for SciPy, SymPy and
python-control until a computation needs them."""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["attach"]


def attach(package: str, names: Mapping[str, str]
           ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module `__getattr__` and `__dir__` of a package whose attributes load on first use.

    `getattr(package, name)` imports the module `names[name]` (relative to `package`), takes
    its attribute `name` and keeps it in the package's namespace, so that the import happens
    once; a submodule's name imports the submodule (`riccati_tf.stability` without an import
    statement, as when the package imported it eagerly); any other name raises AttributeError
    as for any module.

    Parameters
    ----------
    package : str
        The package's `__name__`.
    names : mapping of str to str
        Public name → the submodule that defines it, relative to the package (".flows.integrate").

    Returns
    -------
    (callable, callable)
        `__getattr__(name)` and `__dir__()` for the package's module namespace.

    Raises
    ------
    AttributeError
        From `__getattr__`, for a name that is neither in `names` nor a submodule.

    See Also
    --------
    importlib.import_module : the import it defers.

    References
    ----------
    .. [1] PEP 562, "Module __getattr__ and __dir__".

    Examples
    --------
    >>> import riccati_tf
    >>> riccati_tf.flow.__module__
    'riccati_tf.flows.integrate'
    >>> "flow" in dir(riccati_tf), "attach" in dir(riccati_tf)
    (True, False)
    """
    def __getattr__(name: str) -> Any:
        if name not in names:
            if name.startswith("__") or importlib.util.find_spec(f"{package}.{name}") is None:
                raise AttributeError(f"module {package!r} has no attribute {name!r}")
            return importlib.import_module(f"{package}.{name}")
        value = getattr(importlib.import_module(names[name], package), name)
        setattr(importlib.import_module(package), name, value)
        return value

    def __dir__() -> list[str]:
        # the public names (`__all__` and the lazy ones) and the dunders: not the package's
        # own helpers (TYPE_CHECKING, attach) or the submodules its imports bound (lazy)
        module = vars(importlib.import_module(package))
        return sorted(set(names) | set(module.get("__all__", ())) |
                      {k for k in module if k.startswith("__")})

    return __getattr__, __dir__

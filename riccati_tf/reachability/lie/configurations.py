"""The control configurations: which layer parameters are controls, which are held (SPEC §4).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import InvalidInputError

__all__: list[str] = []  # Configuration and CONFIGURATIONS: riccati_tf.reachability.lie


#: the layer parameters of SPEC §1, in the order used for monomial names
PARAMETERS = ("A", "B", "V", "b")


@dataclass(frozen=True)
class Configuration:
    """Which layer parameters are controls, which are held fixed, which are zero.

    The moment equations ṁ = (A + V)m + VΣBm + b, Σ̇ = AΣ + ΣAᵀ + VΣBΣ + ΣBᵀΣVᵀ become the
    control-affine system ż = f0(z) + Σ_i u_i g_i(z) once the controls are chosen: every
    monomial in the controls gives one field g_i, the held parameters make the drift f0. The
    registered configurations are in `CONFIGURATIONS` ("affine", "attention", "values", "full"
    and their "-nobias" variants).

    Parameters
    ----------
    name : str
        The name in `CONFIGURATIONS`.
    controls : tuple of str
        Parameters among "A", "B", "V", "b" free at every depth (time-varying).
    tied : tuple of str
        Parameters constant in depth, given by the caller or, by default, a fixed generic
        matrix (`generic_matrix`); every other parameter is zero unless the caller fixes it
        (e.g. a frozen feed-forward A as a drift).
    summary : str
        One line saying what the configuration is.

    Raises
    ------
    None
        The registered configurations are built once; functions taking a configuration
        refuse one not registered (InvalidInputError).

    See Also
    --------
    accessibility_rank : the Lie-algebra rank of a configuration.
    steer : steering with a configuration's controls.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §3 "Rank invariance".
    .. [2] riccati_tf theory, SPEC §4 "Reachability (time-varying controls)".
    .. [3] V. Jurdjevic, "Geometric Control Theory", Cambridge University Press, 1997.

    Examples
    --------
    >>> from riccati_tf.reachability.lie import CONFIGURATIONS
    >>> conf = CONFIGURATIONS["attention"]
    >>> conf.controls, conf.tied, conf.has_bias
    (('B', 'b'), ('V',), True)
    """

    name: str
    controls: tuple[str, ...]
    tied: tuple[str, ...]
    summary: str

    @property
    def has_bias(self) -> bool:
        """Whether the bias b is a control."""
        return "b" in self.controls


def _registry() -> dict[str, Configuration]:
    base = {
        "affine": (("A", "b"), (), "feed-forward A and bias b; no attention (V = B = 0)"),
        "attention": (("B", "b"), ("V",), "query–key B and bias b; value V fixed in depth; A = 0"),
        "values": (("V", "b"), ("B",), "value V and bias b; query–key B fixed in depth; A = 0"),
        "full": (("A", "B", "V", "b"), (), "every parameter A, B, V, b"),
    }
    out = {}
    for name, (controls, tied, summary) in base.items():
        out[name] = Configuration(name, controls, tied, summary)
        out[f"{name}-nobias"] = Configuration(f"{name}-nobias",
                                              tuple(p for p in controls if p != "b"), tied,
                                              summary.replace(" and bias b", "") + "; b = 0")
    return out


#: the named control configurations: "affine", "attention", "values", "full" and "<name>-nobias"
CONFIGURATIONS: dict[str, Configuration] = _registry()


def configuration(name: str | Configuration) -> Configuration:
    """The registered configuration called `name` (InvalidInputError listing the names if none)."""
    if isinstance(name, Configuration):
        if CONFIGURATIONS.get(name.name) != name:
            raise InvalidInputError(f"controls: the Configuration {name.name!r} is not one of "
                                    f"the registered {', '.join(CONFIGURATIONS)}")
        return CONFIGURATIONS[name.name]
    if not isinstance(name, str) or name not in CONFIGURATIONS:
        raise InvalidInputError(f"controls must be one of {', '.join(CONFIGURATIONS)}; "
                                f"got {name!r}")
    return CONFIGURATIONS[name]

"""Defaults and bounds of the empirical computations, as plain numbers: the command line's help
shows them without importing SciPy, torch or the encoders. The modules that apply them re-export
them under these names (`gaussianity.MAX_NULL`, `probe.MAX_TOKENS`, `probe.DEFAULT_TOKENS`,
`encoders.atlas.DEFAULT_HORIZON`); this module declares no public names of its own."""

__all__: list[str] = []

#: Monte-Carlo null samples of a Gaussianity test (n_null), at most
MAX_NULL = 10_000
#: most Gaussian tokens fed to an encoder by the probe (all sequences together)
MAX_TOKENS = 8192
#: default number of Gaussian tokens of the probe: 4 sequences of a 512-position model, n ≫ k
DEFAULT_TOKENS = 2048
#: horizon (in layers of unit depth) up to which the atlas classifies every layer's flow
DEFAULT_HORIZON = 10.0
#: most tokens of the particle experiments (the N² softmax makes the top of the range take minutes)
EXPERIMENT_MAX_TOKENS = 20_000

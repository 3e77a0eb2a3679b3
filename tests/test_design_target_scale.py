"""A target covariance whose scale underflows float64 is refused for what it is — an eigenvalue
the layer is designed on that is subnormal, whose reciprocal (the precision the gain is built
from) overflows — and a gain scale that overflows is named; targets at the edge of the normal
range, and subnormal eigenvalues outside the numerical range, are designed as any other."""

import numpy as np
import pytest

from riccati_tf.design.target import attracting_layer
from riccati_tf.errors import InvalidInputError
from riccati_tf.state.moments import moment_rhs
from riccati_tf.state.params import Gaussian

TINY = np.finfo(float).tiny
ROT = np.array([[0.6, -0.8], [0.8, 0.6]])


@pytest.mark.parametrize("cov", [1e-310 * np.eye(2), 5e-324 * np.eye(2),
                                 np.diag([1e-308, 1e-310]), np.diag([3e-308, 1e-322]),
                                 ROT @ np.diag([2e-310, 1e-310]) @ ROT.T,
                                 1e-315 * np.eye(3)],
                         ids=["1e-310 I", "5e-324 I", "both subnormal", "one subnormal",
                              "rotated", "d = 3"])
@pytest.mark.parametrize("given", ["Gaussian", "pair"])
def test_an_underflowing_target_is_refused_for_its_scale(cov, given):
    mean = np.zeros(cov.shape[0])
    target = Gaussian(mean, cov) if given == "Gaussian" else (mean, cov)
    with pytest.raises(InvalidInputError, match="below the smallest normal float64") as info:
        attracting_layer(target)
    assert "nan" not in str(info.value)
    smallest = float(str(info.value).split("eigenvalue ")[1].split()[0])
    assert 0 < smallest < TINY  # the eigenvalue named is the subnormal one


@pytest.mark.parametrize("cov", [3e-308 * np.eye(2), np.diag([1.0, 1e-310]),
                                 np.diag([1.0, 5e-324])])
def test_targets_at_the_edge_of_the_normal_range_are_designed(cov):
    target = Gaussian(np.zeros(2), cov)
    design = attracting_layer(target)
    assert np.all(np.isfinite(design.G))
    assert design.rank == (2 if cov[1, 1] >= TINY else 1)
    # the target is a rest point of the designed layer: Σ̇ = 0 against the size of A Σ
    p = design.params
    _, dS = moment_rhs(p, target)
    assert np.linalg.norm(dS) <= 1e-12 * np.linalg.norm(p.A @ cov)


def test_a_gain_scale_that_overflows_is_named():
    with pytest.raises(InvalidInputError, match=r"G = scale · Σ\*⁺ overflows"):
        attracting_layer(Gaussian(np.zeros(2), 1e-300 * np.eye(2)), scale=1e10)
    design = attracting_layer(Gaussian(np.zeros(2), 1e-300 * np.eye(2)), scale=1e-10)
    assert np.all(np.isfinite(design.G))

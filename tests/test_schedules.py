"""Time-varying layers t ↦ Params (and t ↦ FeedForward for particles): whatever a schedule
returns that is not a finite layer on R^d — NaN or Inf written into any array after
construction, another type, another dimension, an exception — is an InvalidInputError naming
the schedule and the time, in every entry point that takes one, at the start and later."""

import numpy as np
import pytest

import riccati_tf as rt
from riccati_tf.empirical.particles import FeedForward, simulate
from riccati_tf.errors import InvalidInputError
from riccati_tf.state.params import Gaussian, Head, Params

I2 = np.eye(2)
GOOD = Params(-I2, V=0.1 * I2, B=I2)
X0 = np.random.default_rng(0).standard_normal((16, 2))


def _with_nan(where):
    """A Params (or FeedForward) whose array `where` is written NaN after construction."""
    if where == "ff":
        layer = FeedForward(W=I2, U=I2)
        array = layer.U
    elif where == "head":
        head = Head(Q=np.eye(1, 2), K=np.eye(1, 2), V=np.eye(1, 2), O=np.eye(2, 1))
        layer, array = Params(-I2, heads=[head]), head.K
    else:
        layer = Params(-I2, V=I2, B=I2, b=np.ones(2))
        array = {"A": layer.A, "b": layer.b, "V": layer.heads[0][0], "B": layer.heads[0][1]}[where]
    array.setflags(write=True)
    array.flat[-1] = np.nan
    return layer


BAD = {**{f"nan {w}": _with_nan(w) for w in ("A", "b", "V", "B", "head")},
       "None": None, "a dict": {"A": -I2}, "3-d": Params(-np.eye(3))}


def _schedule(bad, later):
    return (lambda t: bad if t > 0.2 else GOOD) if later else (lambda t: bad)


ENTRY = {
    "flow": lambda fn: rt.flow(fn, Gaussian([0, 0], I2), 1.0),
    "flow rk": lambda fn: rt.flow(fn, Gaussian([0, 0], I2), 1.0, method="rk"),
    "simulate": lambda fn: simulate(fn, X0, 1.0, n_steps=10),
    "simulate euler": lambda fn: simulate(fn, X0, 1.0, n_steps=10, method="euler"),
}


@pytest.mark.parametrize("later", [False, True], ids=["at t = 0", "later"])
@pytest.mark.parametrize("entry", sorted(ENTRY))
@pytest.mark.parametrize("bad", sorted(BAD))
def test_a_schedule_returning_no_finite_layer_is_refused_naming_it(bad, entry, later):
    with pytest.raises(InvalidInputError, match=r"params\(t\).* at t = ") as info:
        ENTRY[entry](_schedule(BAD[bad], later))
    t = float(str(info.value).split("at t = ")[1].split()[0].rstrip(":,)"))
    assert (t > 0.2) if later else t == 0.0


def test_a_schedule_that_raises_is_named():
    def fn(t):
        if t > 0.5:
            raise KeyError("step")
        return GOOD
    for entry in ENTRY.values():
        with pytest.raises(InvalidInputError, match=r"params\(t\) raised KeyError at t = "):
            entry(fn)


@pytest.mark.parametrize("later", [False, True])
def test_a_feedforward_schedule_is_checked_the_same_way(later):
    good = FeedForward(W=I2, U=I2)
    for bad in (_with_nan("ff"), None, FeedForward(W=np.eye(3), U=np.eye(3))):
        fn = (lambda t, bad=bad: bad if t > 0.2 else good) if later else (lambda t, bad=bad: bad)
        with pytest.raises(InvalidInputError, match=r"feedforward\(t\).* at t = "):
            simulate(GOOD, X0, 1.0, n_steps=10, feedforward=fn)


def test_constant_layers_written_after_construction_are_refused():
    with pytest.raises(InvalidInputError, match="params holds NaN or Inf"):
        simulate(_with_nan("V"), X0, 1.0, n_steps=2)
    with pytest.raises(InvalidInputError, match="feedforward holds NaN or Inf"):
        simulate(GOOD, X0, 1.0, n_steps=2, feedforward=_with_nan("ff"))
    with pytest.raises(InvalidInputError, match="params holds NaN or Inf"):
        rt.flow(_with_nan("A"), Gaussian([0, 0], I2), 1.0)


def test_a_finite_schedule_is_integrated_as_before():
    # the check is transparent: a switched schedule equals the two constant flows joined
    fn = lambda t: GOOD if t < 0.5 else Params(-2 * I2)  # noqa: E731
    run = simulate(fn, X0, 1.0, n_steps=10, method="euler")
    first = simulate(GOOD, X0, 0.5, n_steps=5, method="euler", keep_particles=True)
    second = simulate(Params(-2 * I2), first.particles[-1], 0.5, n_steps=5, method="euler")
    np.testing.assert_allclose(run.cov[-1], second.cov[-1], rtol=1e-12)

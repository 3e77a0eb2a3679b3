"""A hostile corpus: inputs and faults a careless or adversarial user produces, each with the
answer the package owes them.

Every case is a function registered with :func:`case`. Running it ends in exactly one outcome:

    clean_error   InvalidInputError / SolverError from the API, or CLI exit 2 / 3 with one line
    verified      a result that the case compared against an independent reference and found right
    silent_wrong  a result the reference contradicts (AssertionError), or an invalid input accepted
    leaked        any other exception, or CLI exit 1 (reserved for bugs)
    hang          the case ran past its limit of CPU time (or, blocked, far past it in wall time)

A case says which outcomes are acceptable (`expect`): "error" (only a clean error), "result"
(only a verified result) or "either". `python -m tests.hostile --summary` prints the counts per
area and outcome; `tests/hostile/test_corpus.py` runs every case under pytest.

Cases live in the modules ``cases_*.py`` of this package, one per area of the package.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import pkgutil
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass

from riccati_tf.errors import InvalidInputError, SolverError

OUTCOMES = ("clean_error", "verified", "silent_wrong", "leaked", "hang")
EXPECT = {"error": ("clean_error",), "result": ("verified",),
          "either": ("clean_error", "verified")}
#: default limit of one case, in seconds of this process's CPU time (setitimer's ITIMER_PROF:
#: user + system time, which a busy machine does not stretch the way it stretches wall time)
TIMEOUT = 60.0
#: a case that uses no CPU (blocked on a pipe or a lock) is ended after BLOCKED_FACTOR times its
#: limit of wall time: a backstop against a hang, far beyond what any load on the machine makes
#: of a case that computes (4 busy processes on 2 cores stretch wall time about 3-fold)
BLOCKED_FACTOR = 20.0


class Hang(BaseException):
    """Raised by the timer inside a case that ran past its limit (a BaseException, so that the
    package's own `except Exception` cannot swallow it)."""


class CleanError(Exception):
    """Raised by a case helper to report a refusal that is clean by the CLI's contract (exit 2/3
    with a single line on stderr)."""


@dataclass(frozen=True)
class Case:
    """One hostile case: `run()` returns normally (a verified result, or an accepted input when
    expect == "error"), raises AssertionError (a wrong answer), or raises an error."""

    name: str
    area: str
    expect: str
    run: Callable[[], object]
    timeout: float = TIMEOUT

    @property
    def allowed(self) -> tuple[str, ...]:
        return EXPECT[self.expect]


REGISTRY: dict[str, Case] = {}


def case(area: str, expect: str = "either", *, timeout: float = TIMEOUT, name: str | None = None):
    """Register the decorated function as a hostile case of `area` ("api", "cli", "sweep",
    "numerics", "certify", ...)."""
    if expect not in EXPECT:
        raise ValueError(f"expect must be one of {sorted(EXPECT)}, got {expect!r}")

    def register(fn):
        key = f"{area}:{name or fn.__name__}"
        if key in REGISTRY:
            raise ValueError(f"duplicate hostile case {key}")
        REGISTRY[key] = Case(key, area, expect, fn, timeout)
        return fn

    return register


def cases_of(area: str, expect: str, items: dict, fn: Callable, *, timeout: float = TIMEOUT):
    """Register one case per item: `fn(value)` for each (label, value) of `items`."""
    for label, value in items.items():
        case(area, expect, timeout=timeout, name=label)(lambda value=value: fn(value))


def _alarm(_signum, _frame):
    raise Hang


#: the timers a case runs under: (timer, its signal, the factor of the case's limit)
TIMERS = ((signal.ITIMER_PROF, signal.SIGPROF, 1.0),
          (signal.ITIMER_REAL, signal.SIGALRM, BLOCKED_FACTOR))


def outcome(c: Case) -> tuple[str, str]:
    """Run one case under its limit of CPU time: (outcome, detail)."""
    previous = [signal.signal(sig, _alarm) for _, sig, _ in TIMERS]
    for timer, _, factor in TIMERS:
        signal.setitimer(timer, factor * c.timeout)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            c.run()
    except Hang:
        return "hang", f"no answer within {c.timeout:g} s of CPU time"
    except AssertionError as exc:
        return "silent_wrong", str(exc).splitlines()[0] if str(exc) else "assertion failed"
    except (InvalidInputError, SolverError, CleanError) as exc:
        return "clean_error", f"{type(exc).__name__}: {exc}"
    except Exception as exc:  # anything else leaked out of the package
        return "leaked", f"{type(exc).__name__}: {exc}"
    finally:
        for (timer, sig, _), handler in zip(TIMERS, previous, strict=True):
            signal.setitimer(timer, 0)
            signal.signal(sig, handler)
    if c.expect == "error":
        return "silent_wrong", "the input was accepted"
    return "verified", ""


def load_all() -> dict[str, Case]:
    """Import every cases_* module of this package (registering its cases)."""
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("cases_"):
            importlib.import_module(f"{__name__}.{info.name}")
    return REGISTRY


def run_all(selected: dict[str, Case] | None = None, progress: Callable | None = None):
    """[(case, outcome, detail, seconds of CPU time)] for every registered (or selected) case."""
    rows = []
    for c in (selected or load_all()).values():
        start = time.process_time()  # CPU time (reported, never asserted on)
        got, detail = outcome(c)
        rows.append((c, got, detail, time.process_time() - start))
        if progress:
            progress(rows[-1])
    return rows

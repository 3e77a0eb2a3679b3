"""Every hostile case ends in an outcome it allows: a clean error or a verified result, never a
silent wrong answer, a leaked exception or a hang."""

import pytest

from . import load_all, outcome

CASES = load_all()


@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile_case(name):
    c = CASES[name]
    got, detail = outcome(c)
    assert got in c.allowed and got not in ("silent_wrong", "leaked", "hang"), \
        f"{name}: {got} ({detail}); allowed {c.allowed}"

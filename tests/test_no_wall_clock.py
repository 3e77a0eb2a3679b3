"""No test asserts on wall-clock time: a suite that fails when the machine is busy is flaky.

Every file of tests/ is read line by line (as grep would) for a wall-clock reading (time.time,
time.perf_counter, time.monotonic and their _ns forms, datetime.now, timeit) and for a message
about a duration ("took over", "took too long"). A bound on work is a count (steps, nodes,
bytes, right-hand sides) or CPU time (time.process_time, time.thread_time), which a loaded
machine does not stretch the way it stretches wall time; a CPU-time bound must say so ("CPU
time") on its line or within the lines around it. The one wall-clock timer left is the hostile
corpus's backstop for a blocked case, set at BLOCKED_FACTOR (≥ 10) times the case's CPU-time
limit (tests/hostile/__init__.py)."""

import re
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
#: reading the wall clock, or reporting a duration
WALL = re.compile(r"\btime\.(time|time_ns|perf_counter|perf_counter_ns|monotonic|monotonic_ns)\("
                  r"|\bfrom\s+time\s+import\b.*\b(time|perf_counter|monotonic)\b"
                  r"|\bdatetime\.(now|utcnow|today)\("
                  r"|\bimport\s+timeit\b|\bfrom\s+timeit\b"
                  r"|took (over|too long)")
#: reading CPU time: allowed where the text around says that it is CPU time
CPU = re.compile(r"\btime\.(process_time|process_time_ns|thread_time|thread_time_ns)\(")
#: a wall-clock interval timer or alarm
TIMER = re.compile(r"\bITIMER_REAL\b|\bsignal\.alarm\(")
#: lines around a CPU-time reading searched for the words "CPU time"
AROUND = 4


def wall_clock_uses(text: str, name: str = "<text>") -> list[str]:
    """The lines of `text` (a test file) that read the wall clock or time a test by it."""
    lines = text.splitlines()
    found = []
    for i, line in enumerate(lines):
        where = f"{name}:{i + 1}: {line.strip()}"
        if WALL.search(line):
            found.append(where)
        elif CPU.search(line):
            near = " ".join(lines[max(0, i - AROUND):i + AROUND + 1])
            if not re.search(r"CPU[ -]time", near):
                found.append(where + "  (CPU time, not said so)")
    return found


def test_no_test_reads_the_wall_clock():
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        if path != Path(__file__).resolve():
            found += wall_clock_uses(path.read_text(encoding="utf-8"), str(path.relative_to(TESTS)))
    assert found == [], "wall-clock timing in tests:\n" + "\n".join(found)


def test_the_only_wall_clock_timer_is_the_hostile_backstop():
    from tests import hostile

    users = [p.relative_to(TESTS) for p in sorted(TESTS.rglob("*.py"))
             if p != Path(__file__).resolve() and TIMER.search(p.read_text(encoding="utf-8"))]
    assert users == [Path("hostile/__init__.py")]
    (real,) = [factor for timer, _, factor in hostile.TIMERS if timer == hostile.signal.ITIMER_REAL]
    assert real >= 10    # a backstop for a blocked case, far beyond any load's stretch


@pytest.mark.parametrize("source", [
    "start = time.perf_counter()\nwork()\nassert time.perf_counter() - start < 5",
    "t0 = time.time()",
    "from time import monotonic",
    "assert done, 'the alias bomb took over 5 s to refuse'",
    "now = datetime.now()",
    "t = time.process_time()\nwork()\nassert time.process_time() - t < 1",
])
def test_the_scan_finds_wall_clock_timing(source):
    assert wall_clock_uses(source)


def test_the_scan_accepts_counts_and_cpu_time_said_so():
    assert wall_clock_uses("tr = flow(p, g, 1e12, max_steps=200)  # a count of steps") == []
    assert wall_clock_uses("cpu = time.process_time()  # CPU time, not wall time\n"
                           "assert time.process_time() - cpu < 20") == []

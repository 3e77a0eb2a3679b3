"""Output folders under faults: two writers on one folder at once (real processes started
together, 20 rounds: every run's files complete and listed, no index entry lost), a writer
SIGKILLed at every step of its journal (the index says which files are stale; the next run
completes the write and removes the temporaries), a lock held too long (refused in one line)."""

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from riccati_tf.errors import InvalidInputError
from riccati_tf.io import files
from riccati_tf.io.files import MARKER, OutputFolder, folder_lock, sha256

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1"}

#: a writer: waits for `go`, then writes its files into the folder as one run
WRITER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from riccati_tf.io.files import OutputFolder
    out, tag, go = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    print("ready", flush=True)
    while not go.exists():
        time.sleep(0.001)
    folder = OutputFolder.open(out)
    payload = {f"{tag}.json": f"{tag} numbers".encode() * 1000,
               f"{tag}.png": f"{tag} figure".encode() * 5000,
               "shared.json": f"written by {tag}".encode()}
    folder.check(payload)
    folder.write(payload)
""")


def _index(folder: Path) -> dict:
    return json.loads((folder / MARKER).read_text())


def _consistent(folder: Path) -> dict:
    """Assert the index lists every file of the folder with exactly its current SHA-256,
    nothing pending and no temporary left; returns the index."""
    index = _index(folder)
    assert "pending" not in index
    present = {p.name: sha256(p.read_bytes()) for p in folder.iterdir()
               if p.is_file() and p.name != MARKER}
    assert not [n for n in present if files.TEMPORARY.match(n)], present
    assert {n: [h] for n, h in present.items()} == index["files"]
    assert set(index["runs"]) == set(present)
    return index


def _start(args: list[str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, *args], env=ENV, cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


@pytest.mark.parametrize("rounds", [4, pytest.param(20, marks=pytest.mark.long)])
def test_two_writers_started_together_round_after_round(rounds, tmp_path):
    out = tmp_path / "out"
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    for round_ in range(rounds):
        go = tmp_path / f"go{round_}"
        procs = {tag: _start([str(script), str(out), tag, str(go)]) for tag in ("a", "b")}
        for p in procs.values():  # both started and waiting: then both go at once
            assert p.stdout.readline().strip() == "ready"
        go.touch()
        for tag, p in procs.items():
            _, err = p.communicate(timeout=120)
            assert p.returncode == 0, (round_, tag, err)
        index = _consistent(out)
        for tag in ("a", "b"):  # each run's files complete, written by one run
            assert (out / f"{tag}.json").read_bytes() == f"{tag} numbers".encode() * 1000
            assert (out / f"{tag}.png").read_bytes() == f"{tag} figure".encode() * 5000
            assert index["runs"][f"{tag}.json"] == index["runs"][f"{tag}.png"]
        # the shared name holds the run that wrote last, and the index says which
        last = (out / "shared.json").read_text().removeprefix("written by ")
        assert index["runs"]["shared.json"] == index["runs"][f"{last}.json"]


#: a writer killed at its k-th rename (os.replace): it says so and waits to be killed
VICTIM = textwrap.dedent("""
    import os, sys, time
    from riccati_tf.io.files import OutputFolder
    out, k = sys.argv[1], int(sys.argv[2])
    calls, replace = [0], os.replace
    def barrier(src, dst):
        calls[0] += 1
        if calls[0] == k:
            print("at", os.path.basename(dst), flush=True)
            time.sleep(600)
        return replace(src, dst)
    os.replace = barrier
    OutputFolder.open(out).write({n: ("new " + n).encode() * 100
                                  for n in ("design.html", "design.json", "figure.png")})
    print("done", flush=True)
""")
NAMES = ("design.html", "design.json", "figure.png")


@pytest.mark.parametrize("k", range(1, len(NAMES) + 3))
def test_a_writer_killed_at_every_step_leaves_a_folder_that_says_so(k, tmp_path):
    # replaces: 1 the index with the run pending (the commit point), 2..4 the files,
    # 5 the index with the run done
    out = tmp_path / "out"
    old = {n: ("old " + n).encode() * 100 for n in NAMES}
    OutputFolder.open(out).write(old)
    old_run = _consistent(out)["runs"]["design.html"]
    script = tmp_path / "victim.py"
    script.write_text(VICTIM)
    p = _start([str(script), str(out), str(k)])
    line = p.stdout.readline().strip()
    assert line.startswith("at "), (line, p.stderr.read() if p.poll() is not None else "")
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=60)
    # the folder as the kill left it: every file is the old run's or the new run's, and when
    # they are mixed the index says which are still the old run's
    now = {n: (out / n).read_bytes() for n in NAMES}
    new = {n: ("new " + n).encode() * 100 for n in NAMES}
    assert all(now[n] in (old[n], new[n]) for n in NAMES)
    folder = OutputFolder(out, {}, "--out")
    stale = folder.stale()
    if k == 1:  # before the commit point: the old run's files, nothing pending
        assert now == old and stale == [] and "pending" not in _index(out)
    else:
        assert "pending" in _index(out) or k == len(NAMES) + 2
        assert stale == sorted(n for n in NAMES if now[n] == old[n])
        assert set(stale) != set(NAMES) or k == 2
    assert list(out.glob(".*.tmp-*"))  # the killed writer's temporaries are there
    # the next run into the folder (any command: here a reader opening it) completes the
    # write and removes the temporaries; the folder is then one run's, fully listed
    OutputFolder.open(out)
    index = _consistent(out)
    want, run = (old, {old_run}) if k == 1 else (new, {index["runs"][NAMES[0]]})
    assert {n: (out / n).read_bytes() for n in NAMES} == want
    assert {index["runs"][n] for n in NAMES} == run and (k == 1 or run != {old_run})


def test_a_writer_waits_for_the_lock_then_is_refused(tmp_path, monkeypatch):
    out = tmp_path / "out"
    folder = OutputFolder.open(out)
    monkeypatch.setattr(files, "LOCK_WAIT", 0.2)
    with folder_lock(out):  # another command writing (flock: per open file, even here)
        with pytest.raises(InvalidInputError, match=r"another riccati-tf command .* holds the "
                                                    r"folder's lock"):
            folder.write({"a.json": b"{}"})
        with pytest.raises(InvalidInputError, match="--out"):
            OutputFolder.open(out)
    assert folder.write({"a.json": b"{}"})["a.json"].read_bytes() == b"{}"


def test_a_temporary_of_a_running_writer_is_kept(tmp_path):
    out = tmp_path / "out"
    OutputFolder.open(out)
    mine = out / f".a.json.tmp-{os.getpid()}-00ff"
    gone = out / ".a.json.tmp-999999999-00ff"  # no process has this id
    mine.write_bytes(b"half")
    gone.write_bytes(b"half")
    OutputFolder.open(out)
    assert mine.exists() and not gone.exists()


@pytest.mark.parametrize("pending", [
    {"run": "r", "files": {"../escape": [".escape.tmp-1-00", "0" * 64]}},
    {"run": "r", "files": {"a.json": ["../../.a.json.tmp-1-00", "0" * 64]}},
    {"run": "r", "files": {"a.json": [".b.json.tmp-1-00", "0" * 64]}},
    {"run": "r", "files": {MARKER: [f".{MARKER}.tmp-1-00", "0" * 64]}},
    {"files": {}}])
def test_a_forged_pending_entry_is_refused(pending, tmp_path):
    out = tmp_path / "out"
    OutputFolder.open(out).write({"a.json": b"{}"})
    index = {**_index(out), "pending": pending}
    (out / MARKER).write_text(json.dumps(index))
    with pytest.raises(InvalidInputError, match="not a marker that riccati-tf wrote"):
        OutputFolder.open(out)
    assert (out / "a.json").read_bytes() == b"{}"


def test_an_index_of_the_previous_format_is_read(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "a.json").write_bytes(b"{}")
    (out / MARKER).write_text(json.dumps({"writer": "riccati-tf",
                                          "files": {"a.json": [sha256(b"{}")]}}))
    OutputFolder.open(out).write({"a.json": b"[1]", "b.json": b"[2]"})
    assert _consistent(out)["files"]["a.json"] == [sha256(b"[1]")]


@pytest.mark.long  # 5 rounds of two real commands: make test-long
def test_two_commands_on_one_out_folder(tmp_path):
    # design and prescribed, two real commands, started together on one --out (5 rounds: each
    # takes seconds; the 20 rounds of the issue are run by the writers above)
    spec = tmp_path / "design.json"
    spec.write_text(json.dumps({"target": {"mean": [1.0, 0.0], "cov": [[1.0, 0.0],
                                                                       [0.0, 1.0]]},
                                "v": -1, "starts": 1, "seed": 0}))
    out = tmp_path / "out"
    commands = {"design": ["design", str(spec), "--out", str(out)],
                "prescribed": ["prescribed", "--n-tokens", "20", "--out", str(out)]}
    written = {"design": ("design.html", "design.json"),
               "prescribed": ("prescribed.png", "prescribed.json")}
    for round_ in range(5):
        procs = {name: _start(["-m", "riccati_tf.app.cli", *argv])
                 for name, argv in commands.items()}
        for name, p in procs.items():
            _, err = p.communicate(timeout=300)
            assert p.returncode == 0 or (p.returncode == 2 and "lock" in err), (round_, name,
                                                                                err)
        index = _consistent(out)
        for name, p in procs.items():
            if p.returncode == 0:
                assert len({index["runs"][f] for f in written[name]}) == 1

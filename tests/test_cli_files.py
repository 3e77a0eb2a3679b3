"""Every file the command line reads, given every wrong kind of file: exit 2 with one line naming
the option (or the path of a positional argument) and, for the model inputs, the kind expected.
The input files are checked before a model is loaded (`--model` names a missing folder here, so
a file that passed would be refused for the model instead, and the test would see it)."""

import io
import json
import zipfile

import numpy as np
import pytest

from riccati_tf.app.cli import main
from riccati_tf.empirical.encoders.inputfiles import (
    check_input_files,
    read_hidden,
    read_passages,
    read_token_ids,
)
from riccati_tf.errors import InvalidInputError


def _npy(array) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def _npz(**arrays) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def _objects() -> np.ndarray:
    ragged = np.empty(2, dtype=object)
    ragged[0], ragged[1] = np.array([2, 7, 3]), np.array([2, 3])
    return ragged


#: the wrong kinds of file: name → (file name, bytes; None: a folder; missing: not created)
KINDS = {
    "text": ("words.txt", b"one passage\nanother\n"),
    "empty": ("empty.npy", b""),
    "truncated .npy": ("cut.npy", _npy(np.arange(12).reshape(3, 4))[:-9]),
    "truncated header": ("head.npy", _npy(np.arange(12))[:20]),
    ".npy of ids": ("ids.npy", _npy(np.arange(12).reshape(3, 4))),
    ".npz of states": ("states.npz", _npz(a=np.ones((3, 4)))),
    "truncated .npz": ("cut.npz", _npz(a=np.ones((30, 4)))[:-40]),
    "object array": ("ragged.npy", _npy(_objects())),
    "object .npz": ("ragged.npz", _npz(ids=_objects())),
    "float .npy": ("float.npy", _npy(np.ones((2, 3)))),
    "string .npz": ("strings.npz", _npz(a=np.array(["a", "b"]))),
    "zip of text": ("notes.npz", None),  # filled below: a zip whose member is not a .npy
    "pickle": ("data.pkl", b"\x80\x04\x95\x05\x00\x00\x00\x00\x00\x00\x00K\x01."),
    "binary": ("blob.bin", b"\x00\x01\xff\xfe" * 8),
    "folder": ("folder", None),
    "missing": ("missing.npy", None),
}
#: the kind that is right for each input option (every other one is wrong)
RIGHT = {"--text": "text", "--tokens": ".npy of ids", "--hidden": ".npz of states"}


def _zip_of_text() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("notes.txt", "not an array")
    return buffer.getvalue()


def make(kind: str, tmp_path) -> str:
    """The file of `kind` in tmp_path (its path as a string)."""
    name, data = KINDS[kind]
    path = tmp_path / name
    if kind == "folder":
        path.mkdir()
    elif kind == "zip of text":
        path.write_bytes(_zip_of_text())
    elif kind != "missing":
        path.write_bytes(data)
    return str(path)


def refused(argv, capsys, *needles):
    """Run argv; assert exit 2 with one stderr line naming every needle; return the line."""
    capsys.readouterr()
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert code == 2 and len(err) == 1, (code, err)
    assert "unexpected error" not in err[0] and "Traceback" not in err[0], err[0]
    for needle in needles:
        assert needle in err[0], (needle, err[0])
    return err[0]


INPUTS = [(command, option, kind) for command in ("probe", "atlas", "compare")
          for option in RIGHT for kind in KINDS if kind != RIGHT[option]]


@pytest.mark.parametrize("command, option, kind", INPUTS)
def test_input_file_of_the_wrong_kind_names_the_option_and_the_kind(command, option, kind,
                                                                     tmp_path, capsys):
    path = make(kind, tmp_path)
    line = refused([command, "--model", str(tmp_path / "no-model"), option, path,
                    "--out", str(tmp_path / "out")], capsys, option, "expected")
    assert "no-model" not in line  # refused before the model is looked at


MODEL_KINDS = ("text", "empty", ".npy of ids", ".npz of states", "folder", "missing")


@pytest.mark.parametrize("command", ["probe", "atlas", "compare", "report"])
@pytest.mark.parametrize("kind", MODEL_KINDS)
def test_model_folder_of_the_wrong_kind_names_the_option(command, kind, tmp_path, capsys):
    # report checks --model before its sections run (minutes), the others before loading
    refused([command, "--model", make(kind, tmp_path), "--out", str(tmp_path / "out")],
            capsys, "--model", "config.json")


SPEC_COMMANDS = ("flow", "layers", "derive", "equilibria", "certify", "steer", "design",
                 "particles", "sweep")


@pytest.mark.parametrize("command", SPEC_COMMANDS)
@pytest.mark.parametrize("kind", [k for k in KINDS if k != "text"])
def test_spec_file_of_the_wrong_kind_names_the_path(command, kind, tmp_path, capsys):
    path = make(kind, tmp_path)
    refused([command, path, *(["--out", str(tmp_path / "o")] if command == "sweep" else [])],
            capsys, path)


@pytest.mark.parametrize("kind", list(KINDS))
def test_sweep_results_of_the_wrong_kind_name_the_path(kind, tmp_path, capsys):
    path = make(kind, tmp_path)
    refused(["sweep-plot", path, "--out", str(tmp_path / "x.png")], capsys, path)


# ---------------------------------------------------------------------------------------------
# the readers themselves: what they accept and what they say


@pytest.mark.parametrize("dtype", [np.uint64, np.uint32, np.int64])
def test_a_token_id_beyond_int64_is_reported_as_read(dtype, tmp_path, capsys):
    big = np.iinfo(dtype).max
    path = tmp_path / "ids.npy"
    np.save(path, np.array([[5, 6, big], [1, 2, 3]], dtype=dtype))
    if dtype is np.uint64:  # 2⁶⁴ − 1: no int64 holds it (read as −1 before)
        line = refused(["atlas", "--model", str(tmp_path / "m"), "--tokens", str(path),
                        "--out", str(tmp_path / "o")], capsys, "--tokens")
        said = line.split("(--tokens):")[-1]  # after the path, which may hold "-1"
        assert f"token id {big} (sequence 1, position 3)" in said and "-1" not in said
    else:  # within int64: the value itself is kept, the vocabulary judges it later
        assert read_token_ids(path)[0].tolist() == [5, 6, int(big)]


def test_negative_ids_are_named_with_their_place(tmp_path):
    np.savez(tmp_path / "ids.npz", ids=np.array([3, 4, 5, -7, 1], dtype=np.int8),
             lengths=np.array([3, 2]))
    with pytest.raises(InvalidInputError, match=r"token id -7 \(sequence 2, position 1\) is "
                                                r"negative"):
        read_token_ids(tmp_path / "ids.npz")


def test_ragged_token_sequences_as_one_array_and_lengths(tmp_path):
    seqs = [np.array([2, 7, 3]), np.array([2, 3]), np.array([9])]
    np.savez(tmp_path / "ids.npz", ids=np.concatenate(seqs), lengths=[3, 2, 1])
    assert [s.tolist() for s in read_token_ids(tmp_path / "ids.npz")] == [s.tolist()
                                                                           for s in seqs]
    # several arrays: each a sequence (1-D) or a batch (2-D), in the file's order
    np.savez(tmp_path / "many.npz", a=np.array([1, 2]), b=np.array([[3, 4], [5, 6]]))
    assert [s.tolist() for s in read_token_ids(tmp_path / "many.npz")] == [[1, 2], [3, 4],
                                                                            [5, 6]]
    for lengths, why in (([3, 2], "adding up to the 6 rows"), ([7, -1], "adding up"),
                         ([[3, 3]], "'lengths'")):
        np.savez(tmp_path / "bad.npz", ids=np.concatenate(seqs), lengths=lengths)
        with pytest.raises(InvalidInputError, match=why):
            read_token_ids(tmp_path / "bad.npz")


def test_hidden_states_are_a_npz_of_real_arrays(tmp_path):
    np.savez(tmp_path / "h.npz", states=np.arange(20.0).reshape(5, 4), lengths=[2, 3])
    assert [s.shape for s in read_hidden(tmp_path / "h.npz")] == [(2, 4), (3, 4)]
    for arrays, why in (({"a": np.ones((2, 3, 4, 5))}, r"shape \(2, 3, 4, 5\)"),
                        ({"a": np.ones((3, 2)) * 1j}, "complex128"),
                        ({"a": np.ones((0, 4))}, "is empty"),
                        ({"lengths": np.array([1])}, "no array but 'lengths'"),
                        ({"a": np.ones((4, 2)), "b": np.ones((4, 2)), "lengths": [2, 2]},
                         "beside exactly one")):
        np.savez(tmp_path / "bad.npz", **arrays)
        with pytest.raises(InvalidInputError, match=why):
            check_input_files(hidden=tmp_path / "bad.npz")


def test_a_header_promising_more_than_the_file_holds_is_refused_before_allocating(tmp_path):
    # a well-formed header of a 10¹² × 8-byte array over 16 bytes: refused from the sizes
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, {"descr": "<f8", "fortran_order": False,
                                                  "shape": (10**12,)})
    (tmp_path / "huge.npy").write_bytes(buffer.getvalue() + b"\x00" * 16)
    with pytest.raises(InvalidInputError, match=r"truncated: its header promises "
                                                r"8000000000000 bytes .* it holds 16"):
        read_token_ids(tmp_path / "huge.npy")


def test_text_that_is_not_text(tmp_path):
    for data, why in ((b"\xff\xfe bad", r"is not UTF-8 \(byte 1"), (b"a\x00b", "NUL bytes"),
                      (b"\n  \n", "holds no passage"), (b"", "is empty")):
        (tmp_path / "t.txt").write_bytes(data)
        with pytest.raises(InvalidInputError, match=why):
            read_passages(tmp_path / "t.txt")


def test_the_spec_of_an_error_is_json_when_asked(tmp_path, capsys):
    # --json turns the one line into a JSON object; it still names the option
    path = make("object array", tmp_path)
    line = refused(["atlas", "--model", str(tmp_path / "m"), "--tokens", path, "--json",
                    "--out", str(tmp_path / "o")], capsys, "--tokens")
    assert json.loads(line)["kind"] == "error"

"""Every "SPEC §n" (or §n.m) cited in the package, its docs, notebooks, proofs, benchmarks and
tests is a section of riccati_tf/SPEC.md, and every "§n" that SPEC.md writes about itself too.

A citation is "SPEC" (or "SPEC.md", or a link to it) followed by a section sign and a number,
and the list or range that goes on from there: "SPEC §2, §5 and §7", "SPEC §1–§7" (each
section of a range exists)."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "riccati_tf" / "SPEC.md"
#: where citations are looked for, and the files read there
WHERE = {"riccati_tf": "*.py", "docs": "*", "notebooks": "*.ipynb", "proofs": "*.py",
         "benchmarks": "*.py", "tests": "*.py", "examples": "*"}
SKIP_PARTS = {"_build", "generated", "__pycache__", ".ipynb_checkpoints"}
SUFFIXES = {".py", ".md", ".rst", ".ipynb", ".txt", ".yaml", ".yml", ".json", ".html"}
NUMBER = r"§\s?(\d+(?:\.\d+)*)"
#: a citation: SPEC (SPEC.md, {doc}`SPEC`, [SPEC](…)) then §n, and the §m of a list or range
CITATION = re.compile(r"SPEC(?:\.md)?[`'\")\]]*(?:\([^)\s]*\))?,?\s*" + NUMBER
                      + r"((?:\s*(?:,|and|or|to|–|—|-)\s*" + NUMBER + r")*)")
LINKED = re.compile(r"(,|and|or|to|–|—|-)\s*" + NUMBER)
HEADING = re.compile(r"(?m)^#{2,}\s+(\d+(?:\.\d+)*)\.?\s")


def sections(text: str) -> set[str]:
    """The section numbers of SPEC.md's headings ("## 5. Title" → "5", "### 5.1 …" → "5.1")."""
    return set(HEADING.findall(text))


def _numbers(first: str, rest: str) -> list[str]:
    cited, previous = [first], first
    for sep, number in LINKED.findall(rest):
        if sep in "–—-" and "." not in previous + number:    # a range: every section between
            cited += [str(n) for n in range(int(previous) + 1, int(number))]
        cited.append(number)
        previous = number
    return cited


def citations(text: str) -> list[str]:
    """The section numbers `text` cites as SPEC's, in order (ranges expanded)."""
    text = text.replace("\\n", "\n")     # notebooks: JSON strings
    return [n for m in CITATION.finditer(text) for n in _numbers(m.group(1), m.group(2))]


def _files():
    for folder, pattern in WHERE.items():
        for path in sorted((ROOT / folder).rglob(pattern)):
            if (path.is_file() and path.suffix in SUFFIXES
                    and path.resolve() not in (SPEC.resolve(), Path(__file__).resolve())
                    and not SKIP_PARTS & set(path.relative_to(ROOT).parts)):
                yield path
    yield ROOT / "README.md"


def test_every_cited_spec_section_exists():
    have = sections(SPEC.read_text(encoding="utf-8"))
    missing, seen = [], 0
    for path in _files():
        cited = citations(path.read_text(encoding="utf-8", errors="replace"))
        seen += len(cited)
        missing += [f"{path.relative_to(ROOT)}: SPEC §{n}" for n in cited if n not in have]
    assert seen > 300        # the docstrings cite SPEC throughout
    assert missing == [], "cited, not in SPEC.md:\n" + "\n".join(sorted(set(missing)))


def test_spec_refers_to_its_own_sections_only():
    text = SPEC.read_text(encoding="utf-8")
    have = sections(text)
    assert {str(n) for n in range(1, 13)} <= have    # the sections the code relies on, in order
    inner = [n for n in re.findall(NUMBER, text) if n not in have]
    assert inner == []


@pytest.mark.parametrize(("text", "cited"), [
    ("the closed form (SPEC §5)", ["5"]),
    ("SPEC §2, §5 and §7", ["2", "5", "7"]),
    ("SPEC §1–§4", ["1", "2", "3", "4"]),
    ("see {doc}`SPEC`, §2 and §5", ["2", "5"]),
    ("[SPEC](SPEC.md) §3.1", ["3.1"]),
    ("SPEC\n§8, last bullet; Walter (1998), §9", ["8"]),
    ("Golub and Van Loan, §5.4.2", []),
])
def test_citations_are_read(text, cited):
    assert citations(text) == cited


def test_a_missing_section_is_found():
    have = sections("## 1. Model\n\ntext\n\n## 2. Moments\n")
    assert have == {"1", "2"}
    assert [n for n in citations("as SPEC §2 and §3 say") if n not in have] == ["3"]

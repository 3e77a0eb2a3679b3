"""`python -m tests.hostile --summary`: run the hostile corpus and print counts per area and
outcome (exit 1 when any case ends outside the outcomes it allows, or in silent_wrong, leaked or
hang). `--area A` runs one area, `-v` prints every case, `--failures` only the bad ones."""

from __future__ import annotations

import argparse
import sys
from collections import Counter

from threadpoolctl import threadpool_limits

from . import OUTCOMES, load_all, run_all

BAD = ("silent_wrong", "leaked", "hang")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.hostile", description=__doc__)
    parser.add_argument("--summary", action="store_true", help="print the counts table")
    parser.add_argument("--area", action="append", help="run only this area (repeatable)")
    parser.add_argument("-k", dest="pattern", help="run only cases whose name contains this")
    parser.add_argument("-v", "--verbose", action="store_true", help="one line per case")
    parser.add_argument("--failures", action="store_true", help="print the cases that failed")
    args = parser.parse_args(argv)
    cases = {k: c for k, c in load_all().items()
             if (not args.area or c.area in args.area) and (not args.pattern or args.pattern in k)}

    def progress(row):
        c, got, detail, seconds = row
        bad = got not in c.allowed or got in BAD
        if args.verbose or (args.failures and bad):
            mark = "FAIL" if bad else "ok  "
            print(f"{mark} {c.name:<60} {got:<13} {seconds:6.2f}s CPU {detail[:120]}", flush=True)

    with threadpool_limits(limits=1):
        rows = run_all(cases, progress)
    failed = [r for r in rows if r[1] not in r[0].allowed or r[1] in BAD]
    if args.summary or not (args.verbose or args.failures):
        counts = Counter((c.area, got) for c, got, _, _ in rows)
        areas = sorted({c.area for c, *_ in rows})
        head = f"{'area':<10}{'tried':>7}" + "".join(f"{o:>14}" for o in OUTCOMES)
        print(head)
        print("-" * len(head))
        for area in [*areas, "total"]:
            pick = [r for r in rows if area == "total" or r[0].area == area]
            line = f"{area:<10}{len(pick):>7}"
            for o in OUTCOMES:
                n = sum(1 for r in pick if r[1] == o) if area == "total" else counts[(area, o)]
                line += f"{n:>14}"
            print(line)
        print(f"\n{len(failed)} case(s) outside their allowed outcomes; "
              f"{sum(r[3] for r in rows):.1f} s of CPU time in all")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""Command line: `riccati-tf <subcommand>`."""

from __future__ import annotations

import argparse
import sys


def _report(args) -> int:
    from .report import write_report

    page = write_report(args.out, quick=args.quick)
    print(f"report written to {page.parent.resolve()}/ (open {page.name})")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="riccati-tf",
        description="Gaussian (mean-field) dynamics of Transformers: moment equations, Riccati "
                    "flows, certificates and reachability.")
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("report", help="run the built-in analyses and write an HTML report")
    rep.add_argument("--out", default="report", help="output folder (default: report)")
    rep.add_argument("--quick", action="store_true", help="smaller, faster run")
    rep.set_defaults(func=_report)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())

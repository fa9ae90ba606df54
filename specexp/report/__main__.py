"""`python -m specexp.report DIR [DIR ...] [-o measurements.md] [--html report.html]`

Renders any set of result folders (several sweeps, several machines) into one report. Reads
records only: no server, no GPU, nothing under specexp.runtimes.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from specexp.check import load_figures
from specexp.record import RecordError, find_records
from specexp.report.write import write_report
from specexp.spec.errors import SpecError


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m specexp.report", description=__doc__.split("\n\n")[1]
    )
    parser.add_argument(
        "dirs", nargs="+", type=Path, help="result folders (searched for result.json)"
    )
    parser.add_argument(
        "-o", "--output", type=Path, default=Path("measurements.md"), help="Markdown report"
    )
    parser.add_argument("--html", type=Path, default=None, help="also write this HTML report")
    parser.add_argument(
        "--title", default=None, help="default: the experiment name, if all runs share one"
    )
    parser.add_argument(
        "--cite",
        type=Path,
        action="append",
        default=[],
        metavar="FIGURES.yaml",
        help="published figures to set beside the runs (docs/vocabulary.md section 4); repeatable",
    )
    args = parser.parse_args(argv)
    missing = [d for d in args.dirs if not d.exists()]
    if missing:
        print(f"specexp.report: {missing[0]}: no such folder", file=sys.stderr)
        return 2
    try:
        found = find_records(args.dirs)
    except RecordError as err:
        print(f"specexp.report: {err.line()}", file=sys.stderr)
        return 2
    if not found:
        print(
            f"specexp.report: no result.json under {', '.join(map(str, args.dirs))}",
            file=sys.stderr,
        )
        return 2
    try:
        cited = [load_figures(path) for path in args.cite]
    except SpecError as err:
        print(f"specexp.report: {err.line()}", file=sys.stderr)
        return 2
    for path in write_report(found, args.output, args.html, title=args.title, cited=cited):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

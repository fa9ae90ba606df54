"""`python -m specexp.check FIGURES.yaml [...] [--against RESULTS_DIR ...] [--format md|json]
[--config-dir DIR]`

Checks published figures: for each declared comparison, the verdict (fair, unfair,
unverifiable), every confounder with the value on each side, every unknown condition and
any metric-definition mismatch; same-source conflicts; figures beyond the hardware's
physical limit; and with --against, the runs that match each figure, the closest ones and
the reproduction ratio.

Exit status: 0 every comparison fair and no error finding; 1 otherwise; 2 invalid input.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from specexp.check.api import check
from specexp.check.figures import load_figure_files
from specexp.check.output import render_json, render_md
from specexp.check.runs import runs_of
from specexp.record import RecordError, find_records
from specexp.spec import paths
from specexp.spec.errors import SpecError

PROG = "python -m specexp.check"


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise _UsageError(message)


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description=(__doc__ or "").split("\n\n")[1])
    p.add_argument(
        "files",
        nargs="+",
        type=Path,
        metavar="FIGURES.yaml",
        help="cited figures (docs/vocabulary.md §4)",
    )
    p.add_argument(
        "--against",
        nargs="+",
        action="extend",
        type=Path,
        default=None,
        metavar="RESULTS_DIR",
        help="result folders (searched for result.json) to match each figure against",
    )
    p.add_argument(
        "--format", choices=("md", "json"), default="md", help="output format (default: md)"
    )
    p.add_argument(
        "--config-dir",
        action="append",
        type=Path,
        default=[],
        metavar="DIR",
        help="a folder laid out like conf/ whose options a figure may name too "
        "(e.g. DIR/quantization/awq_int4.yaml for 4-bit AWQ weights)",
    )
    return p


def one_line(text: str) -> str:
    """`text` with every unprintable character escaped: an error is always one line."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the check; return the exit status (never raises on bad input)."""
    try:
        args = parser().parse_args(argv)
    except _UsageError as err:
        print(f"{PROG}: {one_line(str(err))}", file=sys.stderr)
        return 2
    try:
        for folder in args.config_dir:
            if not folder.is_dir():
                raise SpecError(str(folder), "--config-dir", "no such folder")
        paths.set_user_dirs(args.config_dir)
        figures = load_figure_files(args.files)
        runs = None
        if args.against is not None:
            for folder in args.against:
                if not folder.exists():
                    raise SpecError(str(folder), "--against", "no such folder")
            runs = runs_of(find_records(args.against))
        report = check(figures, runs)
    except (SpecError, RecordError) as err:
        for line in err.lines() if isinstance(err, SpecError) else [err.line()]:
            print(f"specexp.check: {one_line(line)}", file=sys.stderr)
        return 2
    sys.stdout.write(render_json(report) if args.format == "json" else render_md(report))
    return report.exit_status


if __name__ == "__main__":
    raise SystemExit(main())

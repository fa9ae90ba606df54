"""`python -m specexp [overrides]`: compose, validate, plan, run, record, report.

    python -m specexp                              # one job with the defaults, on the simulator
    python -m specexp -m drafter=mtp,dspark k=3,8,15
    python -m specexp +experiment=spark_fp8_mtp_dspark -m
    python -m specexp --cfg job                    # print the composed config

`--help` answers before anything heavy is imported; the rest is specexp.run.cli.
"""

from __future__ import annotations

import sys

HELP_FLAGS = ("--help", "-h")
SWEEP_FLAGS = ("-m", "--multirun")


def main() -> None:
    # `+experiment=NAME -m hydra.sweep.dir=DIR` reads as the help writes it: Hydra's parser takes
    # -m only before the overrides, so it is moved there
    sys.argv[1:] = [a for a in sys.argv[1:] if a in SWEEP_FLAGS] + [
        a for a in sys.argv[1:] if a not in SWEEP_FLAGS
    ]
    args = sys.argv[1:]
    if any(a in HELP_FLAGS for a in args):
        from specexp.run.help import help_text
        from specexp.spec import paths

        paths.set_user_dirs(paths.user_dirs_of(args))  # --help lists a user's own options too

        print(help_text())
        return
    from specexp.run.cli import main as run

    run(args)


if __name__ == "__main__":
    main()

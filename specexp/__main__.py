"""`python -m specexp [overrides]`: compose, validate, plan, run, record, report.

    python -m specexp                              # one job with the defaults, on the simulator
    python -m specexp -m drafter=mtp,dspark k=3,8,15
    python -m specexp +experiment=spark_fp8_mtp_dspark -m
    python -m specexp --cfg job                    # print the composed config
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from specexp.run import hydra_store
from specexp.spec import paths
from specexp.run import progress
from specexp.run import sweeper as _sweeper  # noqa: F401  (registers hydra/sweeper=specexp)
from specexp.run.compose import check_overrides, spec_of, validate_single_run
from specexp.spec.errors import SpecError, exit_on_spec_error
from specexp.run.job import run_job
from specexp.run.plan import make_cell
from specexp.runtimes import pool
from specexp.run.summary import write_sweep_outputs


@hydra.main(config_path=str(paths.conf_dir()), config_name="config", version_base="1.3")
def app(cfg: DictConfig) -> None:
    hc = HydraConfig.get()
    overrides = list(hc.overrides.task)
    try:
        composed = spec_of(cfg, overrides, hc.runtime.choices)
    except SpecError as err:
        exit_on_spec_error(err)
    cell, data = make_cell(composed.spec), composed.config
    job_dir = Path(hc.runtime.output_dir)
    multirun = hc.mode == RunMode.MULTIRUN
    root = Path(hc.sweep.dir) if multirun else job_dir
    description = " ".join(o for o in overrides if not o.startswith("+experiment")) or "(defaults)"
    sweep_progress = progress.current()
    if sweep_progress is not None:
        sweep_progress.started_job(description)
    try:
        record = run_job(cell, job_dir, root, overrides, data, rerun=bool(data.get("rerun")))
        status = record.status if record else "ok"
        detail = (record.error.message if record and record.error else "") if record else \
            f"already complete in {root}"
    except OSError as err:  # the job directory is not writable, the disk is full...
        status, detail = "failed", f"could not write {job_dir}/result.json: {err}"
    finally:
        if not multirun:
            pool.release()
    if sweep_progress is not None:
        sweep_progress.finished_job(f"{cell.run_id} {description}", status + (f" ({detail})" if detail else ""))
    else:
        print(f"job {cell.run_id}: {status}{': ' + detail if detail else ''}", flush=True)
    if not multirun:
        for path in write_sweep_outputs(job_dir):
            print(f"  {path}", flush=True)
        if status in ("failed", "refused"):
            raise SystemExit(1)  # a single run that did not complete; a sweep records it and goes on


def main() -> None:
    logging.getLogger("httpx").setLevel(logging.WARNING)
    args = sys.argv[1:]
    try:
        check_overrides([a for a in args if "=" in a and not a.startswith("-")])
        hydra_store.register()
        if not any(a.startswith("-") for a in args) and not any("experiment=" in a for a in args):
            validate_single_run(args)  # a plain run: nothing is created unless its config is valid
        app()
    except SpecError as err:
        exit_on_spec_error(err)


if __name__ == "__main__":
    main()

"""The command line of `python -m specexp` past `--help`: compose, validate, plan, run, record, report.

A plain run (no Hydra flag) is composed once, validated, and run here; a sweep, and every Hydra
flag, goes through Hydra (`-m`: specexp's sweeper, specexp.run.sweeper).

The overrides are checked first, with nothing heavier imported than the specs: a mistake is
answered before Hydra, the engines' clients, the statistics and the report are loaded.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specexp.run.overrides import check_overrides, check_single
from specexp.spec import paths
from specexp.spec.errors import SpecError, exit_on_spec_error

if TYPE_CHECKING:
    from omegaconf import DictConfig

    from specexp.run.report_ahead import ReportAhead


def task(cfg: DictConfig) -> None:
    """The Hydra task function: a job of a launcher that runs elsewhere (SLURM, Ray), or a Hydra flag."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    from specexp.run.compose import spec_of
    from specexp.run.launch import run_composed

    hc = HydraConfig.get()
    overrides = list(hc.overrides.task)
    try:
        composed = spec_of(cfg, overrides, hc.runtime.choices)
    except SpecError as err:
        exit_on_spec_error(err)
    multirun = hc.mode == RunMode.MULTIRUN
    job_dir = Path(hc.runtime.output_dir)
    status = run_composed(
        composed, overrides, job_dir, Path(hc.sweep.dir) if multirun else job_dir, multirun
    )
    if not multirun:
        _finish_single(job_dir, status)


def app() -> Any:
    """`task` under `@hydra.main`, with specexp's conf/: Hydra reads the command line itself."""
    import hydra

    main = hydra.main(config_path=str(paths.conf_dir()), config_name="config", version_base="1.3")
    return main(task)()


def _finish_single(job_dir: Path, status: str, ahead: ReportAhead | None = None) -> None:
    from specexp.run.summary import write_sweep_outputs

    for path in write_sweep_outputs(job_dir, ahead):
        print(f"  {path}", flush=True)
    if status in ("failed", "refused"):
        raise SystemExit(1)  # a single run that did not complete; a sweep records it and goes on


def run_single(overrides: list[str]) -> None:
    """A plain run: composed once, validated before its directory exists, run here. Hydra's own
    overrides (hydra.run.dir=...) set where it runs, and are not the job's."""
    from specexp.run import report_ahead
    from specexp.run.compose import compose_run
    from specexp.run.launch import run_composed, save_job_config

    composed, job_dir = compose_run(overrides)
    task = [o for o in overrides if not o.lstrip("+~").startswith("hydra")]
    ahead = report_ahead.ready()
    save_job_config(job_dir, composed, task)
    try:
        status = run_composed(composed, task, job_dir, job_dir, multirun=False)
    except BaseException:
        ahead.close()
        raise
    _finish_single(job_dir, status, ahead)


def _refuse_missing_config_dirs(args: list[str]) -> None:
    """A config directory that is not there is a mistyped path: Hydra would search it and find
    nothing, and every option of it would be reported unknown."""
    for flag, folder in paths.user_dirs_named(args):
        found = Path(folder).expanduser()
        if not found.is_dir():
            problem = "is not a folder" if found.exists() else "does not exist"
            raise SpecError(folder, flag, f"the config directory {problem}")


def _multirun(args: list[str]) -> bool:
    """Whether the command line sweeps: -m, hydra.mode=MULTIRUN, or an experiment (which sets
    its own mode)."""
    return any(
        a in ("-m", "--multirun") or a.lstrip("+").startswith("hydra.mode=MULTIRUN") for a in args
    ) or any("experiment=" in a for a in args)


def main(args: list[str]) -> None:
    logging.getLogger("httpx").setLevel(logging.WARNING)
    try:
        _refuse_missing_config_dirs(args)
        # the user's options: listed, validated and suggested beside conf/'s
        paths.set_user_dirs(paths.user_dirs_of(args))
        overrides = [a for a in args if "=" in a and not a.startswith("-")]
        check_overrides(overrides)
        if not _multirun(args):
            check_single(overrides, args)
        from specexp.run import hydra_store, interrupt, report_ahead

        if all(a in ("-m", "--multirun") for a in args if a.startswith("-")):
            report_ahead.start_early()  # a run or a sweep here: it will want its report
        hydra_store.register(args)
        with interrupt.handled():
            if not any(
                a.startswith("-") or "experiment=" in a for a in args
            ):  # an experiment may be a sweep
                run_single(args)
                return
            app()
    except SpecError as err:
        exit_on_spec_error(err)

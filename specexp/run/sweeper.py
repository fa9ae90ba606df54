"""specexp's Hydra sweeper: validate every cell, print the plan, then launch it in order.

Hydra's basic sweeper launches jobs in command-line order and finds a bad value only when
that job starts. This one composes and validates all cells first (so invalid input stops
before anything runs), drops meaningless and duplicate cells with a reason, orders cells so
each server configuration starts once, names each job directory after its overrides and
run id, and writes the sweep's results.jsonl and measurements.md at the end.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.plugins.launcher import Launcher
from hydra.plugins.sweeper import Sweeper as HydraSweeper
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf, open_dict

from specexp.measure import gpu_identity
from specexp.record import completed_runs, write_record
from specexp.run import progress, report_ahead
from specexp.run.compose import SweepComposer
from specexp.run.job import skipped_result
from specexp.run.local import run_local
from specexp.run.plan import Cell, Plan, make_cell, make_plan, warnings_for
from specexp.run.summary import answer_lines, write_sweep_outputs
from specexp.runtimes.http import pool
from specexp.spec.errors import SpecError, exit_on_spec_error

log = logging.getLogger(__name__)


def job_dir_name(overrides: list[str], run_id: str) -> str:
    """A readable, unique directory name: the job's own overrides, then its run id."""
    parts = [o.lstrip("+~") for o in overrides if not o.lstrip("+~").startswith("hydra")]
    readable = re.sub(r"[^A-Za-z0-9._=,+-]", "_", ",".join(parts)) or "defaults"
    return f"{readable[:160]}__{run_id}"


class Sweeper(HydraSweeper):
    """Hydra requires plugins to live in `hydra_plugins`: see hydra_plugins/specexp_sweeper."""

    def __init__(
        self,
        max_batch_size: int | None = None,
        params: dict[str, str] | None = None,
        grid: list[dict[str, str]] | None = None,
    ) -> None:
        super().__init__()
        self.params = params or {}
        self.grid = [dict(entry) for entry in grid or []]
        self.hydra_context: HydraContext | None = None
        self.config: DictConfig | None = None
        self.launcher: Launcher | None = None
        self.composer: SweepComposer | None = None

    def setup(
        self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig
    ) -> None:
        from hydra.core.plugins import Plugins

        self.hydra_context = hydra_context
        self.config = config
        self.launcher = Plugins.instance().instantiate_launcher(
            hydra_context=hydra_context, task_function=task_function, config=config
        )
        for_a_running_ray_cluster(self.launcher)
        self.composer = SweepComposer(hydra_context.config_loader, config)

    def sweep(self, arguments: list[str]) -> Any:
        assert (
            self.config is not None and self.launcher is not None and self.hydra_context is not None
        )
        jobs = expand(self.hydra_context, self.params, self.grid, arguments)
        gpu_identity.servers_here(_runs_here(self.launcher))  # else each job checks on its node
        ahead = report_ahead.ready()  # made ready while the cells are composed and run
        try:
            cells = [self._cell(job) for job in jobs]
            added = self._baselines(jobs, cells)
        except SpecError as err:
            ahead.close()
            exit_on_spec_error(err)
        sweep_dir = Path(self.config.hydra.sweep.dir)
        plan = make_plan([cell for cell, _ in cells])
        done = {} if any(rerun for _, rerun in cells) else completed_runs(sweep_dir)
        try:
            sweep_dir.mkdir(parents=True, exist_ok=True)
            OmegaConf.save(self.config, sweep_dir / "multirun.yaml")
            print(describe_plan(jobs, plan, done, added), flush=True)
            record_skipped(sweep_dir, jobs, plan)
        except OSError as err:
            ahead.close()
            exit_on_spec_error(
                SpecError(str(sweep_dir), "hydra.sweep.dir", f"cannot write: {err.strerror or err}")
            )
        todo = [(jobs[i], cell) for i, cell in plan.run if cell.run_id not in done]
        returns = [self._launch(todo, sweep_dir, ahead)]
        exit_unless_any_finished(sweep_dir, [cell for _, cell in todo])
        return returns

    def _launch(
        self, todo: list[tuple[list[str], Cell]], sweep_dir: Path, ahead: report_ahead.ReportAhead
    ) -> Any:
        """Run the jobs; whatever happens, stop servers and write the sweep's report.

        Jobs of this machine run here, with the specs composed for the plan; Hydra's launcher
        runs them only where they go elsewhere (a SLURM or Ray cluster), and composes them there."""
        assert self.launcher is not None and self.composer is not None
        progress.start(len(todo))
        try:
            if _runs_here(self.launcher):
                jobs = [
                    (overrides, sweep_dir / job_dir_name(overrides, cell.run_id))
                    for overrides, cell in todo
                ]
                simulated = all(cell.spec.runtime.simulated for _, cell in todo)
                returns: Any = run_local(jobs, sweep_dir, self.composer.compose, simulated)
            else:
                batch = [
                    [*overrides, f"hydra.sweep.subdir='{job_dir_name(overrides, cell.run_id)}'"]
                    for overrides, cell in todo
                ]
                returns = _launch_elsewhere(self.launcher, batch, [cell for _, cell in todo])
                for r in returns:
                    _ = r.return_value  # re-raises what a job raised (Ctrl-C ends the sweep)
        finally:
            try:
                progress.stop()
            except Exception:  # a display that fails must not cost the sweep its outputs
                log.exception("the progress display failed")
            pool.release()
            written = write_sweep_outputs(sweep_dir, ahead)
            print(f"sweep: {sweep_dir}\n" + "\n".join(f"  {p}" for p in written), flush=True)
            for line in answer_lines(sweep_dir):
                print(line, flush=True)
        return returns

    def _baselines(self, jobs: list[list[str]], cells: list[tuple[Cell, bool]]) -> set[int]:
        """A drafter=none cell for every drafter cell whose baseline the sweep lacks, so that every
        speedup has its denominator (`baseline=false` turns this off). Returns the added jobs' indices."""
        have = {cell.run_id for cell, _ in cells}
        added: set[int] = set()
        for job, (cell, _) in list(zip(jobs, cells)):
            if cell.spec.drafter.kind == "none" or not cell.spec.add_baseline:
                continue
            overrides = [
                o
                for o in job
                if o.lstrip("+~").split("=", 1)[0] not in ("drafter", "k", "draft_model")
            ]
            overrides.append("drafter=none")
            base = self._cell(overrides)
            if base[0].run_id not in have:
                have.add(base[0].run_id)
                added.add(len(jobs))
                jobs.append(overrides)
                cells.append(base)
        return added

    def _cell(self, overrides: list[str]) -> tuple[Cell, bool]:
        """The job's cell, and whether it asks for a re-run of complete jobs."""
        assert self.composer is not None
        composed = self.composer.compose(overrides)
        return make_cell(composed.spec), bool(composed.config.get("rerun"))


def exit_unless_any_finished(sweep_dir: Path, ran: list[Cell]) -> None:
    """Exit 1 when a sweep ran jobs and none of them finished: a CI step that runs a sweep fails
    when every job of it failed. (Each job's record says why; the report is written.)"""
    if not ran:
        return
    finished = completed_runs(sweep_dir)
    if not any(cell.run_id in finished for cell in ran):
        print(f"sweep: none of its {len(ran)} job(s) finished: see the records", flush=True)
        raise SystemExit(1)


def job_resources(cell: Cell) -> dict[str, float]:
    """What one job asks a cluster scheduler for: a GPU job its `hardware.gpu_count` GPUs (its
    server runs on them), a simulated or CPU job one CPU and no GPU."""
    gpus = 0 if cell.spec.runtime.simulated else max(cell.spec.hardware.gpu_count, 0)
    return {"num_cpus": 1, "num_gpus": gpus}


def _launch_elsewhere(launcher: Launcher, batch: list[list[str]], cells: list[Cell]) -> list[Any]:
    """Jobs handed to a launcher that runs them elsewhere, in plan order. Ray's launcher takes one
    `remote` resource request for every job it launches, so jobs go to it in runs of equal needs,
    each run asking for what its jobs need (`job_resources`)."""
    if not batch:
        return []
    ray_cfg = getattr(launcher, "ray_cfg", None)
    if ray_cfg is None:
        return list(launcher.launch(batch, initial_job_idx=0))
    base = dict(ray_cfg.remote or {})
    returns: list[Any] = []
    start = 0
    while start < len(batch):
        needs = job_resources(cells[start])
        end = start
        while end < len(batch) and job_resources(cells[end]) == needs:
            end += 1
        ray_cfg.remote = {**needs, **base}  # what the user set for hydra.launcher.ray.remote wins
        returns += launcher.launch(batch[start:end], initial_job_idx=start)
        start = end
    ray_cfg.remote = base
    return returns


def _runs_here(launcher: Launcher) -> bool:
    """Whether Hydra's launcher is its basic one, which runs each job in this process, in turn.
    (By name: Hydra's plugin discovery loads its core plugins a second time, as other classes.)"""
    kind = type(launcher)
    return (
        f"{kind.__module__}.{kind.__qualname__}"
        == "hydra._internal.core_plugins.basic_launcher.BasicLauncher"
    )


def expand(
    hydra_context: HydraContext,
    params: dict[str, str],
    grid: list[dict[str, str]],
    arguments: list[str],
) -> list[list[str]]:
    """Every job's overrides: params x command line, times the union of the grid's entries.

    A key given on the command line replaces the same key of a params or grid entry.
    """
    parser = OverridesParser.create(config_loader=hydra_context.config_loader)
    given = {a.lstrip("+~").split("=", 1)[0] for a in arguments}

    def product(overrides: list[str]) -> list[list[str]]:
        return [
            list(job)
            for job in BasicSweeper.split_arguments(parser.parse_overrides(overrides), None)[0]
        ]

    base = [f"{k}={v}" for k, v in params.items() if k not in given] + list(arguments)
    if not grid:
        return product(base)
    jobs: list[list[str]] = []
    for entry in grid:
        extra = [f"{k}={v}" for k, v in entry.items() if k not in given]
        jobs.extend(product(extra + base))
    return jobs


def record_skipped(sweep_dir: Path, jobs: list[list[str]], plan: Plan) -> None:
    """A result.json with status skipped, and why, for every cell that means nothing."""
    for index, cell, reason in plan.skipped:
        if reason in (cell.skip_reason, cell.refuse_reason):
            config = cell.spec.model_dump(mode="json")
            write_record(
                sweep_dir / job_dir_name(jobs[index], cell.run_id),
                skipped_result(cell, reason, jobs[index], config),
            )


def describe_plan(
    jobs: list[list[str]],
    plan: Plan,
    done: dict[str, Path],
    added: AbstractSet[int] = frozenset(),
) -> str:
    """What will run, what is already complete (resumed sweeps), what is left out and why."""
    todo = [(i, c) for i, c in plan.run if not done.get(c.run_id)]
    lines = [
        f"plan: {len(todo)} job(s) to run, {len(plan.run) - len(todo)} already complete, "
        f"{len(plan.skipped)} left out"
    ]
    for i, cell in plan.run:
        where = done.get(cell.run_id)
        verb = "done " if where else "run  "
        tail = (
            f": already complete in {where.parent.name} (rerun=true runs it again)" if where else ""
        )
        if i in added:
            tail += "  (added: the drafters' baseline; baseline=false leaves it out)"
        lines.append(f"  {verb} {cell.run_id}  {' '.join(jobs[i]) or '(defaults)'}{tail}")
        lines += [f"        note: {note}" for note in warnings_for(cell)]
    for i, cell, reason in plan.skipped:
        verb = "refuse" if reason == cell.refuse_reason and not cell.skip_reason else "skip  "
        lines.append(f"  {verb} {cell.run_id}  {' '.join(jobs[i]) or '(defaults)'}: {reason}")
    return "\n".join(lines)


def for_a_running_ray_cluster(launcher: Any) -> None:
    """Hydra's Ray launcher sets an object store size for the Ray it starts, and Ray refuses one
    when it joins a running cluster: where an address is given (`RAY_ADDRESS`, or
    `hydra.launcher.ray.init.address`), the size is left to the cluster."""
    init = getattr(getattr(launcher, "ray_cfg", None), "init", None)
    if init is None or "object_store_memory" in init:
        return  # not Ray, or the user chose a size
    if init.get("address") or os.environ.get("RAY_ADDRESS"):
        with open_dict(init):
            init.object_store_memory = None

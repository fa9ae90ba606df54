"""One composed job run where it was composed: the body every entry point shares.

The sweeper runs local jobs through here with the spec it composed when it planned them, a plain
`python -m specexp` runs its one job through here, and Hydra's own launchers (SLURM, Ray), whose
jobs run elsewhere, reach it through the Hydra task function in specexp.run.cli.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import yaml

from specexp.record import write_record
from specexp.record.escape import printable
from specexp.run import progress
from specexp.run.compose import Composed
from specexp.run.job import run_job, skipped_result
from specexp.run.plan import make_cell
from specexp.runtimes.http import pool


def save_job_config(job_dir: Path, composed: Composed, overrides: Sequence[str]) -> None:
    """`.hydra/config.yaml` and `overrides.yaml` of the job, where Hydra's own launcher puts them."""
    folder = job_dir / ".hydra"
    folder.mkdir(parents=True, exist_ok=True)
    dump = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    (folder / "config.yaml").write_text(
        yaml.dump(composed.config, Dumper=dump, sort_keys=False), encoding="utf-8"
    )
    (folder / "overrides.yaml").write_text(
        yaml.dump(list(overrides), Dumper=dump), encoding="utf-8"
    )


def run_composed(
    composed: Composed,
    overrides: Sequence[str],
    job_dir: Path,
    root: Path,
    multirun: bool,
    save_config: bool = False,
) -> str:
    """Run one job into `job_dir` (its sweep's `root`) and say how it ended: its status. With
    `save_config`, its `.hydra` files are written first (a job the sweeper runs itself): a folder
    that cannot take them fails the job, as one that cannot take its record does."""
    cell, data = make_cell(composed.spec), composed.config
    overrides = list(overrides)
    description = " ".join(o for o in overrides if not o.startswith("+experiment")) or "(defaults)"
    sweep_progress = progress.current()
    if sweep_progress is not None:
        sweep_progress.started_job(description)
    try:
        if save_config:
            save_job_config(job_dir, composed, overrides)
        if cell.refuse_reason and not cell.skip_reason:  # known before any server starts
            write_record(job_dir, skipped_result(cell, cell.refuse_reason, overrides, data))
            print(f"job {cell.run_id}: refused: {cell.refuse_reason}", flush=True)
            return "refused"
        record = run_job(cell, job_dir, root, overrides, data, rerun=bool(data.get("rerun")))
        status = record.status if record else "ok"
        detail = (
            (record.error.message if record and record.error else "")
            if record
            else f"already complete in {root}"
        )
    except OSError as err:  # the job directory is not writable, the disk is full...
        status, detail = "failed", f"could not write in {job_dir}: {err.strerror or err}"
    finally:
        if not multirun:
            pool.release()
    if sweep_progress is not None:
        sweep_progress.finished_job(
            f"{cell.run_id} {description}", status + (f" ({detail})" if detail else "")
        )
    else:
        print(
            f"job {cell.run_id}: {status}{': ' + printable(detail) if detail else ''}", flush=True
        )
    return status

"""One sitting on a lent GPU machine: carry pieces one call at a time, run specexp sweeps detached so
that they outlive the call that started them, watch them from later calls, and pack the records.

The engine scripts (vllm_h200.py, sglang_h200.py) say what to carry, how to install it and which
sweeps to run; this module does the rest the same way for each. A device call may last 10 minutes
and the machine is kept only ~30 s between calls, so:

    carry   one piece into `pieces` (a call each, back to back)
    start   copy the repository to `work`-repo and run the script's `run` stage there, detached
    wait    until the sweeps end or N seconds pass, printing each job as it ends; then `pack`
    pack    every result.json and requests.jsonl, the servers' logs cut short, the consoles, into
            OUT/records.tar.gz
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "benchmarks" / "data"
CARDS = {"h200": "an H200", "h100": "an H100"}
"""The cards a sitting may be lent, as a report's sentence names them."""


def sitting_dirs_of(sittings: Sequence[tuple[str, str, str]], card: str | None) -> list[Path]:
    """The folders (each holds `sweeps/`) of the sittings (name, when, card) lent `card` (None: all),
    in their order."""
    return [DATA / name for name, _, lent in sittings if card in (None, lent)]


def sittings_named_of(sittings: Sequence[tuple[str, str, str]], card: str) -> str:
    """The sittings lent `card` as a sentence's list: `benchmarks/data/NAME/` (WHEN), ..."""
    return ", ".join(
        f"`benchmarks/data/{name}/` ({when})" for name, when, lent in sittings if lent == card
    )


PROBE_ITEMS = 200_000
"""Items of python_probe_ms's fixed work."""


def python_probe_ms(repeats: int = 5) -> float:
    """The fastest of `repeats` runs of a fixed piece of pure-Python work (building, hashing and sorting
    PROBE_ITEMS small tuples), ms: the host's speed at what an engine's front end and scheduler do in
    Python. Two hosts with one CPU model name served SGLang's Python twice as fast as each other
    (docs/engines.md 2.9); the log names each sitting's host by this figure too."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        items = [(i * 7919 % PROBE_ITEMS, str(i)) for i in range(PROBE_ITEMS)]
        seen = {key: name for key, name in items}
        sorted(seen.items())
        best = min(best, time.perf_counter() - t0)
    return best * 1e3


@dataclass(frozen=True)
class Sitting:
    work: Path
    """Where the sweeps, their consoles and the log live on the device."""
    pieces: Path
    """Where carried pieces wait for the install."""
    script: Path
    """The engine script whose `run` stage `start` runs detached."""

    @property
    def copy(self) -> Path:
        return self.work.parent / (self.work.name + "-repo")

    def log(self, text: str, out: Path | None = None) -> None:
        line = f"[{time.strftime('%H:%M:%S')}] {text}"
        print(line, flush=True)
        for folder in {self.work, out} - {None}:
            assert folder is not None
            folder.mkdir(parents=True, exist_ok=True)
            with (folder / "log.txt").open("a") as f:
                f.write(line + "\n")

    def common_stage(self, stage: str, args: Any, start_args: Sequence[str]) -> bool:
        """Run `stage` where it is the same for every engine (carry, start, wait, pack) with the
        parsed `args` (`piece`, `out`, `wait_s`); False for a stage the engine script runs itself."""
        if stage == "carry":
            for piece in args.piece:
                self.carry(piece)
        elif stage == "start":
            self.start(args.out, start_args)
        elif stage == "wait":
            self.wait(args.wait_s, args.out)
        elif stage == "pack":
            self.pack(args.out)
        else:
            return False
        return True

    def carry(self, piece: Path) -> None:
        """Copy one piece (and the SHA256 beside it) to `pieces`, where it stays while the machine
        is held."""
        self.pieces.mkdir(parents=True, exist_ok=True)
        shutil.copy2(piece, self.pieces / piece.name)
        if (piece.parent / "SHA256").is_file():
            shutil.copy2(piece.parent / "SHA256", self.pieces / "SHA256")
        have = sorted(p.name for p in self.pieces.glob("piece-*"))
        self.log(
            f"carry: {piece.name} ({piece.stat().st_size >> 20} MiB); "
            f"{self.pieces} holds {', '.join(have)}"
        )

    def start(self, out: Path, args: Sequence[str], env: Mapping[str, str] | None = None) -> None:
        """Copy the repository to `copy` and run the script's `run` stage there with `args`, in a
        session of its own, detached."""
        if self.copy.exists():
            shutil.rmtree(self.copy)
        shutil.copytree(
            REPO,
            self.copy,
            ignore=shutil.ignore_patterns(".gpu-stage", ".git", ".venv", "__pycache__", "results"),
        )
        self.work.mkdir(parents=True, exist_ok=True)
        (self.work / "run.done").unlink(missing_ok=True)
        with (self.work / "run.txt").open("w") as console:
            proc = subprocess.Popen(
                [sys.executable, str(self.copy / self.script.relative_to(REPO)), "run", *args],
                cwd=self.copy,
                stdout=console,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                env={**os.environ, **(env or {})},
            )
        (self.work / "run.pid").write_text(str(proc.pid))
        self.log(f"start: sweeps running as pid {proc.pid} ({' '.join(args)})", out)

    def sweep(
        self,
        name: str,
        overrides: Sequence[str],
        env: Mapping[str, str],
        left_s: float,
        experiment: bool,
    ) -> int:
        """One specexp sweep (`+experiment=NAME`, else a plain multirun) into work/sweeps/NAME,
        interrupted at `left_s` (finished jobs are kept)."""
        argv = [
            sys.executable,
            "-m",
            "specexp",
            *([f"+experiment={name}"] if experiment else ["-m"]),
            *overrides,
            *self.hardware(overrides, env),
            f"hydra.sweep.dir={self.work / 'sweeps' / name}",
        ]
        self.log("run: " + " ".join(argv[3:]))
        with (self.work / f"{name}.console.txt").open("a") as console:
            proc = subprocess.Popen(
                argv, cwd=Path.cwd(), stdout=console, stderr=subprocess.STDOUT, env=dict(env)
            )
            try:
                return proc.wait(timeout=max(left_s, 1))
            except subprocess.TimeoutExpired:
                self.log(f"run: {name} at the deadline: interrupted; finished jobs are kept")
                proc.send_signal(signal.SIGINT)
                try:
                    return proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    return proc.wait()

    def hardware(self, overrides: Sequence[str], env: Mapping[str, str]) -> list[str]:
        """`hardware=` of the card this machine has, where the overrides name none: a lent machine of
        one size is an H100 or an H200, and the experiments say h200. specexp's plan refuses a job
        whose profile does not fit the card (specexp.measure.gpu_identity), so this picks the one
        that does; none where no profile fits (the plan then says so, job by job)."""
        if any(o.split("=", 1)[0].lstrip("+") == "hardware" for o in overrides):
            return []
        fits = subprocess.run(
            [sys.executable, "-m", "specexp.measure.gpu_identity"],
            capture_output=True,
            text=True,
            env=dict(env),
            check=False,
        ).stdout.split()
        self.log(f"run: this machine's card fits hardware profiles {fits or 'none'}")
        return [f"hardware={fits[0]}"] if len(fits) == 1 else []

    def done(self, seconds: float) -> None:
        (self.work / "run.done").write_text(f"{seconds:.0f}\n")

    def host_info(self) -> None:
        cpu = Path("/proc/cpuinfo")
        text = cpu.read_text(errors="replace") if cpu.is_file() else ""
        model = next(
            (
                ln.split(":", 1)[1].strip()
                for ln in text.splitlines()
                if ln.startswith("model name")
            ),
            "?",
        )
        mhz = [ln.split(":", 1)[1].strip() for ln in text.splitlines() if ln.startswith("cpu MHz")]
        self.log(
            f"host: cpu {model!r}, {os.cpu_count()} cores, load {os.getloadavg()}, "
            f"MHz {mhz[0] if mhz else '?'}, python {python_probe_ms():.1f} ms"
        )
        query = (
            "name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,power.limit,"
            "temperature.gpu,memory.used"
        )
        smi = (
            subprocess.run(
                ["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"],
                capture_output=True,
                text=True,
                check=False,
            )
            if shutil.which("nvidia-smi")
            else None
        )
        self.log(f"host: gpu {smi.stdout.strip() if smi else '?'}")

    def wait(self, seconds: float, out: Path) -> None:
        """Until the sweeps finish or `seconds` pass, each job as it ends; then the records into `out`."""
        t0 = time.monotonic()
        seen = 0
        while time.monotonic() - t0 < seconds and not (self.work / "run.done").is_file():
            time.sleep(min(5.0, max(1.0, seconds - (time.monotonic() - t0))))
            seen = self._progress(seen)
        self._progress(seen)
        self.pack(out)

    def _progress(self, seen: int) -> int:
        lines = [
            line
            for p in sorted(self.work.glob("*.console.txt"))
            for line in p.read_text(errors="replace").splitlines()
            if line.startswith("[")
            and "] " in line
            and ("ok" in line or "failed" in line or "refused" in line)
        ]
        for line in lines[seen:]:
            print("  " + line[:300], flush=True)
        return len(lines)

    def pack(self, out: Path, logs: Sequence[str] = ("server.log",)) -> None:
        """Every result.json and requests.jsonl, each server's log cut to its first 300 and last 150
        lines, the consoles and the log, into OUT/records.tar.gz."""
        out.mkdir(parents=True, exist_ok=True)
        with tarfile.open(out / "records.tar.gz", "w:gz") as tar:
            for path in sorted((self.work / "sweeps").rglob("result.json")):
                tar.add(path, arcname=str(path.relative_to(self.work)))
                requests = path.parent / "requests.jsonl"
                if requests.is_file():
                    tar.add(requests, arcname=str(requests.relative_to(self.work)))
                for name in logs:
                    server_log = path.parent / name
                    if not server_log.is_file():
                        continue
                    lines = server_log.read_text(errors="replace").splitlines()
                    keep = (
                        lines
                        if len(lines) <= 450
                        else [*lines[:300], f"... {len(lines) - 450} lines ...", *lines[-150:]]
                    )
                    short = path.parent / (name + ".short")
                    short.write_text("\n".join(keep) + "\n")
                    tar.add(short, arcname=str(short.relative_to(self.work)))
            for path in sorted(self.work.glob("capture/*")):
                tar.add(path, arcname=str(path.relative_to(self.work)))
            for extra in [
                *self.work.glob("*.console.txt"),
                *self.work.glob("*.raw.txt"),
                self.work / "log.txt",
                self.work / "run.txt",
            ]:
                if extra.is_file():
                    tar.add(extra, arcname=extra.name)
        size = (out / "records.tar.gz").stat().st_size >> 10
        self.log(f"pack: {out / 'records.tar.gz'} ({size} KiB)")

"""A sweep survives a refused, a killed and a hung llama-server, and resumes only those jobs."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from tests.integration.conftest import results, run_specexp

pytestmark = pytest.mark.slow

# Four server configurations told apart by their context size (-c): 1024 and 1792 run clean, 1280
# is killed mid-run, 1536 is stopped (hangs); each is also started with a removed flag (refused).
# `small` decodes slowly enough (~300 tok/s on 2 cores) that a job lasts a few seconds.
SMALL = (
    "runtime=llamacpp",
    "model=small",
    "quantization=f32",
    "hardware=cpu",
    "runtime.extra_args=[-t,2]",
)
SWEEP = (
    "runtime=llamacpp",
    "model=small",
    "quantization=f32",
    "hardware=cpu",
    "workload.output_tokens=200",
    "workload.repeats=5",
    "runtime.max_model_len=1024,1280,1536,1792",
    "runtime.extra_args=[-t,2],[-t,2,--draft-max,8]",
)


@pytest.fixture(scope="module")
def stall_limit(llama_server: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    """`runtime.stall_timeout_s` for the sweep, from how long this machine's server takes right now
    to first token and between tokens (a busy machine is many times slower than an idle one): far
    above any gap a healthy server shows, so only the frozen server stalls."""
    probe = tmp_path_factory.mktemp("probe")
    done = run_specexp(probe, *SMALL, "workload.output_tokens=32", "workload.warmup=0")
    assert done.returncode == 0, done.stderr
    (record,) = results(probe)
    metrics = record["measurements"][0]["metrics"]
    slowest = max(metrics["ttft_s"], metrics["itl_s"])
    return f"runtime.stall_timeout_s={max(3.0, 20 * slowest):.1f}"


def _servers_with(context: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if (
            argv
            and argv[0].endswith(b"llama-server")
            and context.encode() in argv
            and b"--draft-max" not in argv
        ):
            pids.append(int(entry.name))
    return pids


def _requests_started(sweep_dir: Path, context: str) -> int:
    """Requests the -c CONTEXT server has begun, from its own log (llama-server's launch_slot_ line)."""
    for log in sweep_dir.glob(f"*max_model_len={context},*/server.log"):
        if "draft-max" not in log.parent.name:
            return log.read_text(errors="replace").count("launch_slot_")
    return 0


def _sabotage(sweep_dir: Path, stop: threading.Event) -> None:
    """Kill the -c 1280 server and freeze the -c 1536 one once their third request (of six: a
    warm-up and five repeats) has started, so that each fault lands in the middle of a job."""
    todo = {"1280": signal.SIGKILL, "1536": signal.SIGSTOP}
    while todo and not stop.is_set():
        for context, sig in list(todo.items()):
            if _requests_started(sweep_dir, context) >= 3:
                for pid in _servers_with(context):
                    os.kill(pid, sig)
                todo.pop(context)
        time.sleep(0.02)


def _served(root: Path, marker: str) -> int:
    """Requests the llama-server of the job whose directory name contains `marker` has finished."""
    return sum(
        p.read_text(errors="replace").count("stop processing")
        for p in root.glob(f"*{marker}*/server.log")
    )


def test_faulty_servers_are_recorded_the_rest_complete_and_a_rerun_redoes_only_them(
    llama_server: Path, tmp_path: Path, stall_limit: str
) -> None:
    stop = threading.Event()
    saboteur = threading.Thread(target=_sabotage, args=(tmp_path, stop), daemon=True)
    saboteur.start()
    try:
        done = run_specexp(tmp_path, *SWEEP, stall_limit)
    finally:
        stop.set()
        saboteur.join(5)
    assert done.returncode == 0, done.stderr
    first = {
        (
            r["provenance"]["config"]["runtime"]["max_model_len"],
            "--draft-max" in r["provenance"]["server_argv"],
        ): r
        for r in results(tmp_path)
    }
    assert len(first) == 8
    refused = [r for (ctx, bad), r in first.items() if bad]
    assert all(r["status"] == "refused" and r["error"]["kind"] == "server_exited" for r in refused)
    died, hung = first[(1280, False)], first[(1536, False)]
    assert died["status"] == "failed" and died["error"]["kind"] in {
        "server_died",
        "connection",
        "truncated_stream",
    }
    assert hung["status"] == "failed" and hung["error"]["kind"] == "stalled"
    for record in (died, hung):
        assert all(m.get("partial") for m in record["measurements"])
    assert first[(1024, False)]["status"] == "ok" and first[(1792, False)]["status"] == "ok"
    assert not any(
        _servers_with(c) for c in ("1024", "1280", "1536", "1792")
    )  # every server stopped
    finished = {
        p: p.read_bytes()
        for p in tmp_path.glob("*/result.json")
        if b'"status": "ok"' in p.read_bytes()
    }

    again = run_specexp(tmp_path, *SWEEP, stall_limit)
    assert again.returncode == 0, again.stderr
    plan = again.stdout.split("\n[", 1)[0]
    assert plan.count("\n  run ") == 6 and plan.count("\n  done ") == 2, (
        plan
    )  # 4 refused + died + hung
    assert {p: p.read_bytes() for p in finished} == finished  # complete results untouched
    second = {
        (
            r["provenance"]["config"]["runtime"]["max_model_len"],
            "--draft-max" in r["provenance"]["server_argv"],
        ): r
        for r in results(tmp_path)
    }
    assert second[(1280, False)]["status"] == "ok" and second[(1536, False)]["status"] == "ok"


def test_ctrl_c_records_the_interrupted_job_and_stops_its_server(
    llama_server: Path, tmp_path: Path
) -> None:
    import subprocess
    import sys

    from tests.integration.conftest import REPO

    argv = [
        sys.executable,
        "-m",
        "specexp",
        "-m",
        "runtime=llamacpp",
        "model=small",
        "quantization=f32",
        "hardware=cpu",
        "workload.output_tokens=400",
        "workload.repeats=5",
        "runtime.max_model_len=1000,1100",
        "runtime.extra_args=[-t,2]",
        f"hydra.sweep.dir={tmp_path}",
    ]
    sweep = subprocess.Popen(
        argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    # Interrupt once the first job's server has finished its warm-up, the point's warm-up and two measured
    # requests, so a window is surely recorded: counted from the server's own log, not guessed from a
    # fixed sleep (a busy machine serves a request in seconds or in a minute).
    deadline = time.monotonic() + 900
    while (
        _served(tmp_path, "max_model_len=1000") < 4
        and sweep.poll() is None
        and time.monotonic() < deadline
    ):
        time.sleep(0.05)
    sweep.send_signal(signal.SIGINT)
    sweep.communicate(timeout=60)
    assert sweep.returncode != 0
    (record,) = results(tmp_path)  # the second job never started
    assert record["status"] == "failed" and record["error"]["kind"] == "interrupted"
    assert record["measurements"] and all(m["partial"] for m in record["measurements"])
    assert not _servers_with("1000") and not _servers_with("1100")
    assert (tmp_path / "measurements.md").is_file()

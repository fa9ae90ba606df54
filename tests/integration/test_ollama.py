"""runtime=ollama against a real `ollama serve`: Ollama 0.24.0 built from its source here
(scripts/build-ollama.sh; scripts/test builds it when the source is at hand and exports
SPECEXP_OLLAMA). Start, readiness and version; a GGUF imported through Ollama's own API; native
and OpenAI-compatible streams with Ollama's timings; concurrency; a missing model and a refused
start with Ollama's own words; a drafter refused at plan time by the binary's version.

Each test's server keeps its models in one store per session (OLLAMA_MODELS), so a model is
imported once.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from specexp.record import RunRecord
from specexp.run.job import run_job
from specexp.run.plan import make_cell
from specexp.runtimes.http.process import ServerProcess, free_port
from tests.integration.conftest import run_specexp

pytestmark = pytest.mark.slow

QUICK = (
    "workload.output_tokens=8",
    "workload.repeats=1",
    "hardware=cpu",
    "runtime.start_timeout_s=120",
    "runtime.stall_timeout_s=120",
)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One model store for the module's servers (Ollama's OLLAMA_MODELS), HOME beside it."""
    root = tmp_path_factory.mktemp("ollama")
    saved = {k: os.environ.get(k) for k in ("OLLAMA_MODELS", "HOME", "OLLAMA_NO_CLOUD")}
    os.environ.update(
        OLLAMA_MODELS=str(root / "models"), HOME=str(root / "home"), OLLAMA_NO_CLOUD="1"
    )
    try:
        yield root
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture(scope="module")
def serving(ollama_executable: Path, store: Path) -> Iterator[str]:
    """An `ollama serve` this module starts itself, for runtime.url jobs: its base URL."""
    port = free_port()
    server = ServerProcess(
        [str(ollama_executable), "serve"],
        store / "serve.log",
        env={"OLLAMA_HOST": f"127.0.0.1:{port}", "OLLAMA_NUM_PARALLEL": "2"},
    )
    url = f"http://127.0.0.1:{port}"
    try:
        import httpx

        def ready() -> bool:
            try:
                return httpx.get(f"{url}/api/version", timeout=2).status_code == 200
            except httpx.HTTPError:
                return False

        server.wait_ready(ready, 60)
        yield url
    finally:
        server.stop()


def _job(make_spec: Callable[..., Any], folder: Path, *overrides: str) -> RunRecord:
    record = run_job(make_cell(make_spec(*overrides)), folder, None, [], {})
    assert record is not None
    return record


def test_specexp_starts_ollama_imports_a_gguf_and_reads_its_timings(
    make_spec: Callable[..., Any], ollama_executable: Path, store: Path, tmp_path: Path
) -> None:
    record = _job(
        make_spec,
        tmp_path / "job",
        "runtime=ollama",
        f"runtime.executable={ollama_executable}",
        "model=tiny",
        *QUICK,
    )
    assert record.status == "ok", record.error
    info = record.provenance.engine_info.model_dump() if record.provenance.engine_info else {}
    assert info["version"] == "0.24.0"
    assert str(info["served_model"]).startswith("specexp/tiny-")
    m = record.measurements[0]
    assert m.token_source == "server" and m.metrics.ttft_s is not None
    timings = (m.engine_timings or [{}])[0]
    assert timings["eval_count"] >= 1 and timings["eval_duration"] > 0
    assert record.provenance.server_argv == [str(ollama_executable), "serve"]


@pytest.mark.parametrize("endpoint", ["chat", "completions"])
def test_native_chat_and_generate_streams_carry_ollamas_counts(
    make_spec: Callable[..., Any], serving: str, tmp_path: Path, endpoint: str
) -> None:
    record = _job(
        make_spec,
        tmp_path / endpoint,
        "runtime=ollama",
        f"runtime.url={serving}",
        "model=tiny",
        f"workload.endpoint={endpoint}",
        *QUICK,
    )
    assert record.status == "ok", record.error
    m = record.measurements[0]
    assert m.conditions.prompt_tokens and m.conditions.prompt_tokens > 0  # prompt_eval_count
    assert m.metrics.decode_tps is not None and m.metrics.decode_tps > 0


def test_the_openai_compatible_endpoint_measures_the_same_model(
    make_spec: Callable[..., Any], serving: str, tmp_path: Path
) -> None:
    native = _job(
        make_spec, tmp_path / "n", "runtime=ollama", f"runtime.url={serving}", "model=tiny", *QUICK
    )
    tag = native.provenance.engine_info.model_dump()["served_model"]  # type: ignore[union-attr]
    record = _job(
        make_spec,
        tmp_path / "openai",
        "runtime=openai",
        f"runtime.url={serving}",
        f"runtime.served_model_name={tag}",
        "model=tiny",
        *QUICK,
    )
    assert record.status == "ok", record.error
    assert record.measurements[0].token_source == "server"  # usage of include_usage


def test_two_streams_run_in_two_of_ollamas_parallel_slots(
    make_spec: Callable[..., Any], ollama_executable: Path, store: Path, tmp_path: Path
) -> None:
    record = _job(
        make_spec,
        tmp_path / "c",
        "runtime=ollama",
        f"runtime.executable={ollama_executable}",
        "model=tiny",
        "workload.concurrency=[1,2]",
        *QUICK,
    )
    assert record.status == "ok", record.error
    assert [m.conditions.concurrency for m in record.measurements] == [1, 2]
    log = (tmp_path / "c" / "server.log").read_text(errors="replace")
    assert "OLLAMA_NUM_PARALLEL:2" in log  # Ollama prints its settings at start


def test_a_missing_model_fails_the_job_with_ollamas_own_words(
    make_spec: Callable[..., Any], serving: str, tmp_path: Path
) -> None:
    record = _job(
        make_spec,
        tmp_path / "missing",
        "runtime=ollama",
        f"runtime.url={serving}",
        "runtime.served_model_name=specexp/no-such-model:0",
        *QUICK,
    )
    assert record.status == "failed"
    assert record.error is not None and "not found" in record.error.message


def test_a_drafter_is_refused_at_plan_time_naming_the_version(
    make_spec: Callable[..., Any], ollama_executable: Path
) -> None:
    cell = make_cell(
        make_spec("runtime=ollama", f"runtime.executable={ollama_executable}", "drafter=mtp", "k=3")
    )
    assert cell.refuse_kind == "unsupported_drafter"
    assert cell.refuse_reason is not None and "Ollama 0.24.0" in cell.refuse_reason


def test_a_sweep_on_the_trained_model_records_measured_figures(
    ollama_executable: Path, store: Path, tmp_path: Path
) -> None:
    done = run_specexp(
        tmp_path / "sweep",
        "runtime=ollama",
        f"runtime.executable={ollama_executable}",
        "hardware=cpu",
        "model=qwen2.5-coder-1.5b",
        "quantization=q4_k_m",
        "workload=short_chat",
        "workload.output_tokens=16",
        "workload.repeats=1",
        "drafter=none",
        "runtime.start_timeout_s=300",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (record,) = [
        json.loads(p.read_text()) for p in sorted((tmp_path / "sweep").glob("*/result.json"))
    ]
    assert record["status"] == "ok", record["error"]
    m = record["measurements"][0]
    assert m["conditions"]["source"] == "measured" and m["conditions"]["weights"] == "trained"
    assert m["metrics"]["decode_tps"] > 0 and m["token_source"] == "server"


def test_a_refused_start_is_recorded_with_ollamas_own_error(
    make_spec: Callable[..., Any],
    ollama_executable: Path,
    store: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    not_a_folder = tmp_path / "models"
    not_a_folder.write_text("a file where Ollama's model store should be")
    monkeypatch.setenv("OLLAMA_MODELS", str(not_a_folder))
    record = _job(
        make_spec,
        tmp_path / "refused",
        "runtime=ollama",
        f"runtime.executable={ollama_executable}",
        "model=tiny",
        *QUICK,
    )
    assert record.status == "refused"
    assert record.error is not None and "not a directory" in record.error.log_tail


def test_a_warm_prefix_is_served_from_ollamas_cache_and_a_cold_one_is_said_unconfirmed(
    make_spec: Callable[..., Any], ollama_executable: Path, store: Path, tmp_path: Path
) -> None:
    """Ollama cannot be told to empty its cache: a cold window is one whose prefix it has not
    seen, and the record says no reset was confirmed. A warm prefix is served from the cache."""
    record = _job(
        make_spec,
        tmp_path / "cache",
        "runtime=ollama",
        f"runtime.executable={ollama_executable}",
        "model=tiny",
        "hardware=cpu",
        "workload=prefix_cache",
        "workload.prompt_lengths=[1024]",
        "workload.repeats=2",
        "runtime.start_timeout_s=120",
    )
    assert record.status == "ok", record.error
    by_cache = {m.conditions.cache: m for m in record.measurements}
    cold, warm = by_cache["cold"], by_cache["warm"]
    assert cold.prefix_cache_reset is False
    assert cold.metrics.ttft_s is not None and warm.metrics.ttft_s is not None
    assert warm.metrics.ttft_s < cold.metrics.ttft_s  # measured here: 0.57 s against 3.7 s

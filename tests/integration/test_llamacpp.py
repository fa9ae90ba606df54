"""Sweeps against a real llama-server on the CPU with specexp's own tiny GGUF models."""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

import pytest

from tests.integration.conftest import by_drafter, results, run_specexp

pytestmark = pytest.mark.slow

TINY = (
    "runtime=llamacpp",
    "model=tiny",
    "quantization=f32",
    "hardware=cpu",
    "workload.output_tokens=48",
    "runtime.extra_args=[-t,2]",
)


@pytest.fixture(scope="module")
def draft_sweep(llama_server: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """drafter=none vs a noisy draft model, at concurrency 1 and 4, two repeats each."""
    out = tmp_path_factory.mktemp("draft-sweep")
    done = run_specexp(
        out,
        *TINY,
        "drafter=none,draft_model",
        "draft_model=tiny-draft-noisy",
        "k=4",
        "workload.concurrency=[1,4]",
        "workload.repeats=2",
        "hardware.usd_per_gpu_hour=0.05",  # the whole CPU server's hour: the bill
    )
    assert done.returncode == 0, done.stderr
    return out


def test_sweep_records_every_job_ok_with_the_engine_version(draft_sweep: Path) -> None:
    records = results(draft_sweep)
    assert sorted(r["conditions"]["drafter"] for r in records) == ["draft_model", "none"]
    for r in records:
        assert r["status"] == "ok", r["error"]
        assert r["conditions"]["source"] == "measured"
        assert r["conditions"]["runtime_version"].startswith(
            "b"
        )  # llama-server build_info, e.g. b1-0c1e570
        assert [m["conditions"]["concurrency"] for m in r["measurements"]] == [1, 4]
        assert (draft_sweep / "measurements.md").is_file() and (
            draft_sweep / "results.jsonl"
        ).is_file()


def test_the_bill_is_the_servers_hour_over_the_tokens_it_served(draft_sweep: Path) -> None:
    for r in results(draft_sweep):
        for m in r["measurements"]:
            c, tps = m["conditions"], m["metrics"]["aggregate_tps"]
            assert c["gpu_count"] == 0 and c["usd_per_gpu_hour"] == 0.05 and tps > 0
            assert m["metrics"]["usd_per_mtok"] == pytest.approx(0.05 * 1e6 / (3600 * tps))
            assert m["metrics"]["usd_per_mtok_energy"] is None  # no price per kWh given
    assert "## The bill" in (draft_sweep / "measurements.md").read_text()


def test_acceptance_counters_and_positions_come_from_the_server(draft_sweep: Path) -> None:
    drafted = by_drafter(draft_sweep)["draft_model"]
    assert "--spec-type" in drafted["provenance"]["server_argv"]
    for m in drafted["measurements"]:
        metrics = m["metrics"]
        assert 0.0 < metrics["acceptance_rate"] < 1.0  # a noisy draft accepts part of its tokens
        positions = metrics["acceptance_by_position"]
        assert len(positions) == 4
        assert all(
            a >= b for a, b in zip(positions, positions[1:])
        )  # position i needs i - 1 accepted
        assert metrics["tokens_per_pass"] == pytest.approx(1 + sum(positions), rel=1e-9)
        # the engine's own per-request timings are kept beside the client's figures
        assert all("draft_n" in t for t in m["engine_timings"])
    baseline = by_drafter(draft_sweep)["none"]
    assert all(m["metrics"]["acceptance_rate"] is None for m in baseline["measurements"])


def test_temperature_zero_output_is_identical_with_and_without_the_drafter(
    draft_sweep: Path,
) -> None:
    from specexp.check.runs import runs_of
    from specexp.record import find_records

    runs = runs_of(
        find_records([draft_sweep])
    )  # identity is judged from the records' completion digests
    single = next(
        r for r in runs if r.get("drafter") == "draft_model" and r.get("concurrency") == 1
    )
    assert single.metrics.output_identical is True


def test_an_exact_copy_draft_accepts_every_token(llama_server: Path, tmp_path: Path) -> None:
    done = run_specexp(
        tmp_path,
        *TINY,
        "drafter=draft_model",
        "draft_model=tiny-draft-copy",
        "k=3",
        "baseline=false",
    )
    assert done.returncode == 0, done.stderr
    (record,) = results(tmp_path)
    metrics = record["measurements"][0]["metrics"]
    assert metrics["acceptance_rate"] == pytest.approx(1.0)
    # by definition per draft: the last drafts of a request are shorter (fewer tokens remain),
    # so deep positions can sit a little below 1 even though every drafted token is accepted
    positions = metrics["acceptance_by_position"]
    assert positions[0] == pytest.approx(1.0) and min(positions) > 0.8


def test_client_timing_agrees_with_llama_server_timings(llama_server: Path, tmp_path: Path) -> None:
    """`small` decodes slowly enough on a CPU that HTTP overhead is small beside a token."""
    done = run_specexp(
        tmp_path,
        "runtime=llamacpp",
        "model=small",
        "quantization=f32",
        "hardware=cpu",
        "workload.output_tokens=96",
        "workload.repeats=3",
        "runtime.extra_args=[-t,2]",
    )
    assert done.returncode == 0, done.stderr
    (record,) = results(tmp_path)
    m = record["measurements"][0]
    server_decode = statistics.median(t["predicted_per_second"] for t in m["engine_timings"])
    assert m["metrics"]["decode_tps"] == pytest.approx(server_decode, rel=0.25)
    server_prefill_s = statistics.median(t["prompt_ms"] for t in m["engine_timings"]) / 1e3
    assert server_prefill_s <= m["metrics"]["ttft_s"] <= server_prefill_s + 0.25


def test_a_server_given_a_bad_flag_is_recorded_as_refused_and_the_sweep_goes_on(
    llama_server: Path, tmp_path: Path
) -> None:
    # --draft-max was removed from llama-server: it exits at start with a message saying so.
    done = run_specexp(tmp_path, *TINY[:-1], "runtime.extra_args=[--draft-max,8],[-t,2]")
    assert done.returncode == 0, done.stderr
    records = {tuple(r["provenance"]["server_argv"][-2:]): r for r in results(tmp_path)}
    refused = records[("--draft-max", "8")]
    assert refused["status"] == "refused"
    assert refused["error"]["kind"] == "server_exited"
    assert "draft-max" in refused["error"]["log_tail"]
    assert records[("-t", "2")]["status"] == "ok"
    assert "refused" in (tmp_path / "measurements.md").read_text()


def test_jobs_of_one_server_configuration_share_one_server(
    llama_server: Path, tmp_path: Path
) -> None:
    done = run_specexp(tmp_path, *TINY, "workload.output_tokens=16,24")
    assert done.returncode == 0, done.stderr
    reused = sorted(r["provenance"]["engine_info"]["reused_server"] for r in results(tmp_path))
    assert reused == [False, True]


def test_ngram_lookup_drafts_k_positions(llama_server: Path, tmp_path: Path) -> None:
    # a short n-gram so the tiny model's own repetitions give something to look up
    done = run_specexp(
        tmp_path,
        *TINY[:-1],
        "drafter=ngram",
        "k=4",
        "workload.output_tokens=256",
        "baseline=false",
        "runtime.extra_args=[-t,2,--spec-ngram-simple-size-n,3]",
    )
    assert done.returncode == 0, done.stderr
    (record,) = results(tmp_path)
    argv = record["provenance"]["server_argv"]
    assert argv[argv.index("--spec-type") + 1] == "ngram-simple"
    assert argv[argv.index("--spec-ngram-simple-size-m") + 1] == "4"
    metrics = record["measurements"][0]["metrics"]
    assert len(metrics["acceptance_by_position"]) == 4
    assert metrics["acceptance_rate"] is not None and 0.0 <= metrics["acceptance_rate"] <= 1.0


def test_prefix_cache_cold_then_warm(llama_server: Path, tmp_path: Path) -> None:
    done = run_specexp(
        tmp_path,
        *TINY[:4],
        "workload=prefix_cache",
        "workload.prompt_lengths=[1500]",
        "workload.repeats=2",
        "runtime.extra_args=[-t,2]",
    )
    assert done.returncode == 0, done.stderr
    (record,) = results(tmp_path)
    by_cache = {m["conditions"]["cache"]: m for m in record["measurements"]}
    cold, warm = by_cache["cold"], by_cache["warm"]
    assert cold["prefix_cache_reset"] is True  # llama-server confirmed erasing its slots
    assert cold["metrics"]["cached_prompt_tokens"] == 0
    # the shared prefix (all but the per-request suffix) comes from the cache the second time
    assert warm["metrics"]["cached_prompt_tokens"] >= 0.8 * warm["conditions"]["prompt_tokens"]
    assert warm["metrics"]["ttft_s"] < cold["metrics"]["ttft_s"]


def test_a_hybrid_model_resumes_from_the_checkpoint_the_simulator_resumes_from(
    llama_server: Path, tmp_path: Path
) -> None:
    # a recurrent state cannot be cut back, so llama-server resumes a warm prompt from the context
    # checkpoint it saved 4 + n_ubatch (512) tokens before the cold prompt's end, not from the
    # common prefix; the simulator's llamacpp profile (hybrid_states: prompt_tail) says the same
    hybrid = (
        "model=tiny-hybrid",
        "quantization=f32",
        "hardware=cpu",
        "workload=prefix_cache",
        "workload.prompt_lengths=[1500]",
        "workload.repeats=2",
    )
    recomputed = {}
    for name, runtime in (
        ("real", ("runtime=llamacpp", "runtime.extra_args=[-t,2]")),
        ("simulated", ("runtime=sim", "runtime.engine=llamacpp")),
    ):
        done = run_specexp(tmp_path / name, *runtime, *hybrid)
        assert done.returncode == 0, done.stderr
        (record,) = results(tmp_path / name)
        warm = next(m for m in record["measurements"] if m["conditions"]["cache"] == "warm")
        recomputed[name] = (
            warm["conditions"]["prompt_tokens"] - warm["metrics"]["cached_prompt_tokens"]
        )
    assert recomputed == {"real": 516, "simulated": 516}


def test_a_quantization_label_that_is_not_the_gguf_is_refused(
    llama_server: Path, tmp_path: Path
) -> None:
    done = run_specexp(
        tmp_path,
        "runtime=llamacpp",
        "model=tiny",
        "hardware=cpu",
        "quantization=q4_k_m",
        "workload.output_tokens=8",
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "sweep: none of its 1 job(s) finished" in done.stdout
    (record,) = results(tmp_path)
    assert record["status"] == "refused" and record["error"]["kind"] == "quantization_mismatch"
    assert (
        "F32" in record["error"]["message"] and "quantization=q4_k_m" in record["error"]["message"]
    )


def test_requests_jsonl_has_every_request_with_the_servers_response_id(draft_sweep: Path) -> None:
    for job in sorted(p.parent for p in draft_sweep.glob("*/result.json")):
        record = json.loads((job / "result.json").read_text())
        lines = [json.loads(x) for x in (job / "requests.jsonl").read_text().splitlines()]
        warm, measured = [x for x in lines if x["warmup"]], [x for x in lines if not x["warmup"]]
        # the workload's warm-up, then each point's warm-up window at its own concurrency (1 and 4)
        assert len(warm) == 1 + (1 + 4) and len(measured) == 2 * (
            1 + 4
        )  # concurrency 1 and 4, two repeats each
        assert sorted(x["concurrency"] for x in warm[1:]) == [1, 4, 4, 4, 4]
        ids = [x["id"] for x in lines]
        assert all(i and i.startswith("chatcmpl-") for i in ids) and len(set(ids)) == len(ids)
        assert sorted(x["request_id"] for x in measured) == sorted(
            r for m in record["measurements"] for r in m["requests"]
        )
        # each line's counts are the server's own (llama.cpp timings ride on the same stream)
        timings = [t for m in record["measurements"] for t in m["engine_timings"]]
        assert sorted(x["output_tokens"] for x in measured) == sorted(
            t["predicted_n"] for t in timings
        )
        assert all(
            x["status"] == 200 and x["finish_reason"] == "length" and x["ttft_s"] > 0 for x in lines
        )


@pytest.mark.parametrize("endpoint", ["chat", "completions"])
def test_every_prompt_is_the_promised_length_as_llama_server_counts_it(
    llama_server: Path, tmp_path: Path, endpoint: str
) -> None:
    """The chat template and BOS included: llama-server's own count of every request (warm-ups
    too) is the length the workload promised (specexp's estimate alone was 20 over)."""
    done = run_specexp(
        tmp_path,
        *TINY[:4],
        "workload=prefill_sweep",
        "workload.prompt_lengths=[300,1000]",
        "workload.repeats=1",
        f"workload.endpoint={endpoint}",
        "runtime.extra_args=[-t,2]",
    )
    assert done.returncode == 0, done.stderr
    (job,) = [p.parent for p in tmp_path.glob("*/result.json")]
    lines = [json.loads(x) for x in (job / "requests.jsonl").read_text().splitlines()]
    assert sorted(x["prompt_tokens"] for x in lines if not x["warmup"]) == [300, 1000]
    assert {x["prompt_tokens"] for x in lines} == {300, 1000}


def test_the_completions_endpoint_is_measured_too(llama_server: Path, tmp_path: Path) -> None:
    done = run_specexp(
        tmp_path, *TINY, "workload.endpoint=completions", "workload.output_tokens=16"
    )
    assert done.returncode == 0, done.stderr
    (record,) = results(tmp_path)
    assert record["status"] == "ok", record["error"]
    assert record["provenance"]["config"]["workload"]["endpoint"] == "completions"
    (job,) = [p.parent for p in tmp_path.glob("*/result.json")]
    lines = [json.loads(x) for x in (job / "requests.jsonl").read_text().splitlines()]
    # the workload's warm-up, the point's warm-up, and the request
    assert len(lines) == 3 and all(x["id"] and x["output_tokens"] == 16 for x in lines)


def test_context_depth_compares_each_depth_with_its_own_baseline(
    llama_server: Path, tmp_path: Path
) -> None:
    """The context_depth workload on a real server: one server per arm serves every depth, each depth
    is a measurement with the prompt length the server counted, and each drafter depth is divided by
    no drafter's at that depth (the tiny random weights make the speedups plumbing, not findings)."""
    done = run_specexp(
        tmp_path,
        *TINY,
        "workload=context_depth",
        "workload.prompt_lengths=[256,512,1024]",
        "workload.output_tokens=32",
        "drafter=none,draft_model",
        "draft_model=tiny-draft-noisy",
        "k=4",
    )
    assert done.returncode == 0, done.stderr
    records = results(tmp_path)
    assert all(r["status"] == "ok" for r in records)
    tps = {}
    for r in records:
        depths = [m["conditions"]["prompt_tokens"] for m in r["measurements"]]
        assert depths == [256, 512, 1024]  # cut to length with the server's own tokenizer
        for m in r["measurements"]:
            tps[(r["conditions"]["drafter"], m["conditions"]["prompt_tokens"])] = m["metrics"][
                "decode_tps"
            ]
    report = (tmp_path / "measurements.md").read_text()
    section = report[report.index("## Speculation by context depth") : report.index("## How sure")]
    # the tiny model's 32 tokens take ~15 ms, so whether it "pays" at a depth is noise; what the
    # section says must be each depth's own ratio, whichever sentence it takes
    ratios = {f"{tps[('draft_model', d)] / tps[('none', d)]:.2f}" for d in (256, 512, 1024)}
    (line,) = [ln for ln in section.splitlines() if ln.startswith("- `draft_model` k=4")]
    shown = re.findall(r"(\d+\.\d\d)×", line)
    assert shown and set(shown) <= ratios, (line, ratios)


def test_every_server_start_is_a_new_llama_server_and_intervals_are_over_them(
    llama_server: Path, tmp_path: Path
) -> None:
    """workload.server_starts on the real server: each start a process of its own with its own
    log, every window marked with its start, and the figures' intervals over the starts."""
    done = run_specexp(
        tmp_path,
        *TINY,
        "drafter=none,ngram",
        "k=4",
        "workload.output_tokens=32",
        "workload.repeats=2",
        "workload.server_starts=3",
    )
    assert done.returncode == 0, done.stderr
    for record in results(tmp_path):
        assert record["status"] == "ok"
        (m,) = record["measurements"]
        assert m["server_start"] == [0, 0, 1, 1, 2, 2]
        assert (m["conditions"]["repeats"], m["conditions"]["server_starts"]) == (6, 3)
        job = next(p.parent for p in tmp_path.glob("*/result.json") if record["run_id"] in str(p))
        logs = sorted(p.name for p in job.glob("server*.log"))
        assert logs == ["server-start-1.log", "server-start-2.log", "server.log"]
        # three processes, each of which loaded the model and served its own windows
        for log in logs:
            text = (job / log).read_text(errors="replace")
            assert "llama_server: listening on http://127.0.0.1:" in text, log
    lines = [json.loads(x) for x in (tmp_path / "results.jsonl").read_text().splitlines()]
    drafted = next(x for x in lines if x["conditions"]["drafter"] == "ngram")
    low, high = drafted["judgments"]["speedup_interval"]
    assert low <= drafted["judgments"]["speedup_vs_baseline"] <= high
    text = (tmp_path / "measurements.md").read_text()
    assert "## How sure the figures are" in text
    # each arm's interval is over exactly the windows with a figure and the starts they came from: all
    # 6 on 3 starts, but for a window whose 32 tokens reached a busy client in one read, which has no
    # decode_tps (its span is zero)
    shown = re.findall(r"\| (\d) on (\d) start\(s\) \|", text)
    expected = []
    for record in results(tmp_path):
        (m,) = record["measurements"]
        starts = [s for s, v in zip(m["server_start"], m["samples"]["decode_tps"]) if v is not None]
        expected.append((str(len(starts)), str(len(set(starts)))))
    assert sorted(shown) == sorted(expected), (shown, expected)


def test_the_engine_is_read_while_the_window_runs(llama_server: Path, tmp_path: Path) -> None:
    """llama-server's /metrics read every 50 ms during each window: the busy slots it reports, and
    counters whose change from the first reading to the last is the window's own."""
    done = run_specexp(
        tmp_path,
        *TINY,
        "drafter=draft_model",
        "draft_model=tiny-draft-noisy",
        "k=4",
        "workload.output_tokens=256",
        "workload.concurrency=[2]",
        "workload.engine_series_interval_s=0.05",
        "baseline=false",
    )
    assert done.returncode == 0, done.stderr
    (record,) = results(tmp_path)
    (m,) = record["measurements"]
    accepted = 0.0
    for s in m["engine_series"]:
        assert s["clock"] == "wall" and s["failed"] == 0
        assert len(s["t"]) >= 2 and s["t"] == sorted(s["t"])
        # a reading between the first and the last wherever the window outlasted two of them: on a
        # busy machine one read of /metrics can take most of a short window
        span = max(last for _, _, last in s["requests"]) - min(sent for sent, _, _ in s["requests"])
        if span > 2 * (0.05 + s["read_s"]):
            assert len(s["t"]) >= 3, (span, s["read_s"], s["t"])
        # a reading is over before the next begins: its time fits the longest gap between two
        gaps = [b - a for a, b in zip(s["t"], s["t"][1:])]
        assert 0 < s["read_s"] <= max(gaps)
        assert max(s["running"]) == 2  # llamacpp:requests_processing: both slots busy
        assert all(v is None for v in s["kv_usage"])  # this build exports no KV gauge
        for sent, first, last in s["requests"]:
            assert 0 <= sent < first <= last <= s["t"][-1]
        accepted += s["accepted"][-1] - s["accepted"][0]
    assert accepted == m["engine_counters"]["accepted"]
    assert "## What the engine was doing" in (tmp_path / "measurements.md").read_text()


def test_a_model_that_reasons_first_is_timed_to_its_answer(
    llama_server: Path, tmp_path: Path
) -> None:
    """A grammar (llama-server's own --grammar-file) makes the tiny model reason in a <think> span
    and then answer: the stream, as llama-server sends it, is split into its two streams."""
    grammar = tmp_path / "think.gbnf"
    grammar.write_text('root ::= "<think>" [a-z ]{8,24} "</think>" "\\n\\n" [a-z ]{8,24}\n')
    sweep = tmp_path / "sweep"
    done = run_specexp(
        sweep,
        *TINY[:-1],
        f"runtime.extra_args=[-t,2,--grammar-file,{grammar}]",
        "workload=short_chat",
        "workload.output_tokens=96",
        "workload.ignore_eos=false",
        "workload.repeats=2",
    )
    assert done.returncode == 0, done.stderr
    (record,) = results(sweep)
    assert record["status"] == "ok", record["error"]
    (m,) = record["measurements"]
    metrics = m["metrics"]
    # "<think>", 8 to 24 letters and "</think>", a byte token each where nothing longer matches
    assert 8 <= metrics["reasoning_tokens"] <= 7 + 24 + 8
    assert metrics["time_to_answer_s"] > metrics["ttft_s"]
    assert metrics["answer_tps"] > 0 and metrics["reasoning_tps"] > 0
    assert "## Reasoning and answer" in (sweep / "measurements.md").read_text()

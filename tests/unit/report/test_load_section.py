"""The open-loop section of a report, from a simulated sweep of rates with an SLO: its table, the
crossover in words, its charts (acceptance by position included), and loads not delivered."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

Cli = Callable[..., subprocess.CompletedProcess[str]]
BASE = (
    "-m",
    "hardware=h200",
    "model=qwen3-8b",
    "quantization=bf16",
    "workload=concurrency",
    "workload.warmup=0",
    "workload.output_tokens=64",
    "workload.concurrency=[1]",
    "workload.num_requests=16",
)


def section(text: str) -> str:
    return text.split("## Open-loop load", 1)[1].split("\n## ", 1)[0]


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory, specexp_cli: Cli) -> str:
    out = tmp_path_factory.mktemp("rates")
    done = specexp_cli(
        *BASE,
        "drafter=none,eagle3",
        "workload.request_rate=[1,8,256]",
        "slo.tpot_s=0.004",
        "slo.ttft_s=0.5",
        f"hydra.sweep.dir={out}",
    )
    assert done.returncode == 0, done.stderr
    return (out / "measurements.md").read_text()


def test_the_rate_section_tables_latency_goodput_and_slo_per_drafter(swept: str) -> None:
    text = section(swept)
    assert "SLO: TTFT ≤ 0.5 s and TPOT ≤ 0.004 s for 99 % of requests" in text
    for column in (
        "`achieved_rate_rps`",
        "`ttft_p99_s`",
        "`tpot_p99_s`",
        "`slo_attainment`",
        "`goodput_rps`",
        "delivered",
        "SLO met",
    ):
        assert column in text
    rows = [
        line
        for line in text.splitlines()
        if line.startswith("| none") or line.startswith("| eagle3")
    ]
    assert len(rows) == 6


def test_the_crossover_is_stated_for_each_drafter_and_no_drafter(swept: str) -> None:
    text = section(swept)
    assert "Highest load meeting the SLO" in text
    assert re.search(
        r"- no drafter: (meets it up to [\d.]+ req/s|misses it at the lightest load measured)\.",
        text,
    )
    assert re.search(r"- `eagle3` k=3: .*\.( .*)?", text)


def test_the_rate_section_charts_latency_goodput_and_acceptance_by_position(swept: str) -> None:
    text = section(swept)
    for title in (
        "Latency vs throughput",
        "Goodput vs request rate",
        "Acceptance by draft position",
    ):
        assert f"![{title}" in text
    # the frontier over the request rates: each arm's rates named, every arm measured on it or not
    said = next(line for line in text.splitlines() if line.startswith("**Frontier**"))
    assert "no other drafter, k or request_rate gives each user" in said
    assert re.search(r"(no drafter|none|`?eagle3`? k=3) \(request_rate [\d.]+", said)
    assert "![Frontier" in text


def test_a_load_the_client_could_not_deliver_is_said_so(tmp_path: Path, specexp_cli: Cli) -> None:
    done = specexp_cli(
        *BASE,
        "drafter=none",
        "workload.request_rate=[500]",
        "workload.max_concurrency=1",
        f"hydra.sweep.dir={tmp_path}",
    )
    assert done.returncode == 0, done.stderr
    text = section((tmp_path / "measurements.md").read_text())
    assert "**Load not delivered** in 1 row(s)" in text and "**not delivered**" in text

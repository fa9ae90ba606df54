"""A cited figure whose runtime cannot have run its drafter: the checker says so."""

from __future__ import annotations

from pathlib import Path

from specexp.check import check, load_figures, parse_figures

REPO = Path(__file__).resolve().parents[3]


def _rules(conditions: dict[str, object]) -> list[str]:
    figure = {"value": 26.5, "unit": "tok/s", "metric": "decode_tps", "source": "t"}
    figure["conditions"] = conditions
    report = check(parse_figures({"figures": {"f": figure}}, "inline"))
    return [x.rule for x in report.findings]


def test_mtp_on_an_ollama_before_030_is_an_error_and_without_a_version_a_warning() -> None:
    base = {"runtime": "ollama", "drafter": "mtp", "model": "qwen3.8-27b"}
    assert _rules({**base, "runtime_version": "0.24.0"}) == ["runtime_lacks_drafter"]
    assert _rules(base) == ["runtime_version_decides"]
    assert _rules({**base, "runtime_version": "0.33.0"}) == []
    assert _rules({**base, "drafter": "none"}) == []


def test_a_drafter_the_engine_has_at_no_version_is_an_error() -> None:
    assert _rules({"runtime": "ollama", "drafter": "ngram"}) == ["runtime_lacks_drafter"]
    assert _rules({"runtime": "vllm", "drafter": "ngram"}) == []


def test_the_studies_ollama_figure_is_judged_against_what_ollama_can_run() -> None:
    report = check(load_figures(REPO / "experiments/figures/ollama_mtp.yaml"))
    found = {(x.figures[0], x.rule) for x in report.findings}
    assert found == {
        ("ollama-q4-mtp-single", "runtime_version_decides"),
        ("ollama-q4-mtp-single-on-0.24", "runtime_lacks_drafter"),
    }

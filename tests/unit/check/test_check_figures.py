"""Loading cited figures: the docs/vocabulary.md section 4 format into frozen figures; every bad
input a one-line SpecError naming the file, the figure and the key, with the accepted values."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from checkhelp import BASE, figure_entry

from specexp.check.figures import load_figure_files, load_figures, parse_figures
from specexp.spec.errors import SpecError

REPO = Path(__file__).resolve().parents[3]

Write = Callable[..., Path]


def test_the_example_file_loads() -> None:
    figures = load_figures(REPO / "experiments" / "figures" / "blog_posts.yaml")
    assert "a-fp8-dspark-k7" in figures.figures
    f = figures.figures["a-fp8-dspark-k7"]
    assert (f.metric, f.value, f.unit, f.origin) == ("e2e_tps", 47.1, "tok/s", "cited")
    assert f.conditions["quantization"] == "fp8" and f.conditions["k"] == 7
    assert len(figures.comparisons) == 3


def test_omitted_and_null_conditions_are_unknown(write_figures: Write) -> None:
    c = {**BASE, "concurrency": None}
    del c["cache"]
    f = load_figures(write_figures({"figures": {"a": figure_entry(conditions=c)}})).figures["a"]
    assert "concurrency" not in f.conditions and "cache" not in f.conditions


def test_drafter_none_makes_k_known_to_be_none(write_figures: Write) -> None:
    c = {**BASE, "drafter": "none"}
    del c["k"]
    f = load_figures(write_figures({"figures": {"a": figure_entry(conditions=c)}})).figures["a"]
    assert f.conditions["k"] is None and f.conditions["drafter_config"] is None


@pytest.mark.parametrize(
    ("unit", "metric", "value", "expected"),
    [
        ("ms", "ttft_s", 850, 0.85),
        ("s", "ttft_s", 0.85, 0.85),
        ("%", "acceptance_rate", 79.0, 0.79),
        ("ratio", "acceptance_rate", 0.79, 0.79),
        ("tokens/s", "decode_tps", 20, 20.0),
    ],
)
def test_units_convert_to_the_metric_unit(
    write_figures: Write, unit: str, metric: str, value: float, expected: float
) -> None:
    f = load_figures(
        write_figures({"figures": {"a": figure_entry(unit=unit, metric=metric, value=value)}})
    )
    fig = f.figures["a"]
    assert fig.value == pytest.approx(expected)
    assert fig.as_written == f"{value:g} {unit}" if isinstance(value, float) else f"{value} {unit}"


def test_per_position_acceptance_is_a_list(write_figures: Write) -> None:
    entry = figure_entry(metric="acceptance_by_position", unit="%", value=[82.1, 65.9, 47.9])
    fig = load_figures(write_figures({"figures": {"a": entry}})).figures["a"]
    assert fig.value == pytest.approx((0.821, 0.659, 0.479))


def _bad(**over: Any) -> dict[str, Any]:
    return {"figures": {"fig1": figure_entry(**over)}}


def _conds(**over: Any) -> dict[str, Any]:
    return _bad(conditions={**BASE, **over})


# (data, the key the message must name, a fragment of what it must say)
BAD: list[tuple[Any, str, str]] = [
    (_bad(metric="e2e_tsp"), "figures.fig1.metric", "did you mean 'e2e_tps'"),
    (_bad(unit="tok/sec"), "figures.fig1.unit", "accepted: tok/s, tokens/s"),
    (_bad(unit="s"), "figures.fig1.unit", "not a unit of e2e_tps"),
    (_bad(unit="ms", metric="decode_tps"), "figures.fig1.unit", "accepted: tok/s"),
    (_bad(unit="tok/s", metric="ttft_s"), "figures.fig1.unit", "accepted: s, ms"),
    (_bad(value="fast"), "figures.fig1.value", "finite number"),
    (_bad(value=None), "figures.fig1.value", "missing value"),
    (_bad(value=-3), "figures.fig1.value", "negative"),
    (_bad(value=True), "figures.fig1.value", "finite number"),
    (_bad(source=None), "figures.fig1.source", "missing value"),
    (_bad(metric=None), "figures.fig1.metric", "missing value"),
    (_bad(colour="red"), "figures.fig1.colour", "accepted: value, unit, metric, source"),
    (_bad(conditions=[1, 2]), "figures.fig1.conditions", "expected a mapping"),
    (
        _conds(quantisation="fp8"),
        "figures.fig1.conditions.quantisation",
        "did you mean 'quantization'",
    ),
    (_conds(quantization="fp4"), "figures.fig1.conditions.quantization", "accepted: bf16"),
    (_conds(hardware="dgx-spark"), "figures.fig1.conditions.hardware", "did you mean 'dgx_spark'"),
    (_conds(drafter="dsprk"), "figures.fig1.conditions.drafter", "did you mean 'dspark'"),
    (_conds(runtime="vlm"), "figures.fig1.conditions.runtime", "did you mean 'vllm'"),
    (_conds(cache="hot"), "figures.fig1.conditions.cache", "accepted: cold, warm"),
    (
        _conds(workload="edit_heavvy@1"),
        "figures.fig1.conditions.workload",
        "did you mean 'edit_heavy'",
    ),
    (_conds(k="seven"), "figures.fig1.conditions.k", "integer"),
    (_conds(k=0), "figures.fig1.conditions.k", "at least 1"),
    (_conds(concurrency=1.5), "figures.fig1.conditions.concurrency", "integer"),
    (_conds(thinking="no"), "figures.fig1.conditions.thinking", "true or false"),
    (_conds(runtime_version=0.1), "figures.fig1.conditions.runtime_version", "quote it"),
    (
        _conds(gpu_memory_utilization=1.5),
        "figures.fig1.conditions.gpu_memory_utilization",
        "(0, 1]",
    ),
    (_conds(drafter="none", k=3), "figures.fig1.conditions.k", "means nothing with drafter none"),
    ({"figures": {}}, "figures", "missing, empty"),
    ({"figure": {"a": figure_entry()}}, "figure", "did you mean 'figures'"),
    ([1, 2, 3], "figures", "expected a mapping"),
    ({"figures": {"a": 3}}, "figures.a", "expected a mapping"),
    ({"figures": {"a": figure_entry()}, "comparisons": {"a": 1}}, "comparisons", "expected a list"),
    (
        {"figures": {"a": figure_entry()}, "comparisons": [{"figures": ["a"]}]},
        "comparisons[0].figures",
        "two figure ids",
    ),
    (
        {"figures": {"a": figure_entry()}, "comparisons": [{"figures": ["a", "bb"]}]},
        "comparisons[0].figures",
        "no figure 'bb'",
    ),
    (
        {"figures": {"a": figure_entry()}, "comparisons": [{"figures": ["a", "a"]}]},
        "comparisons[0].figures",
        "itself",
    ),
    (
        {
            "figures": {"a": figure_entry(), "b": figure_entry()},
            "comparisons": [{"figures": ["a", "b"], "vary": ["quantisation"]}],
        },
        "comparisons[0].vary",
        "did you mean 'quantization'",
    ),
    (
        {
            "figures": {"a": figure_entry(), "b": figure_entry()},
            "comparisons": [{"figures": ["a", "b"], "vary": [["k"]]}],
        },
        "comparisons[0].vary",
        "unknown condition",
    ),
    (
        {
            "figures": {"a": figure_entry(), "b": figure_entry()},
            "comparisons": [{"figures": ["a", "b"], "varies": ["k"]}],
        },
        "comparisons[0].varies",
        "did you mean 'vary'",
    ),
]


@pytest.mark.parametrize(("data", "key", "says"), BAD, ids=[f"{b[1]}:{b[2]}" for b in BAD])
def test_bad_input_is_one_line_naming_file_figure_and_key(
    write_figures: Write, data: Any, key: str, says: str
) -> None:
    path = write_figures(data)
    with pytest.raises(SpecError) as err:
        load_figures(path)
    line = err.value.line()
    assert "\n" not in line
    assert line.startswith(f"{path}: {key}: "), line
    assert says in line, line


RAW_BAD: list[tuple[str, str, str]] = [
    ("figures: {a: {value: 1}\n", "yaml", "line"),
    (
        "figures:\n  a: {value: 1, unit: tok/s, metric: e2e_tps, source: x}\n  a: {value: 2}\n",
        "yaml",
        "written twice",
    ),
    ("\tfigures: 1", "yaml", ""),
    ("!!python/object:os.system {}", "yaml", ""),
    ("", "figures", "expected a mapping"),
    ("figures: [1, 2]", "figures", "not a mapping"),
    ("figures:\n  ? [a, b]\n  : 1\n", "", ""),
]


@pytest.mark.parametrize(("text", "key", "says"), RAW_BAD)
def test_malformed_yaml_is_one_line(write_figures: Write, text: str, key: str, says: str) -> None:
    path = write_figures(text)
    with pytest.raises(SpecError) as err:
        load_figures(path)
    line = err.value.line()
    assert "\n" not in line and line.startswith(f"{path}: {key}")
    assert says in line


def test_bytes_that_are_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "f.yaml"
    path.write_bytes(b"figures:\n  a: \xff\xfe\n")
    with pytest.raises(SpecError, match="not UTF-8"):
        load_figures(path)


def test_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="cannot read"):
        load_figures(tmp_path / "nope.yaml")


def test_ids_are_unique_across_files(write_figures: Write) -> None:
    a = write_figures({"figures": {"x": figure_entry()}}, "a.yaml")
    b = write_figures({"figures": {"x": figure_entry()}}, "b.yaml")
    with pytest.raises(SpecError, match=r"figures\.x: id already used"):
        load_figure_files([a, b])


def test_figures_are_frozen(write_figures: Write) -> None:
    fig = load_figures(write_figures({"figures": {"a": figure_entry()}})).figures["a"]
    with pytest.raises(AttributeError):
        fig.value = 3  # type: ignore[misc]
    with pytest.raises(TypeError):
        fig.conditions["k"] = 9  # type: ignore[index]


def test_inline_figures_of_an_experiment_ignore_its_other_keys() -> None:
    data = {"experiment": "x", "figures": {"a": figure_entry()}}
    assert "a" in parse_figures(data, "experiments/x.yaml", extra_keys=("experiment",)).figures

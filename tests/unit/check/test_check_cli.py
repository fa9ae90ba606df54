"""`python -m specexp.check`, run in-process through main(argv): its output formats, its exit
statuses, and fuzzed inputs that must end in exit 2 (one line) or a result, never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from checkhelp import BASE, figure_entry
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specexp.check.__main__ import main
from specexp.spec import paths

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "experiments" / "figures" / "blog_posts.yaml"

Write = Callable[..., Path]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_example_is_unfair_and_says_why(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, str(EXAMPLE))
    assert code == 1 and err == ""
    assert "**fair**" in out and "**unfair**" in out
    assert "| `quantization` | fp8 | nvfp4 | **confounder** |" in out
    assert "e2e_tps vs decode_tps" in out
    assert "source_conflict" in out and "implausible" in out


def test_json_has_the_shape_of_the_vocabulary(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(EXAMPLE), "--format", "json")
    data = json.loads(out)
    assert code == 1 and data["exit_status"] == 1
    for c in data["comparisons"]:
        assert {
            "figures",
            "vary",
            "verdict",
            "confounders",
            "unknown",
            "unstated",
            "metric_mismatch",
        } <= set(c)
        assert c["verdict"] in ("fair", "unfair", "unverifiable")
        for d in c["confounders"]:
            assert set(d) == {"condition", "values"} and len(d["values"]) == 2
    second = data["comparisons"][1]
    assert {"condition": "quantization", "values": ["fp8", "nvfp4"]} in second["confounders"]
    assert "concurrency" in second["unknown"]
    assert second["metric_mismatch"].startswith("e2e_tps vs decode_tps")
    assert data["figures"][0]["id"] == "a-fp8-dspark-k7"
    for f in data["findings"]:
        assert {"rule", "severity", "figures", "expected", "found"} <= set(f)


def test_all_fair_exits_0(capsys: pytest.CaptureFixture[str], write_figures: Write) -> None:
    data = {
        "figures": {
            "a": figure_entry(value=22.0),
            "b": figure_entry(value=25.0, conditions={**BASE, "k": 5}),
        },
        "comparisons": [{"figures": ["a", "b"], "vary": ["k"]}],
    }
    code, out, _ = run(capsys, str(write_figures(data)))
    assert code == 0 and "**fair**" in out


def test_unverifiable_exits_1(capsys: pytest.CaptureFixture[str], write_figures: Write) -> None:
    short = {k: v for k, v in BASE.items() if k != "concurrency"}
    data = {
        "figures": {"a": figure_entry(), "b": figure_entry(conditions=short)},
        "comparisons": [{"figures": ["a", "b"]}],
    }
    code, out, _ = run(capsys, str(write_figures(data)), "--format", "json")
    assert code == 1 and json.loads(out)["comparisons"][0]["verdict"] == "unverifiable"


def test_against_results(capsys: pytest.CaptureFixture[str], sim_root: Path) -> None:
    code, out, _ = run(capsys, str(EXAMPLE), "--against", str(sim_root), "--format", "json")
    data = json.loads(out)
    assert code == 1
    assert data["runs"] and data["runs"] > 0
    a = next(f for f in data["figures"] if f["id"] == "a-fp8-dspark-k7")
    assert a["against"]["matches"] and a["against"]["matches"][0]["source"] == "simulated"
    code, out, _ = run(capsys, str(EXAMPLE), "--against", str(sim_root))
    assert "## Against runs" in out and "No run has" in out and "ratio (run / cited)" in out


@pytest.mark.parametrize("argv", [[], ["--format", "xml", "f.yaml"], ["f.yaml", "--bogus"]])
def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1


def test_a_missing_results_folder_exits_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = run(capsys, str(EXAMPLE), "--against", str(tmp_path / "nope"))
    assert code == 2 and "no such folder" in err


def test_bad_input_names_file_figure_key_and_accepted_values(
    capsys: pytest.CaptureFixture[str], write_figures: Write
) -> None:
    path = write_figures({"figures": {"spark-1": figure_entry(metric="decode_tsp")}})
    code, out, err = run(capsys, str(path))
    assert code == 2 and out == ""
    (msg,) = err.strip().splitlines()
    assert str(path) in msg and "figures.spark-1.metric" in msg and "accepted: decode_tps" in msg
    assert "did you mean 'decode_tps'" in msg


def test_every_mistake_of_a_figures_file_is_named_in_one_run(
    capsys: pytest.CaptureFixture[str], write_figures: Write
) -> None:
    entry = figure_entry(metric="decode_tsp", conditions={**BASE, "quantisation": "fp8"})
    entry["valeu"] = entry.pop("value")
    path = write_figures({"figures": {"spark-1": entry, "spark-2": figure_entry(unit="tok/sec")}})
    code, out, err = run(capsys, str(path))
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert all(line.startswith(f"specexp.check: {path}: figures.spark-") for line in lines), lines
    assert [line.split(": ")[2] for line in lines] == [
        "figures.spark-1.valeu",
        "figures.spark-1.metric",
        "figures.spark-1.conditions.quantisation",
        "figures.spark-2.unit",
    ]
    said = "\n".join(lines)
    assert "did you mean 'value'?" in said and "did you mean 'decode_tps'?" in said
    assert "did you mean 'quantization'?" in said and "accepted: tok/s, tokens/s" in said
    assert "missing value" not in said  # `valeu` is the mistake, named once


def test_the_module_runs_as_a_script() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "specexp.check", str(EXAMPLE), "--format", "json"],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
        timeout=120,
    )
    assert proc.returncode == 1 and json.loads(proc.stdout)["comparisons"]


# Fuzzing: whatever the file holds, the answer is a result (0, 1) or exit 2 with one line per
# mistake, each naming the file.
def _fuzz_check(path: Path, payload: bytes, capsys: pytest.CaptureFixture[str]) -> None:
    path.write_bytes(payload)
    code = main([str(path), "--format", "json"])
    out, err = capsys.readouterr()
    assert code in (0, 1, 2)
    if code == 2:
        lines = err.strip().splitlines()
        assert out == "" and lines
        assert all(line.startswith(f"specexp.check: {path}: ") for line in lines), lines
    else:
        json.loads(out)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(payload=st.binary(max_size=400))
def test_fuzzed_bytes(
    payload: bytes, tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    _fuzz_check(tmp_path_factory.mktemp("fz") / "f.yaml", payload, capsys)


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 10_000),
    st.floats(allow_nan=True),
    st.text(max_size=12),
    st.sampled_from(
        [
            "tok/s",
            "ms",
            "%",
            "e2e_tps",
            "decode_tps",
            "fp8",
            "dgx_spark",
            "mtp",
            "none",
            "cold",
            "k",
            "drafter",
        ]
    ),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
_condition = st.dictionaries(
    st.sampled_from([*BASE, "kv_cache_dtype", "gpu_count", "quantisation"]), _values, max_size=5
)
_figure = st.fixed_dictionaries(
    {},
    optional={
        "value": _values,
        "unit": st.sampled_from(["tok/s", "s", "ms", "%", "ratio", "tok", "x"]) | _values,
        "metric": st.sampled_from(
            [
                "e2e_tps",
                "decode_tps",
                "ttft_s",
                "acceptance_rate",
                "aggregate_tps",
                "acceptance_by_position",
                "output_identical",
                "e2e",
            ]
        )
        | _values,
        "source": st.sampled_from(["blog A", "blog B"]) | _values,
        "conditions": _condition | _values,
        "note": _values,
        "extra": _values,
    },
)
_doc = st.fixed_dictionaries(
    {},
    optional={
        "figures": st.dictionaries(
            st.sampled_from(["a", "b", "c"]) | st.integers(0, 3), _figure | _values, max_size=3
        )
        | _values,
        "comparisons": st.lists(
            st.fixed_dictionaries(
                {},
                optional={
                    "figures": st.lists(st.sampled_from(["a", "b", "c"]) | _scalars, max_size=3),
                    "vary": st.lists(
                        st.sampled_from(["drafter", "k", "quantization", "bogus"]) | _values,
                        max_size=2,
                    )
                    | _values,
                },
            )
            | _values,
            max_size=2,
        )
        | _values,
        "other": _values,
    },
)


@settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(doc=_doc)
def test_fuzzed_structures(
    doc: dict[str, Any],
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = yaml.safe_dump(doc, allow_unicode=True)
    _fuzz_check(tmp_path_factory.mktemp("fz") / "f.yaml", text.encode("utf-8"), capsys)


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(key=st.sampled_from([*figure_entry()]), value=_values)
def test_one_field_of_a_valid_figure_replaced(
    key: str,
    value: Any,
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
) -> None:
    doc = {
        "figures": {"a": figure_entry(**{key: value}), "b": figure_entry()},
        "comparisons": [{"figures": ["a", "b"], "vary": ["drafter"]}],
    }
    _fuzz_check(tmp_path_factory.mktemp("fz") / "f.yaml", yaml.safe_dump(doc).encode(), capsys)


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    key=st.sampled_from(
        [
            *BASE,
            "kv_cache_dtype",
            "gpu_count",
            "gpu_memory_utilization",
            "runtime_version",
            "drafter_config",
            "source",
            "repeats",
        ]
    ),
    value=_values,
)
def test_one_condition_replaced(
    key: str,
    value: Any,
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
) -> None:
    doc = {
        "figures": {"a": figure_entry(conditions={**BASE, key: value}), "b": figure_entry()},
        "comparisons": [{"figures": ["a", "b"]}],
    }
    _fuzz_check(tmp_path_factory.mktemp("fz") / "f.yaml", yaml.safe_dump(doc).encode(), capsys)


@pytest.mark.parametrize(
    "text",
    [
        "[" * 5000,
        "a: &x [*x]\nfigures: *x",
        "figures: !!binary AAAA",
        "figures: {a: {value: 1e999, unit: tok/s, metric: e2e_tps, source: x}}",
        "figures: {a: {value: .nan, unit: tok/s, metric: e2e_tps, source: x}}",
        "figures: {a: {value: 2024-13-45, unit: tok/s, metric: e2e_tps, source: x}}",
        "\ufefffigures: 1",
        "figures:\n  a:\n    <<: {value: 1}\n",
    ],
)
def test_pathological_yaml(text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _fuzz_check(tmp_path / "f.yaml", text.encode("utf-8"), capsys)


def test_a_users_own_quantization_is_cited_with_config_dir(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A published "4-bit AWQ" figure names a quantization conf/ does not ship: refused with the
    accepted names, and checked (its roofline from the user's file) once --config-dir gives it."""
    figures = tmp_path / "awq.yaml"
    entry = {
        "value": 40,
        "unit": "tok/s",
        "metric": "decode_tps",
        "source": "a forum post: 4-bit AWQ on an RTX 4090",
        "conditions": {
            "quantization": "awq_int4",
            "hardware": "rtx4090",
            "model": "mistral-7b-v0.3",
            "drafter": "none",
            "concurrency": 1,
        },
    }
    figures.write_text(yaml.safe_dump({"figures": {"awq": entry}}))
    code, _, err = run(capsys, str(figures))
    assert code == 2 and "quantization: unknown value 'awq_int4'; accepted: bf16" in err
    try:
        mine = str(REPO / "examples" / "my-configs")
        code, out, err = run(capsys, str(figures), "--config-dir", mine)
        assert code == 0 and err == "", err
        assert "GB of awq_int4 weights read per pass" in out
        code, _, err = run(capsys, str(figures), "--config-dir", str(tmp_path / "nowhere"))
        assert code == 2 and "--config-dir" in err and "no such folder" in err
    finally:
        paths.set_user_dirs([])

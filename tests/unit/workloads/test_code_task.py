"""The local code task `specexp_code` (docs/answers.md section 2): its scorer passes a correct
solution and fails wrong ones, every problem's reference solution passes its own tests, the task
is written the same way every time, and a code task without the opt-in to run the model's code is
refused when the sweep is composed. With lm-eval installed, lm-eval itself loads and scores the
task (its `dummy` model, no server), and refuses it without the opt-in."""

from __future__ import annotations

import hashlib
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from specexp.run.compose import to_spec
from specexp.spec.errors import SpecError
from specexp.workloads import code_problems, code_score, code_task
from specexp.workloads.tasks import LOCAL_TASKS, SCORE_KEYS, read_samples, write_local_task

TESTS = "assert add(2, 3) == 5\nassert add(-1, 1) == 0"


def score(answer: str, tests: str = TESTS) -> float:
    return code_score.pass_at_1([tests], [answer])


def test_a_correct_solution_passes_fenced_or_bare() -> None:
    body = "def add(a, b):\n    return a + b"
    assert score(f"Here it is:\n\n```python\n{body}\n```\n\nIt adds them.") == 1.0
    assert score(body) == 1.0  # a completion model's bare code
    assert score(f"```python\n{body}\n    ") == 1.0  # cut off by the stop sequence
    assert score(f"```python\nimport math\n```\n```py\n{body}\n```") == 1.0  # the block with a def


@pytest.mark.parametrize(
    "answer",
    [
        "```python\ndef add(a, b):\n    return a - b\n```",  # wrong
        "```python\ndef add(a, b)\n    return a + b\n```",  # a syntax error
        "```python\ndef plus(a, b):\n    return a + b\n```",  # not the function asked for
        "The answer is to add the numbers.",  # no code at all
        "",
    ],
    ids=["wrong", "syntax_error", "no_function", "prose", "empty"],
)
def test_a_wrong_answer_fails(answer: str) -> None:
    assert score(answer) == 0.0


def test_an_endless_loop_fails_at_the_timeout() -> None:
    started = time.monotonic()
    assert not code_score.run_tests("def add(a, b):\n    while True:\n        pass", TESTS, 2.0)
    assert time.monotonic() - started < 10


def test_the_code_runs_isolated_in_a_scratch_folder(tmp_path: Path) -> None:
    probe = tmp_path / "probe"
    code = (
        "import os, sys\n"
        f"open({str(probe)!r}, 'w').write(os.getcwd() + '\\n' + repr(sys.flags.isolated)"
        " + '\\n' + repr(sorted(k for k in os.environ if k != 'LC_CTYPE')))"
    )
    assert code_score.run_tests(code, "")
    cwd, isolated, env = probe.read_text().splitlines()
    assert not Path(cwd).exists() and Path(cwd).name.startswith("specexp_code_")  # removed after
    assert isolated == "1" and env == "[]"


def test_every_problem_passes_its_own_tests_with_its_reference_solution() -> None:
    problems = code_problems.problems()
    items = [code_task.item(i, p) for i, p in enumerate(problems)]
    assert 40 <= len(items) <= 45
    assert len({it["entry_point"] for it in items}) == len(items)
    for it in items:
        assert it["test"].count("assert ") >= 3, it["task_id"]
        assert f"`{it['entry_point']}(" in it["prompt"] and "```python" in it["prompt"]
        fenced = f"Sure:\n\n```python\n{it['canonical_solution']}```\n"
        assert code_score.pass_at_1([it["test"]], [fenced]) == 1.0, it["task_id"]
    # one family after another, so that --limit 10 sees ten kinds of problem
    firsts = ["sum_multiples_of_3_or_5", "fizzbuzz_fizz_buzz", "count_vowels", "caesar_shift_1"]
    assert [it["entry_point"] for it in items[:4]] == firsts


def _digest(folder: Path) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes().replace(str(folder).encode(), b"X")).hexdigest()
        for p in sorted(folder.iterdir())
        if p.is_file()
    }


def test_the_task_is_written_the_same_way_every_time(tmp_path: Path) -> None:
    one = code_task.write_code_task(tmp_path / "a", 60)
    two = LOCAL_TASKS["specexp_code"](tmp_path / "b", 60)
    assert _digest(one) == _digest(two)
    assert sorted(_digest(one)) == ["specexp_code.jsonl", "specexp_code.yaml", "utils.py"]
    assert len((one / "specexp_code.jsonl").read_text().splitlines()) == len(
        code_problems.problems()
    )
    assert len(LOCAL_TASKS["specexp_code"](tmp_path / "c", 5).joinpath(
        "specexp_code.jsonl").read_text().splitlines()) == 5  # fmt: skip
    assert (one / "utils.py").read_text() == Path(code_score.__file__).read_text()


def test_the_task_yaml_declares_unsafe_code_and_a_metric_specexp_reads(tmp_path: Path) -> None:
    folder = code_task.write_code_task(tmp_path, 3)
    text = (folder / "specexp_code.yaml").read_text()
    config = yaml.load(text.replace("!function ", ""), Loader=yaml.SafeLoader)
    assert config["unsafe_code"] is True and config["task"] == "specexp_code"
    assert config["metric_list"][0]["metric"] == "utils.pass_at_1"
    assert code_score.pass_at_1.__name__ in SCORE_KEYS  # lm-eval names the metric after it
    assert config["generation_kwargs"]["until"] == ["\n```\n\n"]


def test_the_arithmetic_task_states_its_answer_format(tmp_path: Path) -> None:
    folder = write_local_task(tmp_path, 3)
    config = yaml.safe_load((folder / "specexp_arithmetic.yaml").read_text())
    assert '"#### <number>"' in config["doc_to_text"]
    assert "\n\n" not in config["generation_kwargs"]["until"]  # a chat answer's blank line
    assert config["metadata"]["version"] == 2.0


@pytest.mark.parametrize("name", ["specexp_code", "humaneval", "gsm8k,mbpp_instruct"])
def test_a_code_task_without_the_opt_in_is_refused_when_composed(
    compose_cfg: Callable[..., Any], name: str
) -> None:
    quoted = f"'{name}'" if "," in name else name  # lm-eval's task list, one string to Hydra
    overrides = ["workload=task_scores", f"workload.task.name={quoted}"]
    data, choices = compose_cfg(*overrides)
    with pytest.raises(SpecError) as info:
        to_spec(data, choices, overrides)
    line = info.value.line()
    assert "\n" not in line and "workload.task.confirm_run_unsafe_code=true" in line
    assert f"task {name} runs the model's code" in line
    opted = [*overrides, "workload.task.confirm_run_unsafe_code=true"]
    data, choices = compose_cfg(*opted)
    assert to_spec(data, choices, opted).workload.task.confirm_run_unsafe_code


def test_a_task_that_runs_no_code_needs_no_opt_in(compose_cfg: Callable[..., Any]) -> None:
    overrides = ["workload=task_scores", "workload.task.name=gsm8k"]
    data, choices = compose_cfg(*overrides)
    assert to_spec(data, choices, overrides).workload.task.name == "gsm8k"


LM_EVAL = os.environ.get("SPECEXP_LM_EVAL") or str(
    Path("~/.cache/specexp/lm-eval/0.4.13/venv/bin/lm_eval").expanduser()
)


@pytest.mark.skipif(
    not Path(LM_EVAL).is_file(), reason="lm-eval is not installed (scripts/install-lm-eval.sh)"
)
def test_lm_eval_loads_and_scores_the_task_and_refuses_it_without_the_opt_in(
    tmp_path: Path,
) -> None:
    folder = code_task.write_code_task(tmp_path / "tasks", 3)
    argv = [LM_EVAL, "--model", "dummy", "--tasks", "specexp_code", "--include_path", str(folder)]
    argv += ["--output_path", str(tmp_path / "out"), "--log_samples", "--limit", "3"]
    env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    refused = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
    assert refused.returncode != 0 and "confirm_run_unsafe_code" in refused.stderr + refused.stdout
    done = subprocess.run(
        [*argv, "--confirm_run_unsafe_code"], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    items, summary = read_samples(tmp_path / "out", "specexp_code")
    assert sorted(items) == [f"specexp_code/{i}" for i in range(3)]
    assert all(s.score == 0.0 and s.response == "lol" for s in items.values())  # no code: fails
    assert summary["scores"]["pass_at_1,none"] == 0.0

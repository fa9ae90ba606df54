"""Dataset files: every category gets its own measurement and acceptance; bad files are named."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from specexp.measure.request_log import read_requests
from specexp.run.job import run_job
from specexp.run.plan import make_cell
from specexp.spec.errors import SpecError
from specexp.spec.input_files import load_dataset

SMALL = (
    "workload=dataset",
    "model=qwen3-8b",
    "quantization=bf16",
    "hardware=h200",
    "drafter=eagle3",
    "workload.output_tokens=24",
    "workload.concurrency=[2]",
)


def _run(
    make_spec: Callable[..., Any], tmp_path: Path, *overrides: str
) -> tuple[dict[str, Any], Path]:
    record = run_job(
        make_cell(make_spec("runtime=sim", *SMALL, *overrides)), tmp_path / "job", None, [], {}
    )
    assert record is not None
    return json.loads(record.to_json()), tmp_path / "job"


def test_each_category_of_a_jsonl_file_gets_its_acceptance(
    make_spec: Callable[..., Any], tmp_path: Path
) -> None:
    result, job_dir = _run(make_spec, tmp_path)
    assert result["status"] == "ok", result["error"]
    prompts = load_dataset("conf/workload/data/prompts_by_category.jsonl")
    expected = Counter(p.category for p in prompts)
    got = {m["conditions"]["category"]: m for m in result["measurements"]}
    assert set(got) == set(expected)
    for category, m in got.items():
        assert len(m["requests"]) == expected[category]  # that category's prompts, and only them
        assert 0 < m["metrics"]["acceptance_rate"] < 1
        assert m["metrics"]["acceptance_by_position"]
    measured = [line for line in read_requests(job_dir) if not line["warmup"]]
    assert Counter(line["category"] for line in measured) == expected


def test_a_categorys_last_batch_shorter_than_the_concurrency_is_measured_at_its_own(
    make_spec: Callable[..., Any], tmp_path: Path
) -> None:
    path = tmp_path / "five.jsonl"
    path.write_text(
        "".join(json.dumps({"prompt": f"item {i}", "category": "qa"}) + "\n" for i in range(5))
    )
    result, _ = _run(
        make_spec, tmp_path, f"workload.dataset_file={path}", "workload.concurrency=[2]"
    )
    assert result["status"] == "ok", result["error"]
    by_concurrency = {m["conditions"]["concurrency"]: m for m in result["measurements"]}
    # five prompts two at a time: two windows of two, then one prompt alone, which is not a window
    # at concurrency 2 and is not reported as one
    assert sorted(by_concurrency) == [1, 2]
    assert len(by_concurrency[2]["requests"]) == 4 and len(by_concurrency[1]["requests"]) == 1


def test_sharegpt_conversations_are_sent_up_to_their_last_human_message(tmp_path: Path) -> None:
    prompts = load_dataset("conf/workload/data/sharegpt_sample.json")
    assert [p.category for p in prompts] == ["multi-turn", "sharegpt"]
    assert [role for role, _ in prompts[0].messages] == ["user", "assistant", "user"]
    path = tmp_path / "chat.json"
    path.write_text(
        json.dumps(
            [{"conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "yo"}]}]
        )
    )
    (only,) = load_dataset(str(path))
    assert only.messages == (("user", "hi"),)  # the reply to be generated is not sent
    path.write_text(
        json.dumps(
            [
                {
                    "conversations": [
                        {"role": "system", "content": "be brief"},
                        {"role": "user", "content": "hi"},
                    ],
                    "category": "qa",
                }
            ]
        )
    )
    (openai_shape,) = load_dataset(str(path))
    assert (
        openai_shape.messages == (("system", "be brief"), ("user", "hi"))
        and openai_shape.category == "qa"
    )


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        (
            "bad.jsonl",
            '{"prompt": "a"}\n{"text": "b"}\n',
            "bad.jsonl:2: prompt: missing or not text",
        ),
        ("bad.jsonl", '{"prompt": "a"}\n{oops\n', "bad.jsonl:2: line: not JSON"),
        ("bad.json", '[{"messages": []}]', "bad.json: item 0: conversations: missing or empty"),
        (
            "bad.json",
            '[{"conversations": [{"speaker": "user", "text": "x"}]}]',
            'bad.json: item 0: conversations[0]: expected {"from": "human" or "gpt", "value": "text"}',
        ),
        ("bad.json", '[{"conversations": [', "bad.json:1: file: not JSON"),
    ],
)
def test_an_unknown_shape_is_a_one_line_error_naming_the_file(
    make_spec: Callable[..., Any], tmp_path: Path, name: str, content: str, expected: str
) -> None:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    with pytest.raises(SpecError) as err:
        make_spec("runtime=sim", *SMALL, f"workload.dataset_file={path}")
    message = str(err.value)
    assert expected in message and str(path) in message and "\n" not in message


def test_a_missing_dataset_file_is_named(make_spec: Callable[..., Any], tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"nope\.json: workload\.dataset_file: no such file"):
        make_spec("runtime=sim", *SMALL, f"workload.dataset_file={tmp_path / 'nope.json'}")

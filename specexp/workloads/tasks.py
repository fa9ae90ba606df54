"""Task scores through lm-evaluation-harness (`workload.task`, docs/answers.md section 2): lm-eval
runs against the server the job started, through its OpenAI-compatible model types, with its
per-sample log kept, and each item's score goes into the record, so that a drafter run can be
paired with its baseline item by item when the records are read.

lm-eval runs from its own virtual environment (scripts/install-lm-eval.sh; `SPECEXP_LM_EVAL` or
the cached one under ~/.cache/specexp/lm-eval/<LM_EVAL_VERSION>/, else `lm_eval` on PATH), as an
argv list. An API key, where the runtime names one, reaches it only in its environment.

`specexp_arithmetic` is a task specexp writes itself: GSM8K's format (a question, then a worked
answer ending in `#### N`) with exact answers, scored by GSM8K's strict match, so the tests run
offline; a tiny model's score on it is near zero, and the pairing, the statistics and the records
are what they check. Its prompt states the answer's format: a chat model asked zero-shot answers
"51 - 99 = -48", which strict match reads as no answer (a score of 0 however right it is).
`specexp_code` (`code_task`) is the other local task: small Python functions run against their
tests, with lm-eval's opt-in to run a model's code.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from specexp.measure.events import Point, RuntimeFailure, TaskScore, Window
from specexp.runtimes.base import Runtime
from specexp.runtimes.http.server_runtime import HttpRuntime
from specexp.spec.cache import cache_dir
from specexp.spec.workload import TaskSpec, WorkloadSpec
from specexp.workloads.code_task import CODE_TASK, write_code_task

LM_EVAL_VERSION = "0.4.13"
LOCAL_TASK = "specexp_arithmetic"
SCORE_KEYS = ("exact_match", "acc", "pass@1", "pass_at_1", "acc_norm", "em")
"""The per-sample metric read as the item's score, the first one a sample has."""

TASK_YAML = """\
task: specexp_arithmetic
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
fewshot_split: test
output_type: generate_until
doc_to_text: "Question: {{{{question}}}}\\nGive the result on the last line, written as \\"#### <number>\\".\\nAnswer:"
doc_to_target: "{{{{answer}}}}"
generation_kwargs:
  until: ["Question:"]
  do_sample: false
  temperature: 0.0
filter_list:
  - name: strict-match
    filter:
      - function: regex
        regex_pattern: "#### (\\\\-?[0-9\\\\.\\\\,]+)"
      - function: take_first
metric_list:
  - metric: exact_match
    aggregation: mean
    higher_is_better: true
    ignore_case: true
    ignore_punctuation: false
    regexes_to_ignore: [",", "\\\\$", "(?s).*#### ", "\\\\.$"]
metadata:
  version: 2.0
"""


def write_local_task(folder: Path, items: int, seed: int = 0) -> Path:
    """The `specexp_arithmetic` task (its YAML and `items` questions) in `folder`; returns it."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / "specexp_arithmetic.jsonl"
    lines = []
    for _ in range(items):
        a, b = rng.randint(2, 99), rng.randint(2, 99)
        op = rng.choice("+-*")
        value = a + b if op == "+" else a - b if op == "-" else a * b
        question = f"What is {a} {op} {b}?"
        lines.append(
            json.dumps({"question": question, "answer": f"{a} {op} {b} = {value}\n#### {value}"})
        )
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    (folder / "specexp_arithmetic.yaml").write_text(TASK_YAML.format(data=data), encoding="utf-8")
    return folder


LOCAL_TASKS = {LOCAL_TASK: write_local_task, CODE_TASK: write_code_task}
"""The tasks specexp writes itself into the job's folder (no download), by name."""


def lm_eval_executable() -> str:
    """SPECEXP_LM_EVAL, else the cached install, else `lm_eval` on PATH."""
    given = os.environ.get("SPECEXP_LM_EVAL")
    if given:
        return given
    cached = cache_dir() / "lm-eval" / LM_EVAL_VERSION / "venv" / "bin" / "lm_eval"
    if cached.is_file():
        return str(cached)
    found = shutil.which("lm_eval")
    if found:
        return found
    raise RuntimeFailure(
        "failed",
        "lm_eval_missing",
        "workload.task runs lm-evaluation-harness: none found (run scripts/install-lm-eval.sh, or "
        "set SPECEXP_LM_EVAL to its lm_eval executable)",
    )


def lm_eval_argv(
    executable: str, task: TaskSpec, base_url: str, model: str, out: Path, include: Path | None
) -> list[str]:
    chat = task.model_type == "local-chat-completions"
    path = "/v1/chat/completions" if chat else "/v1/completions"
    model_args = ",".join(
        [
            f"model={model}",
            f"base_url={base_url}{path}",
            f"num_concurrent={task.num_concurrent}",
            "max_retries=1",
            "tokenized_requests=False",
            f"max_gen_toks={task.max_gen_toks}",
            *([] if chat else ["tokenizer_backend=None"]),
        ]
    )
    argv = [
        executable,
        "--model",
        task.model_type,
        "--model_args",
        model_args,
        "--tasks",
        task.name,
        "--output_path",
        str(out),
        "--log_samples",
        "--seed",
        "0",
    ]
    if chat:
        argv.append("--apply_chat_template")
    if task.limit is not None:
        argv += ["--limit", str(task.limit)]
    if task.fewshot is not None:
        argv += ["--num_fewshot", str(task.fewshot)]
    if include is not None:
        argv += ["--include_path", str(include)]
    if task.confirm_run_unsafe_code:
        argv.append("--confirm_run_unsafe_code")
    return argv


def read_samples(out: Path, task: str) -> tuple[dict[str, TaskScore], dict[str, Any]]:
    """Each item's score from lm-eval's per-sample log (its first filter), and its summary."""
    files = sorted(out.rglob(f"samples_{task}_*.jsonl"))
    if not files:
        raise RuntimeFailure("failed", "lm_eval_output", f"lm-eval wrote no samples for {task}")
    items: dict[str, TaskScore] = {}
    first_filter = None
    for line in files[-1].read_text(encoding="utf-8").splitlines():
        sample = json.loads(line)
        name = sample.get("filter")
        first_filter = first_filter or name
        if name != first_filter:
            continue
        key = next((k for k in SCORE_KEYS if k in sample), None)
        if key is None:
            continue
        response = sample.get("filtered_resps") or sample.get("resps") or [""]
        while isinstance(response, list) and response:
            response = response[0]
        items[f"{task}/{sample['doc_id']}"] = TaskScore(
            float(sample[key]), str(sample.get("target", ""))[:200], str(response)[:200]
        )
    summary_files = sorted(out.rglob("results_*.json"))
    summary = json.loads(summary_files[-1].read_text()) if summary_files else {}
    scores = (summary.get("results") or {}).get(task, {})
    return items, {
        "task": task,
        "filter": first_filter,
        "scores": {k: v for k, v in scores.items() if isinstance(v, (int, float))},
        "lm_eval_version": (summary.get("versions") or {}).get(task),
    }


def drive_task(runtime: Runtime, workload: WorkloadSpec) -> Iterator[Window]:
    task, job_dir = workload.task, runtime.job_dir
    assert task is not None
    if not isinstance(runtime, HttpRuntime):
        raise RuntimeFailure(
            "refused", "no_endpoint", f"runtime={runtime.name} has no HTTP endpoint for lm-eval"
        )
    include = Path(task.include_path).expanduser() if task.include_path else None
    if include is None and task.name in LOCAL_TASKS:
        include = LOCAL_TASKS[task.name](job_dir / "lm_eval_tasks", task.items)
    out = job_dir / "lm_eval"
    argv = lm_eval_argv(
        lm_eval_executable(), task, runtime.base_url, runtime.served_model(), out, include
    )
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_TOKEN"))}
    key_env = getattr(runtime.spec.runtime, "api_key_env", None)
    env["OPENAI_API_KEY"] = os.environ.get(key_env, "EMPTY") if key_env else "EMPTY"
    if task.confirm_run_unsafe_code:  # the user's opt-in: Hugging Face's code_eval (HumanEval's)
        env["HF_ALLOW_CODE_EVAL"] = "1"
    before = runtime.counters()
    log = job_dir / "lm_eval.log"
    with log.open("w", encoding="utf-8") as sink:
        done = subprocess.run(argv, stdout=sink, stderr=subprocess.STDOUT, env=env, check=False)
    delta = runtime.counters().delta(before)
    if done.returncode != 0:
        tail = log.read_text(encoding="utf-8", errors="replace")[-2000:]
        raise RuntimeFailure(
            "failed", "lm_eval_failed", f"lm-eval exited with {done.returncode}", tail
        )
    items, summary = read_samples(out, task.name)
    summary["argv"] = [a for a in argv if "key" not in a.lower()]
    point = Point(workload.prompt_tokens, task.num_concurrent, "cold")
    yield Window(point, [], delta, task_items=items, task=summary)

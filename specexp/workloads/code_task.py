"""`specexp_code`: a small code task specexp writes itself (docs/answers.md section 2), so that
task scores of a code model run offline where HumanEval's data set cannot be downloaded.

The 41 problems (`code_problems`: self-contained Python functions from templated families) come
in a fixed order that takes one problem of each family in turn, so that `--limit N` sees N kinds
of problem. Each item is an instruction naming the function's signature, what it returns and one
worked call; its tests are assert lines whose expected values come from running specexp's
reference solution here.

The prompt asks for the function in a ```python block rather than HumanEval's "complete this
body": lm-eval's default model type here is `local-chat-completions`, where the chat template
wraps the prompt in a user turn and the model answers in a turn of its own (it restates the whole
function, in a fence, whatever it is asked), so a body to be appended to the prompt cannot be
had; the scorer (`code_score`, copied next to the YAML as `utils.py`) takes the fenced code, or
the bare text of a completion model, and runs it with the tests. The task declares
`unsafe_code: true`: lm-eval runs it only with `--confirm_run_unsafe_code`
(`workload.task.confirm_run_unsafe_code=true`, checked when the sweep is composed).
"""

from __future__ import annotations

import json
from pathlib import Path

from specexp.workloads import code_score
from specexp.workloads.code_problems import Problem, problems

CODE_TASK = "specexp_code"

TASK_YAML = """\
task: specexp_code
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
unsafe_code: true           # the scorer runs the model's code: lm-eval's --confirm_run_unsafe_code
output_type: generate_until
doc_to_text: "{{{{prompt}}}}"
doc_to_target: "{{{{test}}}}"
num_fewshot: 0
generation_kwargs:
  until: ["\\n```\\n\\n"]     # the end of the code block, before any explanation after it
  max_gen_toks: 384         # the task's own, as HumanEval's 1024: lm-eval prefers it to model_args
  do_sample: false
  temperature: 0.0
metric_list:
  - metric: !function utils.pass_at_1
    aggregation: mean
    higher_is_better: true
metadata:
  version: 1.0
"""


def item(index: int, problem: Problem) -> dict[str, str]:
    """One item of the task: its prompt, its tests (expected values from the reference) and the
    reference itself (HumanEval's `canonical_solution`; never shown to the model)."""
    space: dict[str, object] = {}
    exec(problem.reference, space)  # specexp's own reference solution, to compute expectations
    fn = space[problem.entry_point]
    asserts = []
    for args in problem.calls:
        expected = eval(f"fn({args})", {"fn": fn})
        asserts.append(f"assert {problem.entry_point}({args}) == {expected!r}")
    example = asserts[0].removeprefix("assert ").split(" == ", 1)
    prompt = (
        f"Write a Python function `{problem.entry_point}{problem.signature}` that "
        f"{problem.description}.\nFor example, `{example[0]}` returns `{example[1]}`.\n"
        "Reply with the complete function in one ```python code block, without tests or usage "
        "examples."
    )
    return {
        "task_id": f"{CODE_TASK}/{index}",
        "prompt": prompt,
        "entry_point": problem.entry_point,
        "test": "\n".join(asserts),
        "canonical_solution": problem.reference,
    }


def write_code_task(folder: Path, items: int) -> Path:
    """The `specexp_code` task in `folder` (its YAML, its first `items` problems, at most all of
    them, and its scorer as `utils.py`); returns the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / f"{CODE_TASK}.jsonl"
    rows = [json.dumps(item(i, p)) for i, p in enumerate(problems()[:items])]
    data.write_text("\n".join(rows) + "\n", encoding="utf-8")
    (folder / "utils.py").write_text(
        Path(code_score.__file__).read_text(encoding="utf-8"), encoding="utf-8"
    )
    (folder / f"{CODE_TASK}.yaml").write_text(TASK_YAML.format(data=data), encoding="utf-8")
    return folder

"""Every record says what its weights and its prompts were (docs/models.md section 3), so that
acceptance measured on random weights or random words is never read as a drafter's."""

from __future__ import annotations

import pytest

from specexp.measure.conditions import run_conditions
from specexp.run.compose import build_spec


@pytest.mark.parametrize(
    ("overrides", "weights"),
    [
        (
            ["runtime=llamacpp", "hardware=cpu", "model=qwen2.5-coder-1.5b", "quantization=q4_k_m"],
            "trained",
        ),
        (["runtime=llamacpp", "hardware=cpu", "model=tiny", "quantization=f32"], "random"),
        (
            [
                "runtime=vllm",
                "hardware=h200",
                "model=qwen3-8b",
                "quantization=bf16",
                "runtime.load_format=dummy",
            ],
            "dummy",
        ),
        (["runtime=vllm", "hardware=h200", "model=qwen3-8b", "quantization=bf16"], "trained"),
        (
            [
                "runtime=llamacpp",
                "hardware=cpu",
                "model=tiny",
                "quantization=f32",
                "runtime.model_path=/m.gguf",
            ],
            None,
        ),
        ([], None),  # the simulator serves no weights
    ],
)
def test_the_weights_condition(overrides: list[str], weights: str | None) -> None:
    spec = build_spec(overrides)
    assert run_conditions(spec, "measured").weights == weights


@pytest.mark.parametrize(
    ("overrides", "text"),
    [
        (["workload=edit_heavy"], "real"),
        (["workload=prefix_cache"], "real"),
        (["workload=fresh_generation"], "real"),
        (["workload=prefix_cache", "workload.material=filler"], "random"),
        (["workload=agentic_sessions", "workload.session.turn_material=filler"], "random"),
    ],
)
def test_the_prompt_text_condition(overrides: list[str], text: str) -> None:
    spec = build_spec(overrides)
    assert run_conditions(spec, "simulated").prompt_text == text

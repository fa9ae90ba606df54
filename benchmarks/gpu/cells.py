"""The cells of the H200 llama.cpp benchmark: one specexp sweep per part, measured and simulated.

Every part runs the Qwen3-8B shape in BF16 on hardware=h200, cold (unique prompts; llama-server's
host prompt cache off, as runtime=llamacpp starts it). The same overrides, without the engine's
paths, give the simulator's cells.
"""

from __future__ import annotations

from dataclasses import dataclass

COMMON = ["model=qwen3-8b", "quantization=bf16", "hardware=h200"]
DECODE = ["workload=concurrency", "workload.concurrency=[1,8,32]", "workload.prompt_tokens=512",
          "workload.output_tokens=256", "workload.repeats=2", "runtime.max_model_len=2048"]
PREFILL = ["workload=prefill_sweep", "workload.prompt_lengths=[1024,2048,4096,8192,16384,32768]",
           "workload.repeats=2", "runtime.max_model_len=33792"]
DRAFT = ["drafter=draft_model", "draft_model=qwen3-0.6b", "k=4"]


@dataclass(frozen=True)
class Part:
    name: str
    overrides: list[str]
    """Overrides shared by the measured and the simulated sweep."""
    engine_only: tuple[str, ...] = ()
    """Overrides for the real engine alone (extra llama-server flags)."""
    draft: bool = False

    def measured(self, binary: str, model: str, draft: str) -> list[str]:
        paths = [f"runtime.executable={binary}", f"runtime.model_path={model}", "runtime.start_timeout_s=300"]
        if self.draft:
            paths.append(f"runtime.draft_model_path={draft}")
        return ["runtime=llamacpp", *COMMON, *self.overrides, *paths, *self.engine_only]

    def simulated(self) -> list[str]:
        return ["runtime=sim", *COMMON, *self.overrides]


PARTS = [
    Part("decode", ["drafter=none", *DECODE]),
    Part("prefill", ["drafter=none", *PREFILL]),
    Part("decode-draft", [*DRAFT, *DECODE], draft=True),
    # the same prefill with llama-server's default host prompt cache (8192 MiB): what it adds to a cold TTFT
    Part("prefill-host-cache", ["drafter=none", "workload=prefill_sweep", "workload.prompt_lengths=[8192,32768]",
                                "workload.repeats=2", "runtime.max_model_len=33792"],
         engine_only=("runtime.extra_args=[--cache-ram,8192]",)),
]

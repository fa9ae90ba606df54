"""The cells of the H200 llama.cpp benchmark: one specexp sweep per part, measured and simulated.

Every part runs the Qwen3-8B shape in BF16 on hardware=h200, cold (unique prompts; llama-server's
host prompt cache off, as runtime=llamacpp starts it). The same overrides, without the engine's
paths, give the simulator's cells.
"""

from __future__ import annotations

from dataclasses import dataclass

HARDWARE = "hardware=h200"
DECODE = [
    "workload=concurrency",
    "workload.concurrency=[1,8,32]",
    "workload.prompt_tokens=512",
    "workload.output_tokens=256",
    "workload.repeats=2",
    "runtime.max_model_len=2048",
]
PREFILL = [
    "workload=prefill_sweep",
    "workload.prompt_lengths=[1024,2048,4096,8192,16384,32768]",
    "workload.repeats=2",
    "runtime.max_model_len=33792",
]
DRAFT = ["drafter=draft_model", "draft_model=qwen3-0.6b", "k=4"]


@dataclass(frozen=True)
class Part:
    name: str
    overrides: list[str]
    """Overrides shared by the measured and the simulated sweep."""
    engine_only: tuple[str, ...] = ()
    """Overrides for the real engine alone (extra llama-server flags)."""
    draft: bool = False
    dtype: str = "bf16"
    """Weights of the target GGUF (bf16 or f16); the overrides name the matching quantization."""
    extra: bool = False
    """Not in the first device call's set: run with --parts."""
    env: tuple[tuple[str, str], ...] = ()
    """Environment variables for the real engine's run (llama.cpp reads some at start)."""
    model: str = "qwen3-8b"
    """The target's conf/model/ entry, written by specexp.models.shaped_gguf."""

    @property
    def common(self) -> list[str]:
        return [f"model={self.model}", HARDWARE]

    def measured(self, binary: str, model: str, draft: str) -> list[str]:
        paths = [
            f"runtime.executable={binary}",
            f"runtime.model_path={model}",
            "runtime.start_timeout_s=300",
        ]
        if self.draft:
            paths.append(f"runtime.draft_model_path={draft}")
        return [
            "runtime=llamacpp",
            *self.common,
            f"quantization={self.dtype}",
            *self.overrides,
            *paths,
            *self.engine_only,
        ]

    def simulated(self) -> list[str]:
        return ["runtime=sim", *self.common, f"quantization={self.dtype}", *self.overrides]


def _decode(concurrency: str, prompt: int, output: int) -> list[str]:
    return [
        "workload=concurrency",
        f"workload.concurrency={concurrency}",
        f"workload.prompt_tokens={prompt}",
        f"workload.output_tokens={output}",
        "workload.repeats=2",
        f"runtime.max_model_len={prompt + output + 256}",
    ]


PARTS = [
    Part("decode", ["drafter=none", *DECODE]),
    Part("prefill", ["drafter=none", *PREFILL]),
    Part("decode-draft", [*DRAFT, *DECODE], draft=True),
    # the same prefill with llama-server's default host prompt cache (8192 MiB): what it adds to a cold TTFT
    Part(
        "prefill-host-cache",
        [
            "drafter=none",
            "workload=prefill_sweep",
            "workload.prompt_lengths=[8192,32768]",
            "workload.repeats=2",
            "runtime.max_model_len=33792",
        ],
        engine_only=("runtime.extra_args=[--cache-ram,8192]",),
    ),
    # a second call: more concurrency levels, a longer context (and TTFT under concurrency), F16 weights,
    # and the first part again (run-to-run spread on a fresh machine)
    Part("decode-c1-32", ["drafter=none", *_decode("[1,2,4,8,16,32]", 512, 128)], extra=True),
    Part("decode-4k", ["drafter=none", *_decode("[1,8,32]", 4096, 128)], extra=True),
    Part("decode-f16", ["drafter=none", *_decode("[1,8,32]", 512, 128)], dtype="f16", extra=True),
    Part("decode-again", ["drafter=none", *DECODE], extra=True),
    # a fourth call: pure decode by the number of slots (256 tokens out, so decode steps outnumber
    # the prefill steps), with llama.cpp's CUDA graphs as it runs them and with them switched off:
    # how the step's fixed and per-slot costs split
    Part("decode-slots", ["drafter=none", *_decode("[1,2,4,8,16,24,32]", 512, 256)], extra=True),
    Part(
        "decode-slots-no-graphs",
        ["drafter=none", *_decode("[1,2,4,8,16,24,32]", 512, 256)],
        extra=True,
        env=(("GGML_CUDA_DISABLE_GRAPHS", "1"),),
    ),
    # a fifth call: decode at c = 32 with 2,048 and 1,024 tokens of context per slot, alternately (the
    # first call's 31.1 tok/s came with 2,048, the fourth call's 36.8 with 1,024): context size or spread?
    *(
        Part(
            f"decode-c32-ctx{ctx}{tag}",
            [
                "drafter=none",
                "workload=concurrency",
                "workload.concurrency=[32]",
                "workload.prompt_tokens=512",
                "workload.output_tokens=256",
                "workload.repeats=3",
                f"runtime.max_model_len={ctx}",
            ],
            extra=True,
        )
        for ctx, tag in ((2048, ""), (1024, ""), (2048, "-again"), (1024, "-again"))
    ),
    # a sixth call: the trace's decode windows again with every token's arrival time, to see the steps
    # in which slots decode while other prompts prefill
    Part(
        "decode-chunks",
        [
            "drafter=none",
            "workload=concurrency",
            "workload.concurrency=[1,2,4,8,16,32]",
            "workload.prompt_tokens=512",
            "workload.output_tokens=32",
            "workload.repeats=3",
            "runtime.max_model_len=2048",
            "workload.record_chunk_times=true",
        ],
        extra=True,
        engine_only=("runtime.extra_args=[--log-timestamps,--log-prefix]",),
    ),
    # a seventh call: on one machine, pure decode (256 tokens out) and the trace's job (32 out) in turn,
    # twice, each on a fresh server, every token's arrival time kept: is the spread between calls the
    # machine's (its CPU runs the sampler) or the job's?
    *(
        Part(f"host-{job}-{n}", [*overrides, "workload.record_chunk_times=true"], extra=True)
        for n in (1, 2)
        for job, overrides in (
            ("slots", ["drafter=none", *_decode("[1,2,4,8,16,24,32]", 512, 256)]),
            (
                "chunks",
                [
                    "drafter=none",
                    "workload=concurrency",
                    "workload.concurrency=[1,2,4,8,16,32]",
                    "workload.prompt_tokens=512",
                    "workload.output_tokens=32",
                    "workload.repeats=3",
                    "runtime.max_model_len=2048",
                ],
            ),
        )
    ),
    # an eighth call: the prefix_cache workload (a prompt sent cold, then its prefix again with a new
    # suffix, warm, max_tokens = 1) on one slot: what a warm request costs a real engine besides the
    # recomputed tail (fixed costs, attention over the cached context, the first token's sampling)
    Part(
        "prefix-cache",
        [
            "drafter=none",
            "workload=prefix_cache",
            "workload.prompt_lengths=[3700,16000,32000]",
            "runtime.max_model_len=33792",
        ],
        extra=True,
    ),
    # a ninth call: the studies' hybrid model (the Qwen3.8-27B shape in llama.cpp's qwen35 architecture,
    # BF16, 52 GB) on one slot: cold against warm TTFT (a warm prompt resumes from a context checkpoint),
    # then decode at c = 1, 4, 16: Gated DeltaNet's prefill and decode on a real engine and GPU
    Part(
        "hybrid-prefix-cache",
        [
            "drafter=none",
            "workload=prefix_cache",
            "workload.prompt_lengths=[3700,16000,32000]",
            "runtime.max_model_len=33792",
        ],
        extra=True,
        model="qwen3.8-27b",
    ),
    Part(
        "hybrid-decode",
        ["drafter=none", *_decode("[1,4,16]", 512, 128)],
        extra=True,
        model="qwen3.8-27b",
    ),
    # a tenth: the same prefix_cache job with llama-server's debug log, which stamps each checkpoint's
    # decision and its end: the copy's own duration, not inferred from TTFT
    Part(
        "hybrid-checkpoints",
        [
            "drafter=none",
            "workload=prefix_cache",
            "workload.prompt_lengths=[3700,16000]",
            "runtime.max_model_len=16896",
        ],
        extra=True,
        model="qwen3.8-27b",
        engine_only=("runtime.extra_args=[--log-timestamps,--log-prefix,-lv,5]",),
    ),
    # an eleventh call (issue 22): bursts of short prompts (32 tokens, TTFT is the fixed costs of a
    # request and of a step) at c = 1, 8, 32, and prefill of exactly 1,024 and 2,048 prompt tokens through
    # /v1/completions (no chat template: exactly two and four of llama.cpp's 512-token micro-batches)
    Part("short-bursts", ["drafter=none", *_decode("[1,8,32]", 32, 64)], extra=True),
    Part(
        "prefill-exact",
        [
            "drafter=none",
            "workload=prefill_sweep",
            "workload.prompt_lengths=[1024,2048]",
            "workload.repeats=3",
            "workload.endpoint=completions",
            "runtime.max_model_len=4096",
        ],
        extra=True,
    ),
]

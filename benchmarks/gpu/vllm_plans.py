"""The sweeps `vllm_h200.py start --plan NAME` runs on the device, in order (PLANS), and the mixture of
experts of `start --sweep moe` (MOE_SWEEP): each entry an experiment (experiments/NAME.yaml) or, where no
experiment has that name, a plain multirun, with the overrides it adds."""

from __future__ import annotations

RUNS = [("h200_vllm_dense", ["drafter=none"]), ("h200_vllm_hybrid", []), ("h200_vllm_dense", [])]
"""In order of what the profile's fit needs most: the dense model's baselines (drafter=none on the command
line turns every cell of the grid into its baseline), the hybrid model's cells, then the dense drafters
(the baselines, complete by then, are skipped)."""

DECODE = (
    "workload:concurrency,workload.concurrency:'[1,2,4,8,16,32]',workload.prompt_tokens:'512',"
    "workload.output_tokens:'128',workload.repeats:'2'"
)
PREFIX = "workload:prefix_cache,workload.prompt_lengths:'[3700,8000,16000]'"


def grid(*cells: str) -> str:
    """A `hydra.sweeper.grid` override of these cells (each `key:value,...`)."""
    return "hydra.sweeper.grid=[" + ",".join("{" + c + "}" for c in cells) + "]"


SMOLLM2 = [
    "runtime.load_format=auto",
    "runtime.max_model_len=8192",
    "hardware=h200",
    "model=smollm2-135m",
    "quantization=q4_1_bf16",
    "workload.output_tokens=256",
]
"""SmolLM2-135M's trained weights (the packaged GGUF, dequantized: quantization=q4_1_bf16)."""
SMOLLM2_CELLS = (
    "workload:'code_with_tests,fresh_generation',workload.concurrency:'[1,4,16]'",
    "workload:edit_heavy,workload.prompt_tokens:'2048',workload.concurrency:'[1,4,16]'",
)
DRAFTERS = [
    (
        "h200_vllm_dense",
        [
            grid(f"{DECODE},drafter:ngram,k:'2,8'", f"{PREFIX},drafter:ngram,k:'2,8'"),
            "baseline=false",
        ],
    ),
    (
        "h200_vllm_hybrid",
        [grid(f"{DECODE},drafter:none", f"{PREFIX},drafter:none"), "baseline=false"],
    ),
]
"""The cells the studies still lack on the H200: n-gram k = 2 and 8 on the dense shape, at concurrency
1-32 and on warm prefixes; then the hybrid shape's baseline bursts and warm prefixes again, in a sitting
of their own (a burst's TTFT differs between sittings by more than the targets): run on 2026-12-04
(benchmarks/data/h200-vllm-2026-12-04/). The 2026-12-03 sittings (benchmarks/data/h200-vllm-2026-12-03/, h200-vllm-2026-12-03-2/) ran this plan's earlier
entries: the dense shape's draft model (k = 4) and EAGLE-3 (k = 3) beside a baseline, with their warm
prefixes; MTP k = 1, 5 and 8 on the hybrid (k = 8 with its warm prefixes); SmolLM2-135M's trained
weights on three real workloads without a drafter and with n-gram k = 2, 4 and 8 (SMOLLM2_PLAN). An
entry whose name is no experiment runs as a plain multirun of its overrides."""
SMOLLM2_PLAN = [
    (
        "h200_smollm2",
        [
            *SMOLLM2,
            grid(
                *(
                    f"{c},{d}"
                    for c in SMOLLM2_CELLS
                    for d in ("drafter:none", "drafter:ngram,k:'2,4,8'")
                )
            ),
        ],
    ),
]
"""n-gram on SmolLM2-135M's trained weights on real text (real acceptance) beside its baseline."""
GRAPH_SIZE = "--compilation-config.max_cudagraph_capture_size,1024"
"""vLLM's largest captured CUDA graph raised from its default 512 tokens to 1,024 (a dotted config flag)."""
GRAPHS_SHAPE = [
    "hardware=h200",
    "quantization=bf16",
    "runtime.max_model_len=20480",
    "runtime.gpu_memory_utilization=0.85",
    "workload=concurrency",
    "workload.repeats=3",
    "drafter=none",
]
GRAPHS_PLAN = [
    (
        "h200_vllm_dense_graphs",
        [
            *GRAPHS_SHAPE,
            "workload.concurrency=[1,2,4]",
            "model=qwen3-8b",
            "workload.prompt_tokens=480,511,512,532,1024",
            "workload.output_tokens=1,128",
            "runtime.extra_args=[--enable-per-request-metrics],"
            f"[--enable-per-request-metrics,{GRAPH_SIZE}]",
        ],
    ),
    (
        "h200_vllm_hybrid_graphs",
        [
            *GRAPHS_SHAPE,
            "workload.concurrency=[1,2,4]",
            "model=qwen3.8-27b",
            "workload.prompt_tokens=511,532",
            "workload.output_tokens=128",
            "runtime.extra_args=[--enable-per-request-metrics,--gdn-prefill-backend,triton],"
            f"[--enable-per-request-metrics,--gdn-prefill-backend,triton,{GRAPH_SIZE}]",
        ],
    ),
    (
        "h200_vllm_dense_graphs",
        [
            *GRAPHS_SHAPE,
            "workload.concurrency=[1,2,4,8]",
            "model=qwen3-8b",
            "workload.prompt_tokens=64,72",
            "workload.output_tokens=128",
            "runtime.extra_args=[--enable-per-request-metrics]",
        ],
    ),
]
"""Whether a step of more tokens than vLLM's largest CUDA graph (512 by default) is what makes a burst of
two 512-token prompts take 45-76 ms where one alone takes 23 ms, and a lone 532-token prompt 42 ms: one
server with the default graphs and one with graphs up to 1,024 tokens, each at prompts on both sides of
512 (a burst of two of 511-token prompts makes a mixed step of exactly 512), one token out against 128;
then the hybrid shape with either; then bursts of 2 to 8 short prompts (asked for at 64 and 72 tokens,
they ran at 165: the instruction and the chat template alone). Run on 2026-12-04
(benchmarks/data/h200-vllm-2026-12-04-2/: the last two entries as `start --sweep` of the same overrides)."""
SHORT_BURSTS = (
    "workload:concurrency,workload.concurrency:'[1,8,32]',workload.prompt_tokens:'32',"
    "workload.output_tokens:'64',workload.repeats:'3'"
)
PREFILL = "workload:prefill_sweep,workload.prompt_lengths:'[1024,2048,4096,8192,16384]'"
LONE_1K = (
    "workload:concurrency,workload.concurrency:'[1]',workload.prompt_tokens:'1024',"
    "workload.output_tokens:'1,128',workload.repeats:'3'"
)
"""A lone 1,024-token prompt sent by the `concurrency` workload, one token out and 128, on the server that
runs PREFILL: `prefill_sweep`'s lone 1,024 tokens took 30-35 ms in three sittings (two cards) and the
`concurrency` workload's 52-56 ms in another (docs/engines.md 1.6 and 1.9); one server with both says
whether that is the workload or the sitting."""
RECHECK_PLAN = [
    (
        "h200_vllm_dense",
        [
            grid(
                f"{SHORT_BURSTS},drafter:none",
                f"{PREFILL},drafter:none",
                f"{DECODE},drafter:none",
                f"{LONE_1K},drafter:none",
            ),
            "baseline=false",
        ],
    ),
    (
        "h200_vllm_hybrid",
        [grid(f"{DECODE},drafter:none", f"{PREFIX},drafter:none"), "baseline=false"],
    ),
]
"""Issue 33's cells outside their targets in one sitting, measured again in a sitting of their own: the
dense shape's bursts of short prompts (1, 8 and 32 streams), its prefill 1k-16k, its decode bursts of
512-token prompts and a lone 1,024-token prompt by the `concurrency` workload (LONE_1K), then the hybrid
shape's bursts and warm prefixes (a third sitting of each). Run on H100s on 2026-12-06 (held out:
benchmarks/data/h100-vllm-2026-12-06/ and h100-vllm-2026-12-06b/, before LONE_1K)."""
RECHECK_DRAFTERS_PLAN = [
    (
        "h200_vllm_dense",
        [grid(f"{DECODE},drafter:ngram,k:'4'", f"{DECODE},drafter:eagle3,k:'3'"), "baseline=false"],
    ),
    (
        "h200_vllm_hybrid",
        [grid(f"{DECODE},drafter:mtp,k:'3'", f"{PREFIX},drafter:mtp,k:'3'"), "baseline=false"],
    ),
]
"""After RECHECK_PLAN on the same machine: n-gram k = 4 and EAGLE-3 k = 3 on the dense shape, MTP k = 3
on the hybrid with its warm prefixes."""
RECHECK_ALL_PLAN = [*RECHECK_PLAN, *RECHECK_DRAFTERS_PLAN]
"""Both, one start: a lease spends no call between them."""
RECHECK_HYBRID_PLAN = [entry for entry in RECHECK_PLAN if entry[0] == "h200_vllm_hybrid"]
"""RECHECK_PLAN's hybrid entry alone, for a lease too short for both shapes."""
TP_PLAN = [("h200x2_vllm_tp", ["drafter=none"]), ("h200x2_vllm_tp", [])]
"""Issue 40, on a two-GPU host (device kind nvidia-h200-x2): experiments/h200x2_vllm_tp.yaml, one and
two GPUs a server on the dense 8B and 32B shapes, the baselines first. Not yet run."""
PLANS = {
    "studies": RUNS,
    "drafters": DRAFTERS,
    "smollm2": SMOLLM2_PLAN,
    "graphs": GRAPHS_PLAN,
    "tp": TP_PLAN,
    "recheck": RECHECK_PLAN,
    "recheck-drafters": RECHECK_DRAFTERS_PLAN,
    "recheck-all": RECHECK_ALL_PLAN,
    "recheck-hybrid": RECHECK_HYBRID_PLAN,
}
MOE_SWEEP = [
    "hardware=h200",
    "model=qwen3-30b-a3b",
    "quantization=bf16",
    "workload=concurrency",
    "workload.concurrency=[1,4,16,64]",
    "workload.prompt_tokens=512",
    "workload.output_tokens=256",
    "workload.repeats=2",
    "drafter=none,ngram",
    "k=4",
    "runtime.extra_args=[--enable-per-request-metrics]",
]
"""Qwen3-30B-A3B (128 experts, 8 a token) without a drafter and with n-gram k = 4, whose drafts a
dummy model accepts nearly whole: the verify passes read the experts 5 tokens a sequence touch."""

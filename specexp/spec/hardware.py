"""Typed, frozen specs of a machine: its datasheet figures and what a serving engine's kernels reach
of them (conf/hardware/)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from specexp.spec.model_base import _Spec

Dtype = Literal["bf16", "fp8", "fp4", "int8", "int4"]


class Achieved(_Spec):
    bandwidth: float = Field(gt=0, le=1)
    """Fraction of `memory_bandwidth_gbps` a serving engine's kernels reach."""
    compute: float = Field(gt=0, le=1)
    """Fraction of `peak_tflops` a serving engine's GEMMs reach."""
    bandwidth_by_dtype: dict[Dtype, float] = {}
    """Fraction of `memory_bandwidth_gbps` at which matmuls stream weights of this data type,
    where it differs from `bandwidth` (e.g. fp8 GEMV kernels that also quantize activations)."""
    compute_by_dtype: dict[Dtype, float] = {}
    """Fraction of that data type's `peak_tflops` its GEMMs reach, where it differs from `compute`."""
    attention_compute: float | None = Field(default=None, gt=0, le=1)
    """Fraction of the bf16 peak that attention kernels (flash prefill) reach; None: `compute`."""
    multi_query_attention: float | None = Field(default=None, gt=0, le=1)
    """A slower attention path for sequences that bring several new tokens over a cached context
    (verify passes, later prefill chunks): every query head reads its own copy of its group's K/V,
    at this fraction of the achieved bandwidth at full occupancy. None: such passes read the KV
    cache once, as fast as single-token decode (split-KV kernels)."""
    multi_query_blocks: float | None = Field(default=None, gt=0)
    """Thread blocks (sequences x query heads x query tiles) that path needs to reach that rate;
    with fewer, as at batch 1, it reads proportionally slower (no split over the context)."""
    recurrent_state: float | None = Field(default=None, gt=0, le=1, exclude_if=lambda v: v is None)
    """Fraction of the achieved bandwidth at which a hybrid model's linear-attention kernels read
    each sequence's recurrent state and write it back (one small program per head and value tile);
    the further copies a verify pass keeps, one per position, stream at the achieved bandwidth.
    None: as fast as the rest."""
    dequant_compute: float = Field(default=1.0, gt=0, le=1)
    """Fraction of the bf16 GEMM rate reached by dequantize-then-compute kernels (Marlin-style)
    for weights whose data type the tensor cores do not run natively."""
    small_batch_tflops: float | None = Field(default=None, gt=0)
    """GEMM throughput of the engine's small-batch kernels, TFLOP/s, whatever the weight type,
    for passes of up to `small_batch_rows` tokens per weight read (decode and verify steps at low
    concurrency): their tiles are mostly empty, so each token costs the same. With more tokens
    the tiles fill and the throughput grows in proportion, up to the data type's own rate.
    None: matmuls run at their data type's rate at any batch."""
    small_batch_rows: int = Field(default=16, ge=1)
    """Tokens per weight read up to which `small_batch_tflops` holds (the kernels' tile rows)."""
    serial_batched_matmuls: bool | None = None
    """True: a pass over more than one token streams the weights and computes one after the other
    (their sum), where a one-token pass overlaps them (their max): on a CPU the same few cores load
    the weights and compute, and llama.cpp's one-token mat-vec kernels stream while they compute
    (fitted: conf/hardware/cpu.yaml). None: every pass overlaps them."""


class InterconnectSpec(_Spec):
    """What links a machine's GPUs for tensor parallelism: what every all-reduce crosses."""

    name: str
    """nvlink, pcie, ..."""
    bandwidth_gbps: float = Field(gt=0)
    """Each GPU's bandwidth to the others in one direction, GB/s (the datasheet's)."""
    achieved: float = Field(default=0.8, gt=0, le=1)
    """The share of it an all-reduce's bus bandwidth reaches."""
    latency_us: float = Field(ge=0)
    """A small all-reduce's fixed time, us (launch, the peers' handshake)."""


class HardwareSpec(_Spec):
    name: str
    description: str = ""
    arch: Literal["ampere", "ada", "hopper", "blackwell", "cpu", "rdna", "cdna"]
    gpu_count: int = Field(default=1, ge=0)
    """Accelerators the server uses (0: a CPU-only server)."""
    device_names: list[str] = Field(default_factory=list, exclude=True)
    """What the driver calls the card this profile describes (a part of NVML's name, any case:
    'H200' fits 'NVIDIA H200'). A measured job that starts its server here is refused at plan time
    when this machine's GPUs do not fit (specexp.measure.gpu_identity). Empty: not checked. Not part
    of run ids: it changes no figure."""
    memory_gib: float = Field(gt=0)
    """Device memory the engine can see, GiB."""
    memory_bandwidth_gbps: float = Field(gt=0)
    """Datasheet memory bandwidth, GB/s."""
    datasheet: bool = Field(default=True, exclude=True)
    """Whether `memory_bandwidth_gbps` and `peak_tflops` are the maker's published figures, so physical
    limits no measured figure can pass (specexp.check.plausibility). False for a generic profile whose
    figures are assumed (`cpu`: any 2-core machine): the checker sets no limit from them. Not part of
    run ids: it changes no figure."""
    peak_tflops: dict[Dtype, float | None]
    """Dense tensor throughput per data type, TFLOP/s; null where not native."""
    native_dtypes: list[Dtype]
    """Data types the tensor cores run natively; others are dequantized to bf16 first."""
    achieved: Achieved
    step_overhead_ms: float = Field(ge=0)
    """Fixed cost of one forward pass (launches, sampling, scheduling), ms."""
    layer_overhead_us: float = Field(default=0.0, ge=0)
    """Fixed cost per decoder layer of one forward pass (launch gaps between its small kernels), us;
    a pass pays step_overhead_ms + layers x layer_overhead_us."""
    engine_memory_gib: float | None = Field(default=None, gt=0)
    """Memory an engine allocates against (what the driver reports as total), GiB; None:
    `memory_gib`. gpu_memory_utilization is a share of this."""
    interconnect: InterconnectSpec | None = None
    """What links its GPUs (runtime.tensor_parallel > 1 needs one); None: one GPU, or none known."""
    usd_per_gpu_hour: float | None = Field(default=None, gt=0)
    """What an hour of one GPU costs, in US dollars (a CPU-only server: an hour of the whole
    server), as the user pays it; None: no bill. specexp never assumes a price."""
    usd_per_kwh: float | None = Field(default=None, gt=0)
    """What a kWh of electricity costs, in US dollars; None: no energy bill."""

    def peak(self, dtype: str) -> float:
        """Peak TFLOP/s for `dtype`, falling back to bf16 where `dtype` is not native."""
        value = self.peak_tflops.get(dtype) if dtype in self.native_dtypes else None
        return value if value else float(self.peak_tflops["bf16"] or 0.0)

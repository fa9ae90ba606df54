"""Tensor values as specexp's model writers make them: seeded random weights, and their BF16 bytes."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[np.float32]


def ones(name: str, n: int) -> Array:
    return np.ones((n,), dtype=np.float32)


def seeded_weights(
    seed: int,
    specs: Iterable[tuple[str, tuple[int, ...]]],
    noise: float = 0.0,
    noisy_norms: bool = False,
    one_d: Callable[[str, int], Array] = ones,
) -> dict[str, Array]:
    """One tensor per (name, dims) of `specs`, in their order: one-dimensional ones (norms) as
    `one_d` gives them (ones), matrices
    standard normal / sqrt(fan-in) from the generator seeded [seed, 0]; with `noise` > 0, each
    matrix plus `noise` x its std of noise from the generator seeded [seed, 1]. With `noisy_norms`
    the norms draw noise too (their std is 0, so they stay ones; the draws only move the stream,
    as the GGUF files written before this function did)."""
    if noise < 0 or not np.isfinite(noise):
        raise ValueError(f"noise must be a finite number >= 0, got {noise}")
    rng, noise_rng = np.random.default_rng([seed, 0]), np.random.default_rng([seed, 1])
    tensors: dict[str, Array] = {}
    for name, dims in specs:
        norm = len(dims) == 1
        if norm:
            w = one_d(name, dims[0])
        else:
            w = rng.standard_normal(dims, dtype=np.float32) / np.float32(np.sqrt(dims[-1]))
        if noise > 0 and (noisy_norms or not norm):
            w = w + np.float32(noise * float(w.std())) * noise_rng.standard_normal(
                dims, dtype=np.float32
            )
        tensors[name] = w
    return tensors


def bf16_bytes(values: npt.ArrayLike) -> bytes:
    """float32 -> bfloat16 (round to nearest even), little-endian."""
    bits = np.ascontiguousarray(values, dtype="<f4").view("<u4").astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype("<u2").tobytes()

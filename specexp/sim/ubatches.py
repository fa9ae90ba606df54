"""How an engine cuts one step's tokens into micro-batches, each its own forward pass.

A step (llama.cpp's batch, up to n_batch tokens) holds the decode tokens of the running
sequences and the prompt tokens it prefills; the engine runs it in micro-batches (n_ubatch), and
every micro-batch reads the weights again.
"""

from __future__ import annotations

from collections.abc import Sequence

from specexp.roofline.costmodel import Slice


def mixed_ubatches(verify: list[Slice], prefill: list[Slice], ubatch: int) -> list[list[Slice]]:
    """Micro-batches filled in order, each up to `ubatch` tokens; the decode tokens ride in the first."""
    passes: list[list[Slice]] = [list(verify)]
    room = ubatch - sum(v.tokens for v in verify)
    for x in prefill:
        done = 0
        while done < x.tokens:
            if room <= 0:
                passes.append([])
                room = ubatch
            n = min(room, x.tokens - done)
            passes[-1].append(
                Slice(
                    tokens=n,
                    context=x.context + done,
                    logits=x.logits if done + n == x.tokens else 0,
                )
            )
            done, room = done + n, room - n
    return passes


def equal_ubatches(
    verify: list[Slice],
    prefill: list[Slice],
    ubatch: int,
    ids: Sequence[int] | None = None,
    leads: list[int] | None = None,
) -> list[list[Slice]]:
    """Micro-batches as llama.cpp's split_equal cuts a batch for a KV cache with one stream per
    sequence: the sequences of a micro-batch are a run of consecutive sequence ids, taken in
    batch order (the decode tokens first, then the prompts), at most `ubatch` of them, and each
    brings the same number of tokens (the run's smallest remainder, at most ubatch // run).
    `ids`: each slice's sequence id (llama-server's slot), in batch order; None: consecutive.
    `leads`, where given, gets each micro-batch's first sequence id."""
    slices: list[Slice] = [*verify, *prefill]
    done_of = [0] * len(slices)
    seq = list(ids) if ids is not None else list(range(len(slices)))
    passes: list[list[Slice]] = []
    while True:
        left = [j for j, x in enumerate(slices) if done_of[j] < x.tokens]
        if not left:
            return passes
        run = [left[0]]
        for j in left[1:]:
            if len(run) < ubatch and seq[j] == seq[run[-1]] + 1:
                run.append(j)
        take = max(1, min(min(slices[j].tokens - done_of[j] for j in run), ubatch // len(run)))
        passes.append([])
        if leads is not None:
            leads.append(seq[run[0]])
        for j in run:
            x, done = slices[j], done_of[j]
            n = min(take, x.tokens - done)
            passes[-1].append(
                Slice(
                    tokens=n,
                    context=x.context + done,
                    logits=x.logits if done + n == x.tokens else 0,
                    state_writes=x.state_writes,
                )
            )
            done_of[j] = done + n

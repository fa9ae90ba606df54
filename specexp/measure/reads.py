"""How the client's network reads resolve a stream: the token-bearing chunks of each read, and whether
the stream's ends were read in bulk (its decode span then says where the client's reads fell, not when
the server sent the tokens; docs/records.md, `reads`)."""

from __future__ import annotations

import itertools

from specexp.measure.events import RequestTrace

UNRESOLVED_SHARE = 0.1
"""The chunks beyond one that an end read of a stream may hold, as a share of its chunks after the first,
where no read between its ends held more (read_resolved)."""


def read_sizes(trace: RequestTrace) -> list[int]:
    """The token-bearing chunks of each network read of the stream, in order. The client stamps each
    read once, so chunks that share a stamp came in one read."""
    return [len(list(group)) for _, group in itertools.groupby(e.t for e in trace.token_events)]


def read_resolved(trace: RequestTrace) -> bool:
    """Whether the client's reads resolve the stream's decode span. A client that fell behind the
    stream (a busy machine, a server faster than its reader) finds several chunks waiting in one read,
    and where that happens at an end of the stream, the span from its first token to its last is where
    the client's reads fell, not when the server sent the tokens: a stream read whole in two reads gives
    a rate of hundreds of thousands of tokens a second.

    A server may also send one step's tokens as several chunks at once (llama-server sends each token a
    verify step accepted as a chunk of its own), which a client that keeps up reads together. So an end
    read may hold, beyond its first chunk, as many more as the largest read between the ends did, or
    UNRESOLVED_SHARE of the stream's chunks after the first, whichever is more; the last read one more
    in any case (the simulator releases a step's tokens when the next step launches, and two steps'
    tokens can leave together at a stream's end). A stream of more than two chunks in one or two reads
    has nothing between its ends to show how the server sends them, and does not resolve. A client that
    fell behind the whole stream, with every read holding several chunks, is not caught here: its CPU
    share (`client.busy`) is what shows it."""
    sizes = read_sizes(trace)
    chunks = sum(sizes)
    if chunks < 2:
        return True
    if len(sizes) <= 2:
        return chunks == 2 and len(sizes) == 2
    allowed = max(max(sizes[1:-1]) - 1, UNRESOLVED_SHARE * (chunks - 1))
    return sizes[0] - 1 <= allowed and sizes[-1] - 1 <= max(allowed, 1)


def reads(trace: RequestTrace) -> int:
    """The network reads the stream's token-bearing chunks came in (fewer than its chunks where
    the client read several at once)."""
    return len(read_sizes(trace))

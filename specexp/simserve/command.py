"""`python -m specexp.sim [overrides] [--port P] [--speed X]`: the simulator as an HTTP server.

    python -m specexp.sim hardware=h200 drafter=mtp k=3 --port 8000
    python -m specexp.sim drafter=dspark workload=edit_heavy --speed 10 --port 0

Overrides are the ones `python -m specexp` takes (hardware, model, quantization, drafter, k,
workload, seed, runtime.max_num_seqs, ...; `runtime` itself is always simulated). The server
binds 127.0.0.1 only and prints one line `specexp-sim listening on http://127.0.0.1:PORT ...`
when it is ready (`--port 0` picks a free port).

Time. Tokens leave at their simulated times in real time: wall seconds = simulated seconds /
`--speed` (default 1). Requests that arrive while others run join the next forward pass
(continuous batching, with the simulator's own step). When the server falls more than
`--max-lag-ms` (default 10) behind its schedule it moves the simulated clock up to now.

Endpoints. GET /health, /v1/models, /version, /metrics (vLLM's Prometheus names:
vllm:spec_decode_num_drafts_total, ..._draft_tokens_total, ..._accepted_tokens_total,
..._accepted_tokens_per_pos_total{position="i"}, vllm:prompt_tokens_total,
vllm:generation_tokens_total, vllm:prefix_cache_queries_total / _hits_total, ...);
POST /v1/chat/completions and /v1/completions, `stream` true or false, with `max_tokens`
(`max_completion_tokens`), `ignore_eos`, `stream_options.include_usage` and
`.continuous_usage_stats`, a `request_id` body field or an `X-Request-Id` header;
POST /reset_prefix_cache. The simulated model never emits EOS, so every request generates
exactly max_tokens tokens (finish_reason "length"), with or without ignore_eos.

Prompt tokens. A string prompt counts ceil(characters / 4) tokens; a completion prompt given as
a list of token ids counts its length; chat messages count as the text of their
`role: content` lines joined by newlines (see specexp/simserve/tokens.py). The prefix cache
matches whole blocks of those units, of the simulated engine's block size (16 tokens unless the
model or runtime config sets one; /metrics says it in vllm:cache_config_info{block_size}).

Timing records. GET /debug/requests/{id} (the request id, or the response's `chatcmpl-`/`cmpl-`
id) returns, for every streamed chunk that carried tokens: `tokens`, `completion_tokens`,
`sim_t` (simulated seconds since start), `scheduled` (server clock at which it was due:
t0 + sim_t / speed) and `sent` (server clock right before the chunk was written to the socket);
plus the request's `arrived` / `sim_arrived`. The server clock is time.perf_counter
(CLOCK_MONOTONIC on Linux), so a client on the same host can compare its own perf_counter
stamps directly. GET /debug/requests lists every kept request; GET /debug/clock shows the
clock mapping, steps and resyncs.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence

from specexp.spec.errors import SpecError, exit_on_spec_error


def parse_args(argv: Sequence[str]) -> tuple[argparse.Namespace, list[str]]:
    parser = argparse.ArgumentParser(
        prog="python -m specexp.sim",
        allow_abbrev=False,
        description="Serve the simulator over an OpenAI-compatible HTTP API on 127.0.0.1, in real time.",
        epilog="Other arguments are Hydra overrides, as for `python -m specexp` (hardware=h200 drafter=mtp k=3).",
    )
    parser.add_argument(
        "--port", type=int, default=8000, help="TCP port on 127.0.0.1 (0: a free one); default 8000"
    )
    parser.add_argument(
        "--speed",
        type=float,
        default=1.0,
        help="simulated seconds per wall second (wall = simulated / speed); default 1",
    )
    parser.add_argument(
        "--max-lag-ms",
        type=float,
        default=10.0,
        help="move the simulated clock up to now when delivery is this far behind; default 10",
    )
    args, rest = parser.parse_known_args(list(argv))
    unknown = [a for a in rest if a.startswith("--")]
    if unknown:
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    if args.speed <= 0:
        parser.error("--speed must be > 0")
    return args, rest


def main(argv: Sequence[str] | None = None) -> None:
    from specexp.measure.events import RuntimeFailure
    from specexp.run.compose import build_spec
    from specexp.simserve.http import SimServer, serve

    args, overrides = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        spec = build_spec(overrides)
    except SpecError as err:
        exit_on_spec_error(err)
        return

    def announce(server: SimServer) -> None:
        k = server.engine.k
        print(
            f"specexp-sim listening on {server.url} (model {server.model}, hardware {spec.hardware.name}, "
            f"drafter {spec.drafter.name}{f' k={k}' if k else ''}, speed {args.speed:g})",
            flush=True,
        )

    try:
        asyncio.run(
            serve(
                spec,
                port=args.port,
                speed=args.speed,
                max_lag_s=args.max_lag_ms / 1e3,
                announce=announce,
            )
        )
    except RuntimeFailure as err:
        print(f"specexp.sim: {err.status}: {err.kind}: {err.message}", file=sys.stderr, flush=True)
        raise SystemExit(2) from None
    except OSError as err:
        print(
            f"specexp.sim: cannot listen on 127.0.0.1:{args.port}: {err}",
            file=sys.stderr,
            flush=True,
        )
        raise SystemExit(1) from None

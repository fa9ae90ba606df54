"""The simulator behind an OpenAI-compatible HTTP server, in real time (`python -m specexp.sim_serve`).

- `prompts`: the deterministic stand-in for a tokenizer (4 characters per token), cache blocks
  and output text;
- `engine`: SimEngine's step driven on the wall clock, with requests arriving while it runs;
- `openai`: request validation, vLLM-shaped responses and stream chunks;
- `metrics`: /metrics in vLLM's Prometheus names;
- `server`: the asyncio HTTP/1.1 server and its debug endpoints.
"""

from __future__ import annotations

from specexp.simserve.engine import Delivery, Job, RealTimeEngine
from specexp.simserve.server import SimServer, serve

__all__ = ["Delivery", "Job", "RealTimeEngine", "SimServer", "serve"]

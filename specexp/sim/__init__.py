"""The simulator: one engine, and two thin faces on it.

- `engine`: the serving engine on a virtual clock (`SimEngine.submit` / `step`; `run` steps a
  whole window): continuous batching, drafting and acceptance, the KV pool and counters;
- `kvcache`: the cache layout and the KV pool with the one prefix cache in it;
- `memory`, `context`, `drafting`: what a server decides at start, what drafting costs and
  how many drafts are accepted; `startup`: all of it put together into an engine;
- `profile`: the engine imitated besides the forward pass (runtime.engine, conf/sim_engine/);
- `calibrate`: fitting the hardware figures to measured step times and to the studies' facts;
  `calibrate_engine`: fitting an engine profile to that engine measured by specexp;
- `runtime`: runtime=sim, the engine behind the runtime seam (specexp.runtimes.base);
- `realtime`, `http`, `openai`, `metrics`, `prompts`, `cli`: the engine stepped on the wall
  clock behind an OpenAI-compatible HTTP server (`python -m specexp.sim`).

Importing the package imports nothing else: the runtime registry imports `runtime` by name.
"""

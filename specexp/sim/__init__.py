"""The simulated serving engine (runtime=sim): first principles on a virtual clock.

- `engine`: the serving engine (`SimEngine.submit` / `step`; `run` steps a whole window):
  continuous batching, drafting and acceptance, the KV pool and counters; `sequences`: what it
  keeps of each request and how a request enters and leaves it;
- `kvcache`: the cache layout and the KV pool with the one prefix cache in it;
- `memory`, `context`, `drafting`: what a server decides at start, what drafting costs and
  how many drafts are accepted; `passes`, `ubatches`: what one forward pass costs;
- `frontend`: the API server's per-request cost in front of the engine;
- `profile`: the engine imitated besides the forward pass (runtime.engine, conf/sim_engine/);
- `startup`: all of it put together into one engine per job.

Its two faces live elsewhere: `specexp.runtimes.sim.driver` puts it behind the runtime seam, and
`specexp.simserve` serves it on the wall clock over an OpenAI-compatible API
(`python -m specexp.sim`, the command `__main__` here keeps). Fitting its figures to
measurements is `specexp.fit`.
"""

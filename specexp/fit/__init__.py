"""Fitting the simulator's figures to measurements (never imported by a run).

- `hardware`: a hardware file's figures fitted to measured step times;
- `spark`: the DGX Spark's figures fitted to the studies' facts (KV capacities, base decode,
  drafting costs, the NVFP4 decay);
- `engine_cells`: an engine profile fitted to that engine measured by specexp (cells of one shape);
- `records`: the same fit driven by committed `result.json` records (benchmarks/data/).
"""

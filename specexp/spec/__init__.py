"""What an experiment is, before anything runs: the bottom layer, imported by every other.

- `base`, `experiment`, `workload`: the frozen specs (`ExperimentSpec` and its parts);
- `options`: the config groups (conf/<group>/<name>.yaml) and their validation;
- `vocabulary`: every condition and metric name, with its type or unit and meaning
  (docs/vocabulary.md; the metrics' definitions are in `metric_defs`);
- `runtime`: the runtimes, each one's settings and drafters; `model_config`: a model spec read
  from a Hugging Face config.json;
- `registry`: the names each group accepts; `errors`: the one error a user sees (`SpecError`);
- `input_files`: workload inputs (datasets, traces) read and validated at plan time;
- `paths`, `cache`: where configs, outputs and cached builds live.
"""

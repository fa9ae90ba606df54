"""A sweep, from the command line to records: the top of the flow.

- `hydra_store`, `compose`: the Hydra config store and one `ExperimentSpec` per cell;
- `plan`: the cells a sweep will run, checked before any server starts;
- `sweeper`: the Hydra sweeper that runs them (one composition per cell);
- `job`: one cell: start or reach a server, drive the workload, write the record;
- `progress`, `summary`, `provenance`: what the user sees while it runs and after.
"""

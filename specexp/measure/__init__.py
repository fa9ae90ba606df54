"""Client-side measurement: events and counters in, typed measurements out.

- `events`: what a workload driver observes (requests, token events, windows, counters);
- `metrics`: pure functions of those (TTFT, TPOT, throughput, acceptance...);
- `measurements`: one `Measurement` per point, medians over repeats;
- `conditions`: the conditions a run is measured under, from its spec;
- `slo`, `arrivals`: goodput under SLOs and open-loop arrival schedules;
- `telemetry`: GPU sampling around a window; `request_log`: requests.jsonl.
"""

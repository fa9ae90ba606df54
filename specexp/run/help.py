"""`python -m specexp --help`: what a user types, and the options of every config group.

Read from the config folders themselves (no composition), so it answers at once; Hydra's own
help stays at `--hydra-help`, the composed config at `--cfg job`.
"""

from __future__ import annotations

from omegaconf import OmegaConf

from specexp.run.compose import TOP_LEVEL_KEYS
from specexp.spec import paths
from specexp.spec.options import GROUPS

USAGE = """\
specexp: LLM-serving experiments (speculative decoding, prefix caching, prefill, concurrency) with
honest reports. Runs on the built-in simulator (runtime=sim) unless a runtime says otherwise.

usage:
  python -m specexp [OVERRIDE ...]               one job
  python -m specexp -m [OVERRIDE ...]            a sweep: comma lists are swept (drafter=mtp,dspark k=3,8,15)
  python -m specexp +experiment=NAME -m          a committed study (experiments/NAME.yaml)
  python -m specexp --cfg job [OVERRIDE ...]     print the composed config without running it
  python -m specexp.report DIR ...               measurements.md and report.html from records
  python -m specexp.check FILE ...               figures compared under different conditions
  python -m specexp.sim [OVERRIDE ...] --port N  the simulator as an OpenAI-compatible server"""

COMMON_KEYS = (
    ("workload.concurrency=[1,4,16]", "requests in flight at once, one measurement each"),
    ("workload.prompt_tokens=512 workload.output_tokens=256", "prompt and output lengths"),
    (
        "workload.request_rate=[2,4,8]",
        "open-loop arrivals (requests/s) instead of closed-loop bursts",
    ),
    ("slo.ttft_s=0.5 slo.tpot_s=0.05", "latency objectives: slo_attainment and goodput per point"),
    ("runtime.max_model_len=32768", "the server's context length"),
    ("runtime.url=http://HOST:PORT", "a running server (runtime=openai), not one specexp starts"),
    ("runtime.extra_args=[--flag,value]", "more arguments for the server specexp starts"),
    ("model=hf model.config_json=PATH", "any Hugging Face model by its config.json"),
)
"""The nested keys users set most, as `--help` shows them (each checked by a test)."""

TAIL = """\
Any key of a group is an override too: hardware.memory_gib=80 workload.output_tokens=256
runtime.max_num_seqs=8. Every metric and condition is defined in docs/vocabulary.md.
Hydra's flags work as in any Hydra app: -m/--multirun, --cfg, --info, --hydra-help, --config-dir."""


def help_text() -> str:
    config = OmegaConf.to_container(OmegaConf.load(paths.conf_dir() / "config.yaml"))
    assert isinstance(config, dict)
    chosen = {
        k: v
        for entry in config.get("defaults", [])
        if isinstance(entry, dict)
        for k, v in entry.items()
    }
    lines = [USAGE, "", "config groups (group=option; conf/<group>/<option>.yaml), default first:"]
    for group in [*GROUPS, "experiment"]:
        options = paths.options(group)
        default = chosen.get(group)
        ordered = ([default] if default in options else []) + [o for o in options if o != default]
        lines.append(f"  {group}: {', '.join(ordered)}")
    lines += ["", f"top-level keys: {', '.join(TOP_LEVEL_KEYS)}", "", "keys set most often:"]
    width = max(len(example) for example, _ in COMMON_KEYS)
    lines += [f"  {example:<{width}}  {what}" for example, what in COMMON_KEYS]
    lines += ["", TAIL]
    return "\n".join(lines)

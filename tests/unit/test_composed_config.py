"""A record's composed configuration is read through one typed model (specexp.record.composed):
the keys the reports and refits read are typed, every other key stays as the job wrote it, and an
odd value in a committed record reads as absent instead of making its figures unreadable."""

from __future__ import annotations

from specexp.record import Provenance


def test_the_keys_readers_use_are_typed_and_the_rest_kept() -> None:
    config = {
        "hardware": {"name": "h200", "memory_gib": 141},
        "workload": {
            "name": "agentic_sessions",
            "material": "source_file",
            "session": {"turn_material": "prose", "turns": 4},
            "shared_prefix": True,
        },
        "runtime": {"name": "vllm", "load_format": "dummy", "extra_args": ["--enforce-eager"]},
        "slo": {"ttft_s": 0.5, "tpot_s": None, "e2e_s": None, "percentile": 95.0},
        "experiment": "study",
        "rerun": False,
    }
    p = Provenance(config=config)
    assert p.option("hardware").name == "h200"
    assert p.prompt_source() == ("agentic_sessions", "source_file", None, "prose")
    assert p.composed.runtime is not None and p.composed.runtime.extra_args == ["--enforce-eager"]
    assert p.slo is not None and (p.slo.ttft_s, p.slo.percentile) == (0.5, 95.0)
    assert p.composed.model_extra == {"rerun": False}
    assert p.config == config  # the record keeps what the job wrote, byte for byte


def test_odd_values_read_as_absent_and_the_record_stays_readable() -> None:
    p = Provenance(
        config={
            "hardware": 5,
            "workload": {"name": ["not", "a", "name"], "session": "x", "shared_prefix": "maybe"},
            "slo": {"ttft_s": "fast", "tpot_s": None, "e2e_s": None, "percentile": 99},
        }
    )
    assert p.option("hardware").name is None
    assert p.option("model").name is None  # a group the record lacks
    assert p.prompt_source() == (None, None, None, None)
    assert p.composed.workload is not None and p.composed.workload.shared_prefix is None
    assert p.slo is None  # no objective left that reads as one

"""specexp.run.compose: every conf option and experiment composes and validates; bad input gets
one line naming the file or override, the key, the accepted values and a did-you-mean."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from specexp.run.compose import check_overrides, to_spec
from specexp.spec import paths
from specexp.spec.errors import SpecError, did_you_mean

CONF = paths.conf_dir()
GROUPS = ("hardware", "model", "quantization", "runtime", "drafter", "workload")


def _options() -> list[tuple[str, str]]:
    found = [(p.parent.name, p.stem) for p in sorted(CONF.glob("*/*.yaml"))]
    return [(g, o) for g, o in found if g in GROUPS]


def _experiments() -> list[Any]:
    names = sorted(p.stem for p in paths.experiments_dir().glob("*.yaml"))
    if not names:
        return [pytest.param(None, marks=pytest.mark.skip(reason="no experiments/*.yaml yet"))]
    return names


def test_every_group_folder_is_a_known_group() -> None:
    # conf/hydra/ configures Hydra itself (logging, help); conf/sim_engine/ holds the simulator's
    # engine profiles, selected by runtime.engine (tests/unit/sim/test_profiles.py validates them);
    # every other folder must be validated.
    folders = {p.name for p in CONF.iterdir() if p.is_dir()} - {"hydra", "sim_engine"}
    assert folders == set(GROUPS)


@pytest.mark.parametrize(("group", "option"), _options(), ids=lambda v: str(v))
def test_every_conf_option_composes_and_validates(
    group: str, option: str, compose_cfg: Callable[..., Any], tmp_path: Path
) -> None:
    overrides = [f"{group}={option}"]
    if (group, option) == ("model", "hf"):  # reads a config.json: one that specexp writes
        from specexp.models.hf_config import config_json
        from specexp.spec.experiment import ModelSpec
        from specexp.spec.options import load_option

        path = tmp_path / "hf" / "config.json"
        path.parent.mkdir()
        path.write_text(
            json.dumps(config_json(load_option(ModelSpec, "model", "qwen3-8b", "model")))
        )
        overrides.append(f"model.config_json={path}")
    data, choices = compose_cfg(*overrides)
    assert choices[group] == option
    spec = to_spec(data, choices, overrides)
    # The option's `name` is the id the records carry (conditions say "id from conf/<group>/").
    assert getattr(spec, group).name == option


@pytest.mark.parametrize("name", _experiments())
def test_every_experiment_composes_and_validates(
    name: str, compose_cfg: Callable[..., Any]
) -> None:
    overrides = [f"+experiment={name}"]
    data, choices = compose_cfg(*overrides)
    spec = to_spec(data, choices, overrides)
    assert spec.experiment == name


def _sweep_jobs(name: str) -> list[list[str]]:
    """Every job an experiment's sweeper (params x each grid entry) would run, as its overrides."""
    import itertools

    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    import specexp.run.sweeper  # noqa: F401  (registers hydra/sweeper=specexp)
    from specexp.run import hydra_store

    hydra_store.register()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("config", overrides=[f"+experiment={name}"], return_hydra_config=True)
    sweeper = OmegaConf.to_container(cfg.hydra.sweeper, resolve=False)
    assert isinstance(sweeper, dict)
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    params = sweeper.get("params") or {}
    jobs = set()
    for entry in sweeper.get("grid") or [{}]:
        axes = []
        for key, sweep in {**params, **entry}.items():
            override = parser.parse_override(
                f"{key}={sweep}"
            )  # as the sweeper splits it: [1,4] is one value
            options = (
                override.sweep_string_iterator()
                if override.is_sweep_override()
                else [override.get_value_element_as_str()]
            )
            axes.append([f"{key}={v}" for v in options])
        jobs.update(tuple(job) for job in itertools.product(*axes))
    return sorted(list(job) for job in jobs if job)


@pytest.mark.parametrize("name", _experiments())
def test_every_job_an_experiment_sweeps_composes_and_validates(
    name: str, compose_cfg: Callable[..., Any]
) -> None:
    jobs = _sweep_jobs(name)
    if not jobs:
        pytest.skip(f"experiments/{name}.yaml sweeps nothing")
    for job in jobs:
        overrides = [f"+experiment={name}", *job]
        check_overrides(job)
        data, choices = compose_cfg(*overrides)
        to_spec(data, choices, overrides)


@pytest.mark.parametrize("name", ["spark_fp8_mtp_dspark", "a6000_vs_spark"])
def test_a_sweeps_lean_composition_is_hydras_less_its_own_node(name: str) -> None:
    """SweepComposer composes a cell's groups without merging Hydra's node: what it gives is what
    Hydra's load_sweep_config gives, less that node, for every group choice an experiment sweeps,
    and for a user's option from --config-dir."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    import specexp.run.sweeper  # noqa: F401  (registers hydra/sweeper=specexp)
    from specexp.run import hydra_store
    from specexp.run.compose import SweepComposer

    hydra_store.register()
    mine = Path(__file__).resolve().parents[2] / "examples" / "my-configs"
    searched = f"hydra.searchpath=[file://{mine}]"
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        master = compose(
            "config", overrides=[f"+experiment={name}", searched], return_hydra_config=True
        )
        loader = GlobalHydra.instance().config_loader()
        composer = SweepComposer(loader, master)
        picks = {
            tuple(o for o in job if o.split("=")[0].lstrip("+") in GROUPS)
            for job in _sweep_jobs(name)
        }
        picks.add(("quantization=awq_int4", "hardware=rtx4090"))
        for pick in sorted(picks):
            choices = [f"+experiment={name}", *pick]
            full = loader.load_sweep_config(master, choices)
            expected = OmegaConf.to_container(full, resolve=False)
            expected.pop("hydra")
            task, chosen = composer.task_config(choices)
            assert task == expected, pick
            assert chosen == OmegaConf.to_container(full.hydra.runtime.choices), pick
    GlobalHydra.instance().clear()


# --- messages ---------------------------------------------------------------------------


def _error(fn: Callable[[], Any]) -> SpecError:
    with pytest.raises(SpecError) as info:
        fn()
    line = info.value.line()
    assert "\n" not in line and line == str(info.value)
    return info.value


def test_extra_key_in_a_file_names_the_file_key_and_close_match(
    compose_cfg: Callable[..., Any],
) -> None:
    data, choices = compose_cfg()
    bad = copy.deepcopy(data)
    bad["workload"]["output_tokenz"] = 5
    err = _error(lambda: to_spec(bad, choices, []))
    line = err.line()
    assert line.startswith(
        "conf/workload/fresh_generation.yaml: workload.output_tokenz: unknown key"
    )
    assert "accepted: " in line and "output_tokens" in line
    assert "did you mean 'output_tokens'?" in line


def test_extra_nested_key_lists_the_fields_of_its_own_mapping(
    compose_cfg: Callable[..., Any],
) -> None:
    data, choices = compose_cfg()
    bad = copy.deepcopy(data)
    bad["hardware"]["achieved"]["bandwith"] = 0.9
    line = _error(lambda: to_spec(bad, choices, [])).line()
    assert line.startswith("conf/hardware/dgx_spark.yaml: hardware.achieved.bandwith: unknown key")
    assert "accepted: bandwidth, compute" in line
    assert "did you mean 'bandwidth'?" in line


def test_extra_key_inside_an_optional_mapping_lists_that_mappings_fields(
    compose_cfg: Callable[..., Any],
) -> None:
    data, choices = compose_cfg()
    bad = copy.deepcopy(data)
    bad["model"]["mtp"]["tensorz"] = 22
    line = _error(lambda: to_spec(bad, choices, [])).line()
    assert "model.mtp.tensorz: unknown key" in line
    assert "accepted: num_hidden_layers, tensors, trained_steps" in line
    assert "did you mean 'tensors'?" in line


def test_extra_key_in_a_file_chosen_by_an_override_names_the_file(
    compose_cfg: Callable[..., Any],
) -> None:
    overrides = ["drafter=mtp"]
    data, choices = compose_cfg(*overrides)
    bad = copy.deepcopy(data)
    bad["drafter"]["descriptio"] = "typo"
    line = _error(lambda: to_spec(bad, choices, overrides)).line()
    assert line.startswith("conf/drafter/mtp.yaml: drafter.descriptio: unknown key")


def test_bad_literal_in_a_conf_value_lists_accepted_values(compose_cfg: Callable[..., Any]) -> None:
    data, choices = compose_cfg()
    bad = copy.deepcopy(data)
    bad["runtime"]["name"] = "vlm"
    err = _error(lambda: to_spec(bad, choices, []))
    line = err.line()
    assert line.startswith("conf/runtime/sim.yaml: runtime.name: ")
    assert "'vlm'" in line
    assert "accepted: sim, vllm, sglang, llamacpp, ollama, openai" in line
    assert "did you mean 'vllm'?" in line


def test_missing_required_key_in_a_file_is_named(compose_cfg: Callable[..., Any]) -> None:
    data, choices = compose_cfg()
    bad = copy.deepcopy(data)
    del bad["hardware"]["memory_bandwidth_gbps"]
    line = _error(lambda: to_spec(bad, choices, [])).line()
    assert line.startswith("conf/hardware/dgx_spark.yaml: hardware.memory_bandwidth_gbps: ")
    assert "missing" in line


def test_wrong_type_from_an_override_names_the_override(compose_cfg: Callable[..., Any]) -> None:
    overrides = ["k=abc"]
    data, choices = compose_cfg(*overrides)
    line = _error(lambda: to_spec(data, choices, overrides)).line()
    assert line.startswith("override k=abc: k: ")
    assert "integer" in line and "'abc'" in line


def test_out_of_range_value_from_an_override(compose_cfg: Callable[..., Any]) -> None:
    overrides = ["workload.output_tokens=0"]
    data, choices = compose_cfg(*overrides)
    line = _error(lambda: to_spec(data, choices, overrides)).line()
    assert line.startswith("override workload.output_tokens=0: workload.output_tokens: ")
    assert "greater than or equal to 1" in line


def test_unknown_top_level_key_is_an_error(compose_cfg: Callable[..., Any]) -> None:
    data, choices = compose_cfg()
    bad = {**data, "sede": 1}
    line = _error(lambda: to_spec(bad, choices, [])).line()
    assert "sede: unknown key" in line and "did you mean 'seed'?" in line


def test_unknown_draft_model_names_the_override(compose_cfg: Callable[..., Any]) -> None:
    overrides = ["drafter=draft_model", "draft_model=qwen3-8bb"]
    data, choices = compose_cfg(*overrides)
    line = _error(lambda: to_spec(data, choices, overrides)).line()
    assert line.startswith("override draft_model=qwen3-8bb: draft_model: ")
    assert "did you mean 'qwen3-8b'?" in line


@pytest.mark.parametrize(
    ("override", "start", "fragments"),
    [
        (
            "drafter=mtpp",
            "override drafter=mtpp: drafter: no drafter named 'mtpp'",
            ["accepted: ", "mtp", "dspark", "did you mean 'mtp'?"],
        ),
        (
            "drafter=mtp,mtpp",
            "override drafter=mtp,mtpp: drafter: no drafter named 'mtpp'",
            ["did you mean 'mtp'?"],
        ),
        (
            "hardware=h2000",
            "override hardware=h2000: hardware: no hardware named 'h2000'",
            ["did you mean 'h200'?"],
        ),
        (
            "workload.output_tokenz=5",
            "override workload.output_tokenz=5: workload.output_tokenz: unknown key",
            ["output_tokens", "did you mean 'output_tokens'?"],
        ),
        (
            "+workload.output_tokenz=5",
            "override +workload.output_tokenz=5: workload.output_tokenz: unknown key",
            ["did you mean 'output_tokens'?"],
        ),
        ("sed=3", "override sed=3: sed: unknown key", ["seed", "did you mean 'seed'?"]),
    ],
)
def test_check_overrides_rejects_unknown_options_and_keys(
    override: str, start: str, fragments: list[str]
) -> None:
    line = _error(lambda: check_overrides([override])).line()
    assert line.startswith(start)
    for fragment in fragments:
        assert fragment in line


@pytest.mark.parametrize(
    "override",
    [
        "drafter=mtp",
        "k=3",
        "k=3,8,15",
        "workload.output_tokens=800",
        "workload.concurrency=[1,4,16]",
        "runtime.url=http://127.0.0.1:8000",
        "hydra.sweep.dir=/tmp/x",
        "seed=2",
        "hardware.achieved.bandwidth=0.5",
    ],
)
def test_check_overrides_accepts_the_documented_overrides(override: str) -> None:
    check_overrides([override])


def test_check_overrides_rejects_unknown_nested_keys() -> None:
    line = _error(lambda: check_overrides(["hardware.achieved.bandwith=0.5"])).line()
    assert "hardware.achieved.bandwith: unknown key" in line
    assert "did you mean 'bandwidth'?" in line


def test_spec_error_line_caps_a_long_accepted_list() -> None:
    err = SpecError("conf/x.yaml", "x.y", "bad", accepted=[f"v{i}" for i in range(30)], value="v3")
    line = err.line()
    assert line.startswith("conf/x.yaml: x.y: bad; accepted: v0, v1, ")
    assert "v18, v19, ..." in line and "v20" not in line
    assert "did you mean" not in line  # the value is itself accepted


def test_did_you_mean_only_suggests_close_names() -> None:
    assert did_you_mean("mtpp", ["mtp", "dspark", "none"]) == "mtp"
    assert did_you_mean("zzzz", ["mtp", "dspark", "none"]) is None


def test_conf_and_experiments_of_the_clone_are_used(repo: Path) -> None:
    assert paths.conf_dir() == repo / "conf"
    assert paths.experiments_dir() == repo / "experiments"


@pytest.mark.parametrize(
    ("overrides", "works"),
    [
        (["workload=prefill_sweep", "workload.prompt_tokens=2048"], "workload.prompt_lengths=[N]"),
        (["workload=fresh_generation", "workload.prompt_tokens=2048"], "workload.material=prose"),
        (["workload=short_chat", "+workload.prompt_lengths=[128,256]"], "workload.material=prose"),
    ],
)
def test_an_override_that_does_nothing_names_the_key_that_works(
    compose_cfg: Callable[..., Any], overrides: list[str], works: str
) -> None:
    data, choices = compose_cfg(*overrides)
    line = _error(lambda: to_spec(data, choices, overrides)).line()
    assert (
        line.startswith(f"override {overrides[1]}: ") and "does nothing" in line and works in line
    )


def test_an_override_that_works_is_accepted(compose_cfg: Callable[..., Any]) -> None:
    overrides = ["workload=prefill_sweep", "workload.prompt_lengths=[2048]"]
    data, choices = compose_cfg(*overrides)
    assert to_spec(data, choices, overrides).workload.prompt_lengths == [2048]
    overrides = ["workload=edit_heavy", "workload.prompt_tokens=2048"]
    data, choices = compose_cfg(*overrides)
    assert to_spec(data, choices, overrides).workload.prompt_tokens == 2048


def test_a_sweep_joining_a_running_ray_cluster_leaves_the_object_store_to_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Hydra's Ray launcher sets object_store_memory unless a value is there; Ray refuses any when
    it connects to a running cluster, so with an address specexp leaves it to the cluster."""
    from types import SimpleNamespace

    from omegaconf import OmegaConf

    from specexp.run.sweeper import for_a_running_ray_cluster

    def launcher(**init: object) -> SimpleNamespace:
        return SimpleNamespace(ray_cfg=OmegaConf.create({"init": init}))

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    local = launcher(address=None)
    for_a_running_ray_cluster(local)
    assert "object_store_memory" not in local.ray_cfg.init  # a Ray of its own: the launcher's size
    given = launcher(address="127.0.0.1:6379")
    for_a_running_ray_cluster(given)
    assert given.ray_cfg.init.object_store_memory is None
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:6379")
    by_env = launcher(address=None)
    for_a_running_ray_cluster(by_env)
    assert by_env.ray_cfg.init.object_store_memory is None
    chosen = launcher(address="127.0.0.1:6379", object_store_memory=10**9)
    for_a_running_ray_cluster(chosen)
    assert chosen.ray_cfg.init.object_store_memory == 10**9  # the user's choice stands
    for_a_running_ray_cluster(SimpleNamespace())  # another launcher: nothing to do


def test_a_key_the_chosen_file_does_not_set_is_answered_in_one_line() -> None:
    """Hydra refuses to override a key the chosen option's file lacks; the user gets the fix."""
    from specexp.run.compose import compose_run

    with pytest.raises(SpecError) as info:
        compose_run(["workload=task_scores", "workload.samples=10"])
    assert info.value.line() == (
        "override workload.samples=10: workload.samples: the chosen workload file does not set "
        "samples: add it with a leading +, as +workload.samples=10"
    )


@pytest.mark.parametrize(
    ("overrides", "keys"),
    [
        (
            ["workload=task_scores", "+workload.samples=10"],
            "workload.samples (samples) and workload.task",
        ),
        (
            ["workload=agentic_sessions", "+workload.trace_file=t.jsonl"],
            "workload.session (session) and workload.trace_file (trace)",
        ),
    ],
)
def test_two_ways_of_driving_a_workload_are_refused(
    compose_cfg: Callable[..., Any], overrides: list[str], keys: str
) -> None:
    data, choices = compose_cfg(*overrides)
    line = _error(lambda: to_spec(data, choices, overrides)).line()
    assert keys in line and "set one of them" in line


def test_a_rate_search_keeps_its_rates(compose_cfg: Callable[..., Any]) -> None:
    overrides = [
        "workload=fresh_generation",
        "workload.search=max_rate",
        "workload.request_rate=[1,8]",
        "workload.num_requests=8",
        "slo.ttft_s=1",
    ]
    data, choices = compose_cfg(*overrides)
    assert to_spec(data, choices, overrides).workload.kind == "search"


def test_a_drafter_cost_the_device_fits_itself_cannot_be_overridden_for_all(
    compose_cfg: Callable[..., Any],
) -> None:
    """conf/drafter/mtp.yaml fits the head's kernel efficiency on the H200 apart: the drafter-wide
    key would do nothing there, so the line names the one that works."""
    overrides = ["hardware=h200", "drafter=mtp", "k=3", "drafter.cost.kernel_efficiency=0.5"]
    data, choices = compose_cfg(*overrides)
    line = _error(lambda: to_spec(data, choices, overrides)).line()
    assert "does nothing on hardware=h200" in line
    assert "drafter.cost.devices.h200.kernel_efficiency" in line
    spark = ["hardware=dgx_spark", "drafter=mtp", "k=3", "drafter.cost.kernel_efficiency=0.5"]
    data, choices = compose_cfg(*spark)
    assert to_spec(data, choices, spark).drafter.cost.kernel_efficiency == 0.5
    works = [
        "hardware=h200",
        "drafter=mtp",
        "k=3",
        "drafter.cost.devices.h200.kernel_efficiency=0.5",
    ]
    data, choices = compose_cfg(*works)
    assert to_spec(data, choices, works).drafter.cost.on("h200").kernel_efficiency == 0.5

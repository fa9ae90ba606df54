"""Which GPUs this machine has, and whether a hardware profile names them.

A measured record carries its hardware profile (`hardware=h200`) as a condition of every figure in it,
and the simulator, the checker and every comparison read that profile as the truth. A job that starts
its server here on another card than the profile names (an H100 where the sweep says `hardware=h200`:
lent machines of one size may be either) would write an H100's figures under an H200's name. So before
any server starts, the plan compares the names NVML gives this machine's GPUs with the profile's
`device_names` and refuses the cell on a mismatch, naming both and the profiles that do fit.

`python -m specexp.measure.gpu_identity` prints the profiles that fit this machine's first GPU, one a
line (nothing, and exit status 1, where none does or NVML cannot be read).

Nothing is checked where it cannot be known: a simulated run, a server reached at `runtime.url` (its
GPUs are not this machine's), a sweep whose jobs run on other machines (a SLURM or Ray launcher: each
job checks on its own node), CPU hardware (`gpu_count: 0`), a profile without `device_names`, no NVML
here (no `nvidia-ml-py`, no driver), or a `CUDA_VISIBLE_DEVICES` or device order that cannot be mapped
onto NVML's devices.
"""

from __future__ import annotations

import functools
import os
import re
import sys
from collections.abc import Callable, Sequence

import yaml
from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from specexp.spec import paths
from specexp.spec.hardware import HardwareSpec


@functools.cache
def _nvml_devices() -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """NVML's names and UUIDs of this machine's GPUs, in its (PCI bus) order; None where NVML cannot be
    read (no `nvidia-ml-py`, no driver). Read once a process: the plan asks for every cell."""
    try:
        import pynvml  # nvidia-ml-py
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return None
    try:
        handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
        names = tuple(_text(pynvml.nvmlDeviceGetName(h)) for h in handles)
        uuids = tuple(_text(pynvml.nvmlDeviceGetUUID(h)) for h in handles)
    except pynvml.NVMLError:
        return None
    finally:
        pynvml.nvmlShutdown()
    return names, uuids


def local_gpu_indices() -> list[int] | None:
    """NVML's indices of the GPUs a server started here would use, in CUDA's order: those
    `CUDA_VISIBLE_DEVICES` lists, else all. None where that cannot be told (`visible_indices`)."""
    devices = _nvml_devices()
    if devices is None:
        return None
    return visible_indices(
        *devices,
        os.environ.get("CUDA_VISIBLE_DEVICES"),
        os.environ.get("CUDA_DEVICE_ORDER", "FASTEST_FIRST"),
    )


def local_gpu_names() -> tuple[str, ...] | None:
    """The names NVML gives the GPUs a server started here would use, in CUDA's order; None where
    NVML cannot be read or CUDA's numbering cannot be mapped onto it."""
    devices, indices = _nvml_devices(), local_gpu_indices()
    if devices is None or indices is None:
        return None
    return tuple(devices[0][i] for i in indices)


_servers_here = True


def servers_here(here: bool) -> None:
    """Say whether the sweep's servers start on this machine (False under a SLURM or Ray launcher,
    whose jobs check on their own nodes)."""
    global _servers_here
    _servers_here = here


def gpus_of_servers() -> tuple[str, ...] | None:
    """The names of the GPUs a server of this sweep would use, or None where they are not this
    machine's or cannot be read."""
    return local_gpu_names() if _servers_here else None


def visible_indices(
    names: Sequence[str],
    uuids: Sequence[str],
    listed: str | None,
    order: str | None = "PCI_BUS_ID",
) -> list[int] | None:
    """The indices into `names` (NVML's, in PCI bus order) of the devices CUDA numbers 0, 1, ... under
    CUDA_VISIBLE_DEVICES=`listed` (indices, or UUIDs and unambiguous prefixes of them) and
    CUDA_DEVICE_ORDER=`order`. None where that cannot be told: an entry that matches no device or
    several, or cards of more than one kind numbered fastest first (CUDA's default order, which NVML
    does not give)."""
    if order != "PCI_BUS_ID" and len(set(names)) > 1:
        return None
    if listed is None:
        return list(range(len(names)))
    chosen = []
    for entry in (e.strip() for e in listed.split(",") if e.strip()):
        if entry.isdigit():
            matches = [int(entry)] if int(entry) < len(names) else []
        else:
            matches = [i for i, u in enumerate(uuids) if u.startswith(entry)]
        if len(matches) != 1:
            return None
        chosen.append(matches[0])
    return chosen


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def names_fit(patterns: Sequence[str], gpu_name: str) -> bool:
    """Whether `gpu_name` (NVML's, e.g. 'NVIDIA H100 80GB HBM3') holds one of `patterns` as whole
    words, in any case: 'H200' fits 'NVIDIA H200' but not 'NVIDIA GH200 480GB'."""
    return any(
        re.search(rf"(?<!\w){re.escape(p)}(?!\w)", gpu_name, re.IGNORECASE) for p in patterns
    )


def mismatch(
    hardware: HardwareSpec,
    names: Sequence[str] | None,
    profiles: Callable[[str], list[str]] = lambda _: [],
) -> str | None:
    """Why `hardware` does not describe GPUs named `names` (the first `hardware.gpu_count` of them,
    those a started server uses), or None where it does or nothing can be told. `profiles(name)` lists
    the hardware profiles whose `device_names` fit a GPU name, for the message."""
    if names is None or hardware.gpu_count < 1 or not hardware.device_names:
        return None
    used = list(names[: hardware.gpu_count])
    file = paths.option_file("hardware", hardware.name)
    where = f"{file}: device_names" if file else "hardware.device_names"
    if len(used) < hardware.gpu_count:
        return (
            f"hardware={hardware.name} has gpu_count {hardware.gpu_count}, but a server here would see "
            f"{len(names)} GPU(s) ({', '.join(repr(n) for n in names) or 'none'}): set "
            f"hardware.gpu_count={len(names)} or CUDA_VISIBLE_DEVICES"
        )
    wrong = [(i, n) for i, n in enumerate(used) if not names_fit(hardware.device_names, n)]
    if not wrong:
        return None
    index, name = wrong[0]
    fitting = profiles(name)
    hint = (
        f"set hardware={' or hardware='.join(fitting)}"
        if fitting
        else "choose the profile of the card that serves, or add its name to device_names"
    )
    return (
        f"hardware={hardware.name} ({where} {', '.join(hardware.device_names)}) does not describe "
        f"the server's GPU {index}, {name!r}: {hint}"
    )


def profiles_naming(gpu_name: str) -> list[str]:
    """The hardware profiles (conf/hardware/ and the user's) whose `device_names`, a list, fit
    `gpu_name`. A file that cannot be read or resolved is passed over: this only names a way out."""
    fitting = []
    for name in paths.options("hardware"):
        file = paths.option_file("hardware", name)
        try:
            conf = OmegaConf.load(file) if file else None
            patterns = conf.get("device_names") if isinstance(conf, DictConfig) else None
            listed = list(patterns) if isinstance(patterns, ListConfig) else []
        except (OSError, yaml.YAMLError, OmegaConfBaseException):
            continue
        if names_fit([str(p) for p in listed if isinstance(p, str)], gpu_name):
            fitting.append(name)
    return fitting


def main() -> int:
    names = local_gpu_names()
    fitting = profiles_naming(names[0]) if names else []
    for name in fitting:
        print(name)
    return 0 if fitting else 1


if __name__ == "__main__":
    sys.exit(main())

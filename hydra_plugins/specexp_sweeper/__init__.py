"""Hydra accepts plugins only from the `hydra_plugins` namespace; the logic is in specexp.run.sweeper."""

from specexp.run.sweeper import Sweeper


class SpecexpSweeper(Sweeper):
    """specexp's sweeper: validate every cell, print the plan, launch in server order."""


__all__ = ["SpecexpSweeper"]

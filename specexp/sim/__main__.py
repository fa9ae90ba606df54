"""`python -m specexp.sim [overrides] [--port P] [--speed X]`: the simulator as an HTTP server (cli.py)."""

from specexp.sim.cli import main

main()

"""`python -m specexp.sim [overrides] [--port P] [--speed X]`: the simulator as an HTTP server (cli.py)."""

from specexp.simserve.command import main

main()

"""`python -m specexp.sim`: the command name the vocabulary fixes; the server is specexp.simserve."""

from specexp.simserve.command import main

main()

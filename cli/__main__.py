"""``python -m graphq.cli``: the same as the ``graphq`` console script."""

from graphq.cli.main import main

main(prog_name="graphq")

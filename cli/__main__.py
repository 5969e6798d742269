"""``python -m cli``: the same as the ``graphq`` console script."""

from cli.main import main

main(prog_name="graphq")

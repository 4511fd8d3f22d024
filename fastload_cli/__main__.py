"""``python -m fastload_cli`` is the same program as ``fastload``."""

from fastload_cli.cli import main

main()

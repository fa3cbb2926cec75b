"""`python -m shortflow` is the `shortflow` command."""

from shortflow.cli import main

main()

"""`python -m envcheck`."""

from envcheck.cli import console

console()

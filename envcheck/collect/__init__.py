"""Collectors that run *inside* the checked environment with its own python3: standard library only (Python >=
3.10), since that interpreter has none of envcheck's dependencies."""

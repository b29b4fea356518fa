"""Collectors that run *inside* the environment being checked, with that environment's own python3.

Everything here is standard library only (Python >= 3.10) because the target interpreter has none of
envcheck's dependencies: ``python3 -m envcheck.collect.probe`` (or ``python3 path/to/probe.py``) prints
one JSON document describing the interpreter, its installed distributions, torch, flash-attn, CUDA
libraries, container markers, memory and nvidia-smi readings. ``envcheck.sources.host`` turns that
document into an Inventory. The JSON is documented in ``docs/inventory.md``.
"""

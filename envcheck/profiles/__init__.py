"""Shipped target profiles (TOML)."""

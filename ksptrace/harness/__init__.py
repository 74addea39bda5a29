"""Measuring solves: one subpackage per job, in layers (pyproject.toml's harness-layers;
docs/architecture.md, "The harness").
"""

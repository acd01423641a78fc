"""Utilities built on the core: gradient checkpointing."""

from . import checkpoint

__all__ = ["checkpoint"]

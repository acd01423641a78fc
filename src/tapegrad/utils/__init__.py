"""Utilities built on the core: ``tg.utils.data`` (datasets and loaders) and
``tg.utils.checkpoint`` (gradient checkpointing)."""

from . import checkpoint, data

__all__ = ["checkpoint", "data"]

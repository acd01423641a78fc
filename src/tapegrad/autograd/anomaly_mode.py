"""``tg.autograd.anomaly_mode``, as ``torch.autograd.anomaly_mode`` (implemented in anomaly.py)."""

from __future__ import annotations

from .anomaly import detect_anomaly, is_anomaly_enabled, set_detect_anomaly

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled"]

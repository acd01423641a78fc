"""``tapegrad.onnx``: importable so scripts load; ONNX export does not exist in tapegrad."""

from __future__ import annotations

__all__ = ["export"]


def export(model, args=None, f=None, *rest, **kwargs):
    """Raises: tapegrad cannot export ONNX graphs."""
    raise RuntimeError(
        "torch.onnx.export is not available in tapegrad: it has no ONNX exporter. Save the "
        "weights with tapegrad.save(model.state_dict(), path) and load them into a PyTorch "
        "copy of the model to export from there, or use tapegrad.jit.cache to speed up a step."
    )

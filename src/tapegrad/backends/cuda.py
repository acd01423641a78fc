"""``torch.backends.cuda``: accepted flags (``matmul.allow_tf32`` ...); no effect on the CPU."""

from types import SimpleNamespace

matmul = SimpleNamespace(allow_tf32=False, allow_fp16_reduced_precision_reduction=True,
                         allow_bf16_reduced_precision_reduction=True)  # fmt: skip


def is_built() -> bool:
    return False


def flash_sdp_enabled() -> bool:
    return False


def enable_flash_sdp(enabled: bool) -> None:
    """Accepted and ignored."""

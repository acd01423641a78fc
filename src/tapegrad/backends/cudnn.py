"""``torch.backends.cudnn``: accepted flags; tapegrad has no cuDNN."""

enabled = True
benchmark = False
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    return False


def version():
    return None

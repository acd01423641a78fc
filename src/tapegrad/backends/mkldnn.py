"""``torch.backends.mkldnn``: accepted flag; tapegrad uses NumPy's BLAS."""

enabled = True


def is_available() -> bool:
    return False

"""``torch.backends.mps``: Apple's Metal backend does not exist in tapegrad."""


def is_available() -> bool:
    return False


def is_built() -> bool:
    return False

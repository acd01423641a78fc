"""``tapegrad.backends``, as ``torch.backends``: flags that scripts set for speed or determinism.

tapegrad computes with NumPy on the CPU, so the flags are accepted and have no effect
(``cudnn``/``mps``/``mkldnn`` report ``is_available() == False``); results are
deterministic whatever ``cudnn.deterministic`` says.
"""

from . import cpu, cuda, cudnn, mkldnn, mps, openmp

__all__ = ["cpu", "cuda", "cudnn", "mkldnn", "mps", "openmp"]

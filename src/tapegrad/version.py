"""``torch.version``: the version, and the accelerator toolkits this build has (none)."""

__all__ = ["__version__", "cuda", "hip", "rocm", "xpu", "debug", "git_version"]

__version__ = "0.1.0"
cuda = None  # no CUDA toolkit: tapegrad computes with NumPy on the CPU
hip = None
rocm = None
xpu = None
debug = False
git_version = "unknown"

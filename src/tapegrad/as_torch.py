"""Run a PyTorch program on tapegrad without editing it.

``python -m tapegrad.as_torch train.py [args ...]`` runs ``train.py`` as ``__main__``
with ``import torch`` (and every ``torch.<sub>``: ``torch.nn``, ``torch.utils.data``, ...)
resolving to ``tapegrad`` (``tapegrad.<sub>``). In a program or notebook, call
:func:`install` before the first ``import torch``.

The alias is an import hook, not a second copy: ``torch.nn is tapegrad.nn``.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import runpy
import sys

__all__ = ["install", "uninstall", "TorchAlias"]


_REAL_SPECS: dict = {}  # tapegrad module name -> its own spec, between create and exec


class TorchAlias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Import ``torch`` / ``torch.x.y`` as ``tapegrad`` / ``tapegrad.x.y``."""

    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            return importlib.util.spec_from_loader(name, self)
        return None

    def create_module(self, spec):
        module = importlib.import_module("tapegrad" + spec.name[len("torch") :])
        _REAL_SPECS[module.__name__] = module.__spec__  # importlib sets the alias's next
        return module

    def exec_module(self, module):
        # NOTE: give tapegrad's module back its own __spec__: with the alias's
        # (``torch.func``) every function-level relative import inside it warned
        # "__package__ != __spec__.parent" (an ImportWarning; an error under -W error).
        spec = _REAL_SPECS.pop(module.__name__, None)
        if spec is not None and spec.name == module.__name__:
            module.__spec__ = spec


def _torch_names():
    return [k for k in sys.modules if k == "torch" or k.startswith("torch.")]


def install() -> None:
    """Make ``import torch`` give tapegrad from now on.

    Raises:
        RuntimeError: if the real PyTorch is already imported in this process.
    """
    if any(isinstance(f, TorchAlias) for f in sys.meta_path):
        return
    real = [k for k in _torch_names() if not sys.modules[k].__name__.startswith("tapegrad")]
    if real:
        raise RuntimeError(
            "tapegrad.as_torch.install(): PyTorch is already imported in this process; call "
            "install() before the first `import torch`"
        )
    sys.meta_path.insert(0, TorchAlias())


def uninstall() -> None:
    """Undo :func:`install`: ``torch`` names imported through the alias are forgotten."""
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, TorchAlias)]
    for k in _torch_names():
        if sys.modules[k].__name__.startswith("tapegrad"):
            del sys.modules[k]


def main(argv=None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m tapegrad.as_torch SCRIPT.py [ARGS ...]")
        raise SystemExit(0 if argv else 2)
    install()
    sys.argv = argv
    runpy.run_path(argv[0], run_name="__main__")


if __name__ == "__main__":
    main()

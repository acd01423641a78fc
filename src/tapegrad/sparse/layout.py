"""Memory layouts, as ``torch.layout``: ``tg.strided`` (dense) and ``tg.sparse_coo``."""

from __future__ import annotations

from ..tensor import Tensor

__all__ = ["Layout", "strided", "sparse_coo"]


class Layout:
    """A memory layout, as ``torch.layout``: ``tg.strided`` (dense) or ``tg.sparse_coo``."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"torch.{self.name}"

    def __reduce__(self):
        return (_layout_named, (self.name,))


strided = Layout("strided")
sparse_coo = Layout("sparse_coo")


def _layout_named(name: str) -> Layout:
    return {"strided": strided, "sparse_coo": sparse_coo}[name]


Tensor.layout = strided

"""Table rows: sum and mean."""

from . import OpCase

CASES = [
    OpCase("sum", lambda m, x: x.sum(), [(3, 4)]),
    OpCase("sum", lambda m, x: x.sum(dim=1), [(3, 4)], name="dim"),
    OpCase("sum", lambda m, x: x.sum(dim=(0, 2), keepdim=True), [(2, 3, 4)], name="keepdim"),
    OpCase("sum", lambda m, x: x.sum(-1), [(0, 3)], name="empty"),
    OpCase("sum", lambda m, x: x.sum(), [()], name="0d"),
    OpCase("mean", lambda m, x: x.mean(), [(3, 4)]),
    OpCase("mean", lambda m, x: x.mean(dim=0, keepdim=True), [(3, 4)], name="dim"),
    OpCase("mean", lambda m, x: x.mean(dim=(-1, -2)), [(2, 3, 4)], name="dims"),
]

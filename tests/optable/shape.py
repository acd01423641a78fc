"""Table rows: shape ops."""

from . import OpCase

CASES = [
    OpCase("reshape", lambda m, x: x.reshape(4, 3) * 1.0, [(3, 4)]),
    OpCase("reshape", lambda m, x: x.reshape(-1), [(2, 3, 2)], name="infer"),
    OpCase("view", lambda m, x: x.view(2, 6), [(3, 4)]),
    OpCase("transpose", lambda m, x: x.transpose(0, 2), [(2, 3, 4)]),
    OpCase("transpose", lambda m, x: x.T * 2.0, [(3, 4)], name="T"),
    OpCase("transpose", lambda m, x: x.mT, [(2, 3, 4)], name="mT"),
    OpCase("permute", lambda m, x: x.permute(2, 0, 1), [(2, 3, 4)]),
    OpCase("expand", lambda m, x: x.expand(2, 3, 4), [(3, 1)]),
    OpCase("expand", lambda m, x: x.expand(-1, 5), [(3, 1)], name="keep"),
    OpCase("broadcast_to", lambda m, x: m.broadcast_to(x, (4, 3)), [(3,)]),
    OpCase("squeeze", lambda m, x: x.squeeze(1), [(3, 1, 2)]),
    OpCase("squeeze", lambda m, x: x.squeeze(), [(1, 3, 1)], name="all"),
    OpCase("unsqueeze", lambda m, x: x.unsqueeze(-1), [(3, 2)]),
]

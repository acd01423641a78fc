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


def _pad(m):
    """torch.nn.functional.pad, or tapegrad's pad op (the same tuple convention)."""
    if m.__name__ == "torch":
        return m.nn.functional.pad
    from tapegrad.ops.joining import pad  # noqa: PLC0415

    return pad


CASES += [
    OpCase("flatten", lambda m, x: x.flatten(), [(2, 3, 2)]),
    OpCase("flatten", lambda m, x: m.flatten(x, 1, 2), [(2, 3, 2, 1)], name="range"),
    OpCase("flatten", lambda m, x: x.flatten() * 2.0, [()], name="0d"),
    OpCase("unflatten", lambda m, x: x.unflatten(1, (2, -1)), [(2, 6)]),
    OpCase("movedim", lambda m, x: m.movedim(x, 0, -1), [(2, 3, 4)]),
    OpCase("movedim", lambda m, x: x.movedim((0, 1), (2, 0)), [(2, 3, 4)], name="multi"),
    OpCase("repeat", lambda m, x: x.repeat(2, 1, 3), [(2, 3)]),
    OpCase("repeat", lambda m, x: x.repeat(2, 3), [()], name="0d"),
    OpCase("tile", lambda m, x: m.tile(x, (2,)), [(2, 3)]),
    OpCase("flip", lambda m, x: x.flip((0, 2)), [(2, 3, 2)]),
    OpCase("roll", lambda m, x: x.roll(1, 1), [(2, 3)]),
    OpCase("roll", lambda m, x: m.roll(x, (2, -1), (0, 1)), [(3, 4)], name="multi"),
    OpCase("roll", lambda m, x: x.roll(4), [(2, 3)], name="flat"),
    OpCase("narrow", lambda m, x: x.narrow(1, 1, 2), [(2, 4)]),
    OpCase("narrow", lambda m, x: m.narrow(x, 0, -2, 2), [(3, 2)], name="negative-start"),
    OpCase("split", lambda m, x: x.split(2, dim=1), [(2, 5)]),
    OpCase("split", lambda m, x: m.split(x, [1, 0, 2]), [(3, 2)], name="sizes"),
    OpCase("split", lambda m, x: x.split(2)[1], [(5,)], name="one-piece-used"),
    OpCase("chunk", lambda m, x: x.chunk(3, -1), [(2, 7)]),
    OpCase("cat", lambda m, x, y: m.cat([x, y], 1), [(2, 3), (2, 2)]),
    OpCase("cat", lambda m, x, y: m.cat((x, y, x), -1), [(2, 0), (2, 3)], name="empty-repeat"),
    OpCase("stack", lambda m, x, y: m.stack([x, y]), [(2, 3), (2, 3)]),
    OpCase("stack", lambda m, x, y: m.stack([x, y], dim=-1), [(), ()], name="0d"),
    OpCase("pad", lambda m, x: _pad(m)(x, (1, 2)), [(2, 3)]),
    OpCase("pad", lambda m, x: _pad(m)(x, (-1, 1, 2, 0), value=0.5), [(2, 3)], name="crop"),
    OpCase("pad", lambda m, x: _pad(m)(x, (2, 1), mode="reflect"), [(2, 4)], name="reflect"),
    OpCase(
        "pad",
        lambda m, x: _pad(m)(x, (1, 2, 2, 1), mode="replicate"),
        [(1, 2, 3)],
        name="replicate",
    ),
    OpCase("pad", lambda m, x: _pad(m)(x, (1, 2), mode="circular"), [(1, 2, 3)], name="circular"),
]

# -- 0-d and empty inputs (tests/test_edge_shapes.py checks every op; these show the shapes) --
CASES += [
    OpCase("reshape", lambda m, x: x.reshape(1, 1), [()], name="0d"),
    OpCase("reshape", lambda m, x: x.reshape(3, 0), [(0, 3)], name="empty"),
    OpCase("transpose", lambda m, x: x.transpose(0, 2), [(2, 0, 3)], name="empty"),
    OpCase("expand", lambda m, x: x.expand(2, 3), [()], name="0d"),
    OpCase("squeeze", lambda m, x: x.squeeze(1), [(0, 1, 3)], name="empty"),
    OpCase("unsqueeze", lambda m, x: x.unsqueeze(0), [()], name="0d"),
    OpCase("movedim", lambda m, x: x.movedim(0, -1), [(0, 2, 3)], name="empty"),
    OpCase("tile", lambda m, x: m.tile(x, (2, 3)), [()], name="0d"),
    OpCase("flip", lambda m, x: x.flip(0), [()], name="0d"),
    OpCase("roll", lambda m, x: x.roll(1, 0), [(0, 3)], name="empty"),
    OpCase("narrow", lambda m, x: x.narrow(1, 1, 0), [(2, 3)], name="empty"),
    OpCase("chunk", lambda m, x: x.chunk(2, 1), [(3, 0)], name="empty"),
    OpCase("stack", lambda m, x, y: m.stack([x, y], 1), [(0, 3), (0, 3)], name="empty"),
    OpCase("pad", lambda m, x: _pad(m)(x, (1, 1), value=0.5), [(2, 0)], name="empty"),
]

CASES += [
    OpCase("contiguous", lambda m, x: x.T.contiguous() * 2.0, [(3, 4)]),
]

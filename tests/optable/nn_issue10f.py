"""Table rows: nn ops registered by issue 10 (channel_shuffle, aten's grid samplers)."""

from . import OpCase


def _grid(shape):
    """Input in (-2, 2) and a grid in (-0.9, 0.9) (sample points inside the input)."""

    def make(rng):
        return [rng.uniform(-2, 2, size=shape[0]), rng.uniform(-0.9, 0.9, size=shape[1])]

    return make


CASES = [
    OpCase("channel_shuffle", lambda m, x: m.channel_shuffle(x, 2), [(2, 4, 3)]),
    OpCase("channel_shuffle", lambda m, x: m.channel_shuffle(x, 3), [(1, 6, 2, 2)], name="4d"),
    OpCase(
        "grid_sampler_2d",
        lambda m, x, g: m.grid_sampler_2d(x, g, 0, 0, False),
        [(1, 2, 4, 5), (1, 3, 2, 2)],
        inputs=_grid([(1, 2, 4, 5), (1, 3, 2, 2)]),
    ),
    OpCase(
        "grid_sampler_2d",
        lambda m, x, g: m.grid_sampler_2d(x, g, 2, 1, True),
        [(1, 2, 4, 5), (1, 3, 2, 2)],
        name="bicubic-border",
        inputs=_grid([(1, 2, 4, 5), (1, 3, 2, 2)]),
    ),
    OpCase(
        "grid_sampler_3d",
        lambda m, x, g: m.grid_sampler_3d(x, g, 0, 2, False),
        [(1, 2, 3, 3, 4), (1, 2, 2, 1, 3)],
        name="reflection",
        inputs=_grid([(1, 2, 3, 3, 4), (1, 2, 2, 1, 3)]),
    ),
    OpCase(
        "grid_sampler",
        lambda m, x, g: m.grid_sampler(x, g, 0, 1, True),
        [(2, 1, 3, 4), (2, 2, 3, 2)],
        inputs=_grid([(2, 1, 3, 4), (2, 2, 3, 2)]),
    ),
]

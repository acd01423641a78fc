"""Table rows: elementwise functions and where."""



from . import OpCase, away_from

CASES = [
    OpCase("exp", lambda m, x: m.exp(x), [(2, 3)]),
    OpCase("log", lambda m, x: m.log(x), [(2, 3)], domain=(0.2, 3)),
    OpCase("sqrt", lambda m, x: m.sqrt(x), [(2, 3)], domain=(0.2, 3)),
    OpCase("tanh", lambda m, x: m.tanh(x), [(2, 3)]),
    OpCase("tanh", lambda m, x: x.tanh(), [()], name="0d"),
    OpCase("sigmoid", lambda m, x: m.sigmoid(x), [(2, 3)], domain=(-6, 6)),
    OpCase("relu", lambda m, x: m.relu(x), [(3, 4)], inputs=lambda rng: [away_from([0], -2, 2)((3, 4))(rng)], gradgrad=True),
    OpCase("where", lambda m, x, y: m.where(x > 0, x, y), [(3, 4), (4,)]),
    OpCase("where", lambda m, x: m.where(x > 0.5, x * 2.0, x.exp()), [(5,)], name="one-input",
           inputs=lambda rng: [away_from([0.5], -2, 2)((5,))(rng)]),
]


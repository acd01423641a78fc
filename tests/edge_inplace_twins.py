"""0-d and empty rows for test_edge_shapes.py: the ``_`` twins of the hand-written ops
(tests/optable/inplace_twins.py has their (3, 4) rows; Note [Generated in-place twins])."""

_UNARY = (
    "abs_ neg_ exp_ expm1_ sin_ cos_ tan_ tanh_ sigmoid_ erf_ conj_physical_ relu_ "
    "log_ log1p_ sqrt_ rsqrt_"
).split()
_STEPS = "sign_ ceil_ floor_ round_".split()
_POS = {"log_", "log1p_", "sqrt_", "rsqrt_"}

# Twins whose operands (index, source, matrices) are shaped after self: their out-of-place
# ops have 0-d and empty rows, and the twins run on (3, 4) in test_inplace_methods.py.
EXCLUDED = dict.fromkeys(
    "scatter_ scatter_add_ scatter_reduce_ index_add_ index_copy_ index_put_ index_reduce_ "
    "put_ masked_scatter_ addmm_ addmv_ addbmm_ baddbmm_ addr_ renorm_ fill_diagonal_".split(),
    "operands shaped after self: covered at (3, 4) by tests/test_inplace_methods.py; the "
    "out-of-place op has 0-d and empty rows",
)


def _call(name, *args):
    return lambda m, x: getattr(x * 1.0, name)(*args)


def rows(E, X, U):
    out = []
    for name in _UNARY:
        out.append(E(name, _call(name), [()], U, domain=(0.3, 2.0) if name in _POS else (-2, 2)))
    for name in _STEPS:  # torch's gradient is a ZeroTensor: compare g·x
        out.append(E(name, (lambda n: lambda m, x: getattr(x * 1.0, n)() * x)(name), [()], U))
    out += [
        E("pow_", _call("pow_", 2.5), [()], U, domain=(0.3, 2.0)),
        E("remainder_", _call("remainder_", 1.5), [()], U, domain=(0.1, 1.4)),
        E("fmod_", _call("fmod_", 1.5), [()], U, domain=(-1.4, 1.4)),
        E("floor_divide_", lambda m, x: (x.detach() * 1.0).floor_divide_(1.5), [()], U),
        E("masked_fill_", lambda m, x: (x * 1.0).masked_fill_(x.detach() > 0, -1.0), [()], U),
        E(
            "index_fill_",
            lambda m, x: (x * 1.0).index_fill_(0, m.tensor([0], dtype=m.int64), -1.0),
            [()],
            [[(1, 0)]],
        ),
        E("cumsum_", _call("cumsum_", 0), [()], U),
        E("cumprod_", _call("cumprod_", 0), [()], U),
        E("tril_", _call("tril_"), X([()]), [[(0, 3)], [(2, 0, 3)]], names=("tril",)),
        E("triu_", _call("triu_", 1), X([()]), [[(0, 3)], [(2, 0, 3)]], names=("triu",)),
        E("t_", _call("t_"), [()], [[(0, 3)], [(0,)]]),
        E("transpose_", _call("transpose_", 0, -1), [()], [[(0, 3)], [(2, 0, 3)]]),
        E("swapaxes_", _call("swapaxes_", 0, -1), [()], [[(0, 3)], [(2, 0, 3)]]),
        E("swapdims_", _call("swapdims_", 0, -1), [()], [[(0, 3)], [(2, 0, 3)]]),
        E("squeeze_", _call("squeeze_"), [()], [[(0, 1)], [(1, 0, 3)]]),
        E("unsqueeze_", _call("unsqueeze_", 0), [()], U),
    ]
    for name in "eq_ ne_ lt_ le_ gt_ ge_".split():
        out.append(
            E(
                name,
                (lambda n: lambda m, x: (x.detach() * 1.0).__getattribute__(n)(0.5))(name),
                [()],
                U,
            )
        )
    return out

"""0-d and empty rows for test_edge_shapes.py, generated from the elementwise op tables
(Note [Op tables] in ops/_table.py) plus the hand-written ops of ops/misc_math.py and the
polynomials of ops/polynomials.py."""

from tapegrad.ops._table import ROWS, Binary
from tapegrad.ops.polynomials import POLYNOMIALS

POS = (0.3, 2.0)

# Inputs that need another form than "float tensors in the row's domain".
_BINARY_FN = {
    "bitwise_and": lambda f: lambda m, x, y: f(m)(x > 0, y > 0),
    "bitwise_or": lambda f: lambda m, x, y: f(m)(x > 0, y > 0),
    "bitwise_xor": lambda f: lambda m, x, y: f(m)(x > 0, y > 0),
    "bitwise_left_shift": lambda f: lambda m, x, y: f(m)((x * 4).long(), (y > 0).long()),
    "bitwise_right_shift": lambda f: lambda m, x, y: f(m)((x * 4).long(), (y > 0).long()),
    "gcd": lambda f: lambda m, x, y: f(m)((x * 4).long(), (y * 4).long()),
    "lcm": lambda f: lambda m, x, y: f(m)((x * 4).long(), (y * 4).long()),
    # PyTorch has no derivative wrt the first argument: hold it constant.
    "igamma": lambda f: lambda m, x, y: f(m)(m.full_like(y, 1.5), y),
    "igammac": lambda f: lambda m, x, y: f(m)(m.full_like(y, 1.5), y),
}
_DOMAIN = {"special_zeta": [(1.5, 3.0), (0.5, 2.0)], "igamma": POS, "igammac": POS}


def _getter(row):
    if row.function:
        return lambda m: getattr(m, row.name)
    if row.special is None:  # an activation of nn.functional
        return lambda m: getattr(m.nn.functional, row.name)
    return lambda m: getattr(m.special, row.special)


def _is_step(row):
    return getattr(row.grad, "__name__", "") == "_zeros"


def rows(E, U, B):
    """The rows, built with test_edge_shapes' row class ``E`` and empty shapes ``U``/``B``."""
    out = []
    for row in ROWS.values():
        f = _getter(row)
        domain = _DOMAIN.get(row.name, row.domain)
        if isinstance(row, Binary):
            fn = _BINARY_FN.get(row.name, lambda f: lambda m, x, y: f(m)(x, y))(f)
            out.append(E(row.name, fn, [(), ()], B, domain=domain))
        elif row.kind == "int":
            out.append(E(row.name, (lambda f: lambda m, x: f(m)(x > 0))(f), [()], U))
        elif row.name == "threshold":
            fn = lambda m, x: m.nn.functional.threshold(x, 0.5, -1.0)  # noqa: E731
            out.append(E(row.name, fn, [()], U))
        elif _is_step(row):  # PyTorch's gradient is a ZeroTensor; compare g·x instead
            out.append(E(row.name, (lambda f: lambda m, x: f(m)(x) * x)(f), [()], U))
        else:
            out.append(E(row.name, (lambda f: lambda m, x: f(m)(x))(f), [()], U, domain=domain))
        if not row.inplace:
            continue
        name = f"{row.name}_"
        if row.name == "threshold":
            fn = lambda m, x: m.nn.functional.threshold(x * 1.0, 0.5, -1.0, inplace=True)  # noqa: E731
            out.append(E(name, fn, [()], U))
        elif row.special is None and not row.method:  # F.elu(inplace=True)
            fn = (lambda n: lambda m, x: getattr(m.nn.functional, n)(x * 1.0, inplace=True))(
                row.name
            )
            out.append(E(name, fn, [()], U, domain=domain))
        elif row.name in ("igamma", "igammac"):
            fn = (lambda n: lambda m, x: getattr(m.full_like(x, 1.5), n)(x))(name)
            out.append(E(name, fn, [()], U, domain=domain))
        elif isinstance(row, Binary):
            fn = (lambda n: lambda m, x, y: getattr(x * 1.0, n)(y))(name)
            if row.kind == "int":
                fn = (lambda n: lambda m, x, y: getattr(x > 0, n)(y > 0))(name)
                if "shift" in row.name or row.name in ("gcd", "lcm"):
                    fn = (lambda n: lambda m, x, y: getattr((x * 4).long(), n)((y > 0).long()))(
                        name
                    )
            # in place: self keeps its shape, so only operands that broadcast to it
            out.append(E(name, fn, [(), ()], [[(0, 3), (3,)], [(0, 3), ()]], domain=domain))
        elif row.kind == "int":
            out.append(E(name, (lambda n: lambda m, x: getattr(x > 0, n)())(name), [()], U))
        elif _is_step(row):
            out.append(E(name, (lambda n: lambda m, x: getattr(x * 1.0, n)() * x)(name), [()], U))
        elif row.name in ("asinh", "acosh", "atanh"):  # torch: no in-place derivative
            fn = (
                lambda n: lambda m, x: getattr(x * 1.0, n if m.__name__ != "torch" else n[:-1])()
            )(name)
            out.append(E(name, fn, [()], U, domain=domain))
        else:
            fn = (lambda n: lambda m, x: getattr(x * 1.0, n)())(name)
            out.append(E(name, fn, [()], U, domain=domain))

    for name in POLYNOMIALS:
        fn = (lambda n: lambda m, x: getattr(m.special, n)(x, 3))(name)
        out.append(E(f"special_{name}", fn, [()], U))

    pair = [(), ()]
    out += [
        E("logit", lambda m, x: m.logit(x), [()], U, domain=(0.1, 0.9)),
        E("logit_", lambda m, x: (x * 1.0).logit_(eps=0.2), [()], U, domain=(0.1, 0.9)),
        E("polygamma", lambda m, x: m.polygamma(1, x), [()], U, domain=POS),
        E("mvlgamma", lambda m, x: m.mvlgamma(x, 2), [()], U, domain=(1.0, 3.0)),
        E("mvlgamma_", lambda m, x: (x * 1.0).mvlgamma_(1), [()], U, domain=POS),
        E("nan_to_num", lambda m, x: m.nan_to_num(x.log()), [()], U),
        E("nan_to_num_", lambda m, x: (x * 1.0).nan_to_num_(posinf=1.0), [()], U),
        E("lerp", lambda m, a, b: m.lerp(a, b, 0.3), pair, B),
        E("lerp_", lambda m, a, b: (a * 1.0).lerp_(b, 0.7), pair, [[(0, 3), (3,)]]),
        E("float_power", lambda m, a, b: m.float_power(a, b), pair, B, domain=POS),
        E("float_power_", lambda m, a: (a.double() * 1.0).float_power_(2), [()], U),
        E("ldexp", lambda m, a, b: m.ldexp(a, b), pair, B),
        E("ldexp_", lambda m, a, b: (a * 1.0).ldexp_(b), pair, [[(0, 3), (3,)]]),
        E("clamp_min", lambda m, x: m.clamp_min(x, 0.5), [()], U),
        E("clamp_max", lambda m, x: x.clamp_max(0.5), [()], U),
        E("clamp_min_", lambda m, x: (x * 1.0).clamp_min_(0.5), [()], U),
        E("clamp_max_", lambda m, x: (x * 1.0).clamp_max_(0.5), [()], U),
        E("positive", lambda m, x: m.positive(x) * 2.0, [()], U),
        E("rsub", lambda m, a, b: m.rsub(a, b, alpha=2.0), pair, B),
        E("frexp", lambda m, x: m.frexp(x), [()], U),
        E("addcmul", lambda m, a, b: m.addcmul(a, b, a, value=0.5), pair, B),
        E("addcdiv", lambda m, a, b: m.addcdiv(a, b, b), pair, B, domain=POS),
        E("addcmul_", lambda m, a, b: (a * 1.0).addcmul_(b, b), pair, [[(0, 3), (3,)]]),
        E("addcdiv_", lambda m, a, b: (a * 1.0).addcdiv_(b, b), pair, [[(0, 3), (3,)]], domain=POS),
        *[
            E(n, (lambda n: lambda m, x: getattr(m, n)(x) * 2.0)(n), [()], U)
            for n in ("real", "conj", "conj_physical", "resolve_conj", "resolve_neg")
        ],
        E("isclose", lambda m, a, b: m.isclose(a, b, atol=0.5), pair, B),
        E("allclose", lambda m, a, b: m.tensor(m.allclose(a, b, atol=0.5)), pair, B),
        E("equal", lambda m, a, b: m.tensor(m.equal(a, a * 1.0)), pair, B),
    ]
    return out

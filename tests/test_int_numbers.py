"""Python numbers next to integer and bool tensors as torch 2.13 treats them (Note [Numbers
beyond an integer dtype] in ops/_int_scalars.py; bool subtraction; in-place cast errors):
each expression runs in both libraries; values, dtypes, error types and messages agree."""

import warnings

import pytest

import tapegrad as tg

EXPRS = [
    # a bool operand in a subtraction is refused (two bools: the xor hint)
    "b - 1", "1 - b", "b - True", "b - b", "i - b", "b - i", "f - b", "b - 1.5", "True - i",
    "i - True", "m.sub(b, 1)", "b.sub(1, alpha=2)", "i.sub_(b)", "f.sub_(b)", "b.sub_(b)",
    "b.sub_(1)", "-b", "b + 1", "b * True", "b + True", "b / 2", "~b", "~u8", "~i", "~i8",
    # ints beyond the dtype wrap around as C casts do
    "u8 + (-1)", "u8 + 300", "u8 - 1", "u8 * -1", "u8 * 2", "i8 + 200", "i8 - 200", "i8 * 2",
    "i16 + 40000", "i32 + 2**31", "i + 2**63", "u8 % -7", "u8 // -1", "u8.fmod(-7)",
    "u8 | 256", "u8 ^ -1", "u8 & 3", "b & 1", "u8 == 256", "u8 < 300", "u8 == -1",
    "u8.eq(256)", "m.tensor([1, 2]).to(m.uint8) - 3", "u8 + 2**64", "u8 / 300", "u8 * 1.5",
    # in place
    "u8.add_(300)", "u8.add_(-1)", "u8.sub_(1)", "u8.mul_(2)", "i8.add_(200)",
    "i.add_(1.5)", "i.mul_(0.5)", "i.div_(2)", "b.add_(1)", "u8.fill_(-1)",
    # fill values and bounds are checked, not wrapped
    "u8.fill_(300)", "u8.clamp(-1, 300)", "u8.clamp(min=-1)", "u8.clamp(max=300)",
    "u8.masked_fill(u8 > 0, 256)", "u8.masked_fill(u8 > 0, -1)", "i8.masked_fill(i8 > 0, -129)",
    "h.masked_fill(h > 0, 70000.0)", "h.clamp(max=70000.0)", "h.masked_fill(h > 0, float('inf'))",
]  # fmt: skip


def _run(m, expr):
    b = m.tensor([True, False])
    u8 = m.tensor([0, 200, 255], dtype=m.uint8)
    i8 = m.tensor([-128, 0, 100], dtype=m.int8)
    i16 = m.tensor([-3, 0, 7], dtype=m.int16)
    i32 = m.tensor([-3, 0, 7], dtype=m.int32)
    i = m.tensor([-3, 0, 7])
    f = m.tensor([1.5, -2.0])
    h = m.tensor([1.5, -2.0], dtype=m.float16)
    names = dict(m=m, b=b, u8=u8, i8=i8, i16=i16, i32=i32, i=i, f=f, h=h)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            r = eval(expr, {}, names)  # noqa: S307 - the table above
    except OverflowError:  # a number beyond uint64/int64: Python's own message words differ
        return ("error", "OverflowError")
    except Exception as e:  # noqa: BLE001 - the error is the result compared
        return ("error", type(e).__name__, str(e).split("\n")[0])
    return ("value", str(r.dtype).replace("torch.", ""), r.tolist())


@pytest.mark.parametrize("expr", EXPRS)
def test_numbers_with_integer_and_bool_tensors_like_torch(torch_mod, expr):
    assert _run(tg, expr) == _run(torch_mod, expr)

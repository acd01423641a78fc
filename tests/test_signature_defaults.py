"""Every default argument of the functions and classes tapegrad shares with torch is torch's
default (names from torch's own namespaces; parameters of the same name; values compared by
equality, functions by name). A default that drifts changes what unchanged PyTorch code
computes without any error."""

import inspect

import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")
from torch._jit_internal import boolean_dispatched  # noqa: E402
from torch.nn.utils import prune as torch_prune  # noqa: E402  (torch does not import it)

NAMESPACES = [
    ("nn.functional", torch.nn.functional, tg.nn.functional),
    ("nn.init", torch.nn.init, tg.nn.init),
    ("nn", torch.nn, tg.nn),
    ("nn.utils", torch.nn.utils, tg.nn.utils),
    ("nn.utils.prune", torch_prune, tg.nn.utils.prune),
    ("optim", torch.optim, tg.optim),
    ("optim.lr_scheduler", torch.optim.lr_scheduler, tg.optim.lr_scheduler),
    ("optim.swa_utils", torch.optim.swa_utils, tg.optim.swa_utils),
    ("autograd", torch.autograd, tg.autograd),
    ("autograd.profiler", torch.autograd.profiler, tg.autograd.profiler),
    ("profiler", torch.profiler, tg.profiler),
    ("autograd.graph", torch.autograd.graph, tg.autograd.graph),
    ("amp", torch.amp, tg.amp),
    ("cuda", torch.cuda, tg.cuda),
    ("func", torch.func, tg.func),
    ("testing", torch.testing, tg.testing),
    ("utils.data", torch.utils.data, tg.utils.data),
]


def _signature(f):
    # torch's pooling functions with ``return_indices`` are boolean dispatches taking
    # (*args, **kwargs): their defaults live in the two functions they dispatch to
    if f in boolean_dispatched:
        f = boolean_dispatched[f]["if_false"]
    try:
        return inspect.signature(f)
    except (TypeError, ValueError):  # builtins without one
        return None


def _pairs():
    for label, theirs, ours in NAMESPACES:
        for name in sorted(dir(theirs)):
            if name.startswith("_"):
                continue
            a, b = getattr(theirs, name), getattr(ours, name, None)
            if b is None or not callable(a) or not callable(b):
                continue
            if isinstance(a, type) != isinstance(b, type):
                continue
            if isinstance(a, type):
                a, b = a.__init__, b.__init__
            yield f"{label}.{name}", a, b


def _same(x, y):
    if isinstance(x, torch.Generator) and y is None:
        return x is torch.default_generator  # None means tapegrad's default generator
    if callable(x) and callable(y):
        return getattr(x, "__name__", None) == getattr(y, "__name__", None)
    if isinstance(x, bool) or isinstance(y, bool):
        return x is y
    return (
        type(x) is type(y)
        and x == y
        or (isinstance(x, (int, float)) and isinstance(y, (int, float)) and x == y)
    )


def test_defaults_are_torchs():
    checked, differ = 0, []
    for label, a, b in _pairs():
        sa, sb = _signature(a), _signature(b)
        if sa is None or sb is None:
            continue
        for name, pa in sa.parameters.items():
            pb = sb.parameters.get(name)
            if pb is None or pa.default is inspect.Parameter.empty:
                continue
            checked += 1
            if not _same(pa.default, pb.default):
                differ.append(f"{label}({name}=): torch {pa.default!r}, tapegrad {pb.default!r}")
    assert not differ, "\n".join(differ)
    assert checked > 600  # the namespaces above really were compared

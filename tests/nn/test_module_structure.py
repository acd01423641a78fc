"""Every nn.Module class tapegrad shares with torch, built with the same arguments, has
torch's repr and torch's state_dict (names and shapes): once with its defaults and once
per boolean option flipped (``bias=False``, ``add_bias_kv=True``, ``affine=False``...).

A class's arguments are found, not listed: the first of a few argument tuples torch's
class accepts (``()``, ``(4,)``, ``(4, 3)``...), or a row of SPECIAL. A mutated
``extra_repr``, a parameter of the wrong shape under an option, or an option that no
longer registers its parameter changes what ``print(model)`` and ``load_state_dict``
see, with no error in a forward pass. A new Module class gets the check for free.
"""

import inspect
import re
import warnings

import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")

PATTERNS = [(), (4,), (4, 3), (4, 2, 3), (2, 4, 3, 2)]
# classes no pattern builds (or would build too big): (args, kwargs) from the library's nn
SPECIAL = {
    "Transformer": lambda nn: (
        (),
        dict(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=1, dim_feedforward=16),
    ),
    "TransformerEncoder": lambda nn: ((nn.TransformerEncoderLayer(8, 2, 16), 2), {}),
    "TransformerDecoder": lambda nn: ((nn.TransformerDecoderLayer(8, 2, 16), 2), {}),
    "Unflatten": lambda nn: ((1, (2, 2)), {}),
    "RNNBase": lambda nn: (("LSTM", 4, 3), {}),
    "AdaptiveLogSoftmaxWithLoss": lambda nn: ((8, 10, [3, 6]), {}),
}
# (class, option) pairs that differ, with the reason
WAIVED: dict = {}


def _classes():
    out = []
    for name in sorted(dir(torch.nn)):
        theirs, ours = getattr(torch.nn, name), getattr(tg.nn, name, None)
        if isinstance(theirs, type) and issubclass(theirs, torch.nn.Module):
            if isinstance(ours, type):
                out.append(name)
    return out


CLASSES = _classes()


def _base(name):
    if name in SPECIAL:
        return SPECIAL[name]
    cls = getattr(torch.nn, name)
    for args in PATTERNS:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cls(*args)
        except Exception:  # noqa: BLE001 - not this class's arguments
            continue
        return lambda nn, args=args: (args, {})
    return None


def _describe(module):
    text = re.sub(r"\b(torch|tapegrad)\.", "", repr(module))
    # an uninitialized tensor (a lazy module's) has no shape: its type name stands in
    return text, {
        k: type(v).__name__ if "Uninitialized" in type(v).__name__ else tuple(v.shape)
        for k, v in module.state_dict().items()
    }


def _options(name):
    """ "" (the defaults) and every boolean option of torch's constructor."""
    params = inspect.signature(getattr(torch.nn, name).__init__).parameters.values()
    return [""] + [p.name for p in params if isinstance(p.default, bool)]


def test_every_shared_class_is_built():
    assert len(CLASSES) > 100
    assert not [n for n in CLASSES if _base(n) is None]


@pytest.mark.parametrize("name", CLASSES)
def test_repr_and_state_dict_match_torch(name, torch_mod):
    make = _base(name)
    checked = []
    for option in _options(name):
        built = []
        for lib in (torch_mod, tg):
            args, kw = make(lib.nn)
            if option:
                default = inspect.signature(getattr(torch_mod.nn, name).__init__).parameters
                kw = {**kw, option: not default[option].default}
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    built.append(getattr(lib.nn, name)(*args, **kw))
            except Exception as exc:  # noqa: BLE001
                built.append(exc)
        theirs, ours = built
        if isinstance(theirs, Exception):
            continue  # torch refuses this option with these arguments
        if (name, option) in WAIVED:
            continue
        assert not isinstance(ours, Exception), f"{name}({option}): {ours!r}"
        assert _describe(ours) == _describe(theirs), f"{name}({option or 'defaults'})"
        checked.append(option)
    assert checked or any((name, o) in WAIVED for o in _options(name))


def test_waivers_are_current():
    for name, option in WAIVED:
        assert name in CLASSES and option in _options(name), (name, option)

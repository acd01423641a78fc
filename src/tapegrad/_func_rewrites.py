"""``tg.func.functionalize`` and ``tg.func.replace_all_batch_norm_modules_``.

Note [functionalize in eager mode]
torch's ``functionalize`` rewrites in-place ops into out-of-place ones while the function
runs, then copies any mutation of an input back into it, so what a caller observes is the
function's own behaviour: the same outputs, the same input mutations. The rewrite exists
for tracing back ends; tapegrad runs eagerly, so the wrapper calls the function itself.
What torch's rewrite does show is aliasing: an output made from an input that the function
mutated is a view of torch's functional copy, not of the input (the input only receives the
final value), and with ``remove="mutations_and_views"`` no output aliases any input (views
become ``*_copy``). So such outputs that share memory with those inputs are returned as copies.
"""

from __future__ import annotations

import functools

import numpy as np

from .tensor import Tensor

__all__ = ["functionalize", "replace_all_batch_norm_modules_"]


def functionalize(func, *, remove: str = "mutations"):
    """``func`` with its mutations made functional, as ``torch.func.functionalize``
    (Note [functionalize in eager mode]).

    Args:
        func: the function to wrap.
        remove: "mutations" (outputs may alias inputs, as in ``func``) or
            "mutations_and_views" (outputs that alias an input are copies).

    Raises:
        RuntimeError: for another ``remove``, with torch's message.
    """
    if remove not in ("mutations", "mutations_and_views"):
        raise RuntimeError(
            f"functionalize(f, remove='mutations'): received invalid argument for remove={remove}."
            " Valid options are:\n"
            "     remove='mutations': all inplace and out= operators will be removed from the "
            "program, and replaced with their out-of-place equivalents.\n"
            "     remove='mutations_and_views': In addition to the above, all aliasing "
            "operators {view} will be replaced with their non-aliasing counterparts, "
            "{view}_copy.\n"
        )

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        inputs = [(t, t._version) for t in _tensors((args, kwargs))]
        out = func(*args, **kwargs)
        every = remove == "mutations_and_views"
        aliased = [t._data for t, v in inputs if every or t._version != v]
        return _unalias(out, aliased) if aliased else out

    return wrapped


def _tensors(tree):
    if isinstance(tree, Tensor):
        yield tree
    elif isinstance(tree, (list, tuple)):
        for item in tree:
            yield from _tensors(item)
    elif isinstance(tree, dict):
        for item in tree.values():
            yield from _tensors(item)


def _unalias(tree, inputs):
    if isinstance(tree, Tensor):
        if any(np.shares_memory(tree._data, a) for a in inputs):
            return tree.clone()
        return tree
    if isinstance(tree, (list, tuple)):
        items = [_unalias(item, inputs) for item in tree]
        return type(tree)(*items) if hasattr(tree, "_fields") else type(tree)(items)
    if isinstance(tree, dict):
        return {k: _unalias(v, inputs) for k, v in tree.items()}
    return tree


def replace_all_batch_norm_modules_(root):
    """Make every BatchNorm in ``root`` stop tracking running statistics, in place (their
    ``running_mean``/``running_var``/``num_batches_tracked`` become None), so the module
    works under ``vmap``; returns ``root``."""
    from .nn.normalization import _BatchNorm  # noqa: PLC0415 - func sits above nn

    for module in root.modules():
        if isinstance(module, _BatchNorm) and module.track_running_stats:
            module.running_mean = None
            module.running_var = None
            module.num_batches_tracked = None
            module.track_running_stats = False
    return root

"""tg.func.functional_call and stack_module_state: modules as functions of their state."""

from __future__ import annotations

from .tensor import Tensor

__all__ = ["functional_call", "stack_module_state"]


def _owner(module, name: str):
    """The submodule holding ``name`` (``"a.b.weight"``) and the attribute's last part."""
    *path, attr = name.split(".")
    for part in path:
        sub = module._modules.get(part) if hasattr(module, "_modules") else None
        if sub is None:
            return None, attr
        module = sub
    return module, attr


def _places(module):
    """id(tensor) -> ``[(table, attr)]`` for every place a parameter or buffer sits (each
    module once; ``table`` is the module's ``_parameters`` or ``_buffers`` dict)."""
    places = {}
    seen = set()
    stack = [module]
    while stack:
        mod = stack.pop()
        if id(mod) in seen:
            continue
        seen.add(id(mod))
        for table in (mod._parameters, mod._buffers):
            for attr, t in table.items():
                if t is not None:
                    places.setdefault(id(t), []).append((table, attr))
        stack.extend(m for m in mod._modules.values() if m is not None)
    return places


def _swap_in(module, values: dict, tie_weights: bool, strict: bool) -> list:
    """Put ``values`` in place of the module's tensors; returns the undo list (the
    caller restores it with :func:`_swap_out`, also when this raises)."""
    if strict:
        known = dict(module.named_parameters(remove_duplicate=False))
        known.update(dict(module.named_buffers(remove_duplicate=False)))
        missing = sorted(set(known) - set(values))
        unexpected = sorted(set(values) - set(known))
        if missing or unexpected:
            raise RuntimeError(
                "Error(s) in reapplying state_dict for functional_call: "
                f"Missing key(s): {missing}. Unexpected key(s): {unexpected}."
            )
    places = _places(module) if tie_weights else None
    undo = []
    try:
        for name, value in values.items():
            if not isinstance(value, Tensor) and value is not None:
                raise TypeError(
                    f"functional_call: the value for {name!r} must be a Tensor, got "
                    f"{type(value).__name__}"
                )
            owner, attr = _owner(module, name)
            if owner is None:
                table = None
            elif attr in owner._parameters:
                table = owner._parameters
            elif attr in owner._buffers:
                table = owner._buffers
            else:
                table = None
            if table is None:
                raise RuntimeError(
                    f"functional_call: {type(module).__name__} has no parameter or buffer "
                    f"named {name!r}"
                )
            original = table[attr]
            targets = ((table, attr),)
            if places is not None and original is not None:
                targets = places.get(id(original), targets)
            for d, key in targets:
                undo.append((d, key, d[key]))
                d[key] = value
    except BaseException:
        _swap_out(undo)
        raise
    return undo


def _swap_out(undo: list) -> None:
    for d, key, old in reversed(undo):
        d[key] = old


def functional_call(
    module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True, strict=False
):
    """Call ``module`` with its parameters and buffers replaced by the given tensors.

    Args:
        module: an ``nn.Module``.
        parameter_and_buffer_dicts: a dict ``name -> Tensor`` (names as in
            ``named_parameters()``/``named_buffers()``), or a tuple of such dicts.
        args: a positional argument or a tuple of them. kwargs: keyword arguments.
        tie_weights: a tensor given for one name of a tied (shared) parameter replaces
            every place that parameter sits.
        strict: require exactly the module's parameter and buffer names.

    Returns:
        What ``module(*args, **kwargs)`` returns; the module's own state is restored.

    >>> import tapegrad as tg
    >>> lin = tg.nn.Linear(2, 1, bias=False)
    >>> w = {"weight": tg.tensor([[1.0, 2.0]])}
    >>> tg.func.functional_call(lin, w, (tg.tensor([3.0, 4.0]),))
    tensor([11.])
    """
    dicts = parameter_and_buffer_dicts
    if isinstance(dicts, dict):
        merged = dict(dicts)
    elif isinstance(dicts, (tuple, list)) and all(isinstance(d, dict) for d in dicts):
        merged = {}
        for d in dicts:
            clash = set(merged) & set(d)
            if clash:
                raise ValueError(
                    f"functional_call: {sorted(clash)} appeared in multiple dictionaries; "
                    "behavior of functional call is ambiguous"
                )
            merged.update(d)
    else:
        raise ValueError(
            "functional_call: expected parameter_and_buffer_dicts to be a dict, or a "
            f"list/tuple of dicts, but got {type(dicts).__name__}"
        )
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    undo = _swap_in(module, merged, tie_weights, strict)
    try:
        return module(*args, **(kwargs or {}))
    finally:
        _swap_out(undo)


def stack_module_state(models):
    """The parameters and buffers of identically built models, stacked along a new dim 0.

    Returns:
        ``(params, buffers)``: dicts ``name -> Tensor`` of shape ``(len(models),) + shape``;
        stacked parameters are new leaves that require grad where the originals do.
        Use with ``vmap`` and ``functional_call`` to run an ensemble in one call.
    """
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or not any(m.training for m in models)):
        raise RuntimeError(
            "stack_module_state: Expected all models to have the same training/eval mode."
        )
    kind = type(models[0])
    if not all(type(m) is kind for m in models):
        raise RuntimeError(
            "stack_module_state: Expected all models to be of the same class, got "
            f"{sorted({type(m).__name__ for m in models})}"
        )
    from .ops.joining import stack  # noqa: PLC0415

    def stacked(named, leaf):
        out = {}
        for name in named[0]:
            ts = [n[name] for n in named]
            shapes = {tuple(t.shape) for t in ts}
            if len(shapes) != 1:
                raise RuntimeError(
                    f"stack_module_state: {name!r} has different shapes across models: "
                    f"{sorted(shapes)}"
                )
            s = stack([t.detach() for t in ts])
            if leaf and ts[0].requires_grad:
                s.requires_grad_(True)
            out[name] = s
        return out

    params = stacked([dict(m.named_parameters()) for m in models], True)
    buffers = stacked([dict(m.named_buffers()) for m in models], False)
    return params, buffers

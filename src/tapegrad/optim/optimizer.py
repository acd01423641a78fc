"""The Optimizer base class: parameter groups, per-parameter state, state dicts.

Note [In-place updates]
Every optimizer updates ``p._data`` and its state arrays in place with NumPy
``out=`` operations, reading ``p.grad._data`` but never writing into it (a
gradient may be shared with user code). Each updated parameter's version
counter goes up by one per step, so a graph that saved the old value refuses to
run backward with the new one. Hyperparameters are turned into Python floats
first: NumPy treats Python scalars as weak, so float32 stays float32.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from .. import _backend
from ..grad_mode import enable_grad, no_grad
from ..tensor import Tensor

__all__ = ["Optimizer", "required"]


class _RequiredParameter:
    """Marks a hyperparameter that every parameter group must set (no default)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()


class Optimizer:
    """Base class of all optimizers, as ``torch.optim.Optimizer``.

    Args:
        params: an iterable of Tensors, of ``(name, Tensor)`` pairs, or of dicts
            defining parameter groups (each with a ``"params"`` entry and
            optional per-group hyperparameters).
        defaults: hyperparameters used by groups that do not set them.

    Subclasses implement ``_step_group(group)``, which updates the parameters of
    one group in place (see Note [In-place updates]); ``step`` runs it for
    every group under ``no_grad``.
    """

    def __init__(self, params, defaults: dict):
        self.defaults = defaults
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict] = []
        self._scratch_buffers: dict = {}
        self._flat: dict = {}  # Note [Flat optimizer state] in _flat.py
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors "
                f"or dicts, but got {type(params).__name__}"
            )
        param_groups = list(params)
        if not param_groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(dict(group))

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines.extend(f"    {k}: {group[k]}" for k in sorted(group) if k != "params")
        return "\n".join(lines) + "\n)"

    # -- parameter groups ----------------------------------------------------------------------

    def add_param_group(self, param_group: dict) -> None:
        """Add a group of parameters (with optional hyperparameters) to optimize.

        Raises:
            TypeError: if the group is not a dict, its params are a set, or one is not a Tensor.
            ValueError: for a non-leaf tensor, a missing required hyperparameter, or a
                parameter that is already in another group.
        """
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but the "
                "ordering of tensors in sets will change between runs; use a list instead"
            )
        params = list(params)
        names = [p[0] for p in params if isinstance(p, tuple)]
        if names:
            if len(names) != len(params):
                raise ValueError(
                    "all optimizer params should be with/without names; some names are missing"
                )
            param_group["param_names"] = names
            params = [p[1] for p in params]
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(
                    f"optimizer can only optimize Tensors, but one of the params is "
                    f"{type(p).__name__}"
                )
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        param_group["params"] = params
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(
                    f"parameter group didn't specify a value of required optimization "
                    f"parameter {name}"
                )
            param_group.setdefault(name, default)
        seen = {id(p) for group in self.param_groups for p in group["params"]}
        if any(id(p) in seen for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    # -- gradients and steps -------------------------------------------------------------------

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all parameters: to None (default) or to zeros in place."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    p.grad.detach_()
                    p.grad._data[...] = 0
                    p.grad._vc.value += 1

    def step(self, closure=None):
        """Update every parameter that has a gradient, in place.

        Args:
            closure: optional callable that re-evaluates the model and returns the loss;
                it runs with grad mode enabled before the update.

        Returns:
            The closure's loss, or None.
        """
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                self._step_group(group)
        return loss

    def _step_group(self, group: dict) -> None:
        raise NotImplementedError(f"{type(self).__name__} does not implement _step_group")

    def _scratch(self, like, slot: int = 0):
        """A reusable work array shaped like ``like`` (its contents are garbage).

        One buffer per (shape, dtype, slot) saves an allocation per parameter per step.
        """
        key = (like.shape, like.dtype, slot)
        buf = self._scratch_buffers.get(key)
        if buf is None or _backend.device_of(buf) != _backend.device_of(like):
            buf = _backend.namespace(like).empty(like.shape, like.dtype)
            self._scratch_buffers[key] = buf
        return buf

    def _grad(self, p: Tensor, maximize: bool, weight_decay: float):
        """The gradient the update uses: ``-g`` when maximizing, plus ``weight_decay * p``.

        Returns ``p.grad``'s own array when nothing changes; never writes into it.
        """
        grad = p.grad._data
        if weight_decay != 0:
            out = np.multiply(p._data, weight_decay, out=self._scratch(grad, slot=1))
            return np.subtract(out, grad, out=out) if maximize else np.add(out, grad, out=out)
        if maximize:
            return np.negative(grad, out=self._scratch(grad, slot=1))
        return grad

    # -- state dicts ---------------------------------------------------------------------------

    def state_dict(self) -> dict:
        """The optimizer state as ``{"state": {index: {...}}, "param_groups": [...]}``.

        Parameters are replaced by their position across all groups (in order), as in
        PyTorch, so the dict can be saved with ``tg.save`` and loaded into a new optimizer
        built over the same parameters. State tensors are returned by reference.
        """
        index = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for p in group["params"]:
                index.setdefault(id(p), len(index))
            packed["params"] = [index[id(p)] for p in group["params"]]
            groups.append(packed)
        state = {index[id(p)]: dict(s) for p, s in self.state.items() if id(p) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        """Load a dict made by :meth:`state_dict`.

        State tensors are copied (cast to their parameter's float dtype, except ``step``),
        so the loaded optimizer never aliases ``state_dict``.

        Raises:
            ValueError: if the number of groups or of parameters per group differs.
        """
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        for group, saved in zip(self.param_groups, saved_groups, strict=True):
            if len(group["params"]) != len(saved["params"]):
                raise ValueError(
                    "loaded state dict contains a parameter group that doesn't match the "
                    f"size of optimizer's group ({len(saved['params'])} saved parameters, "
                    f"{len(group['params'])} in the optimizer)"
                )
        id_map = {}
        for group, saved in zip(self.param_groups, saved_groups, strict=True):
            id_map.update(zip(saved["params"], group["params"], strict=True))
        state = defaultdict(dict)
        for key, value in state_dict["state"].items():
            param = id_map.get(int(key)) if isinstance(key, (int, np.integer)) else None
            if param is None:
                raise ValueError(f"loaded state dict has state for unknown parameter {key!r}")
            state[param] = {k: _copy_state(v, param, k) for k, v in value.items()}
        new_groups = []
        for group, saved in zip(self.param_groups, saved_groups, strict=True):
            new_group = {k: _copy_value(v) for k, v in saved.items() if k != "params"}
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            new_groups.append(new_group)
        self.state = state
        self.param_groups = new_groups
        self._flat.clear()  # Note [Flat optimizer state]


def _copy_state(value, param: Tensor, key):
    """A copy of one state entry: tensors take the parameter's float dtype (not ``step``)."""
    if isinstance(value, (Tensor, np.ndarray)):
        array = value._data if isinstance(value, Tensor) else value
        dtype = array.dtype
        if key != "step" and param.is_floating_point():
            dtype = param.dtype
        return Tensor._wrap(array.astype(dtype, copy=True))
    return _copy_value(value)


def _copy_value(value):
    if isinstance(value, list):
        return [_copy_value(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_copy_value(v) for v in value)
    if isinstance(value, dict):
        return {k: _copy_value(v) for k, v in value.items()}
    return value


def bump_version(p: Tensor) -> None:
    """Record one in-place update of ``p`` (cheaply: no frame walk, see VersionCounter)."""
    p._vc.value += 1


def check_hyper(name: str, value, low: float = 0.0) -> None:
    """Raise ``ValueError`` naming the hyperparameter when ``value < low``."""
    if not value >= low:
        raise ValueError(f"Invalid {name}: {value}")


def compat_flags(op: str, **flags) -> dict:
    """torch's implementation switches (``foreach``, ``fused``, ``capturable``,
    ``differentiable``), kept in the param groups under torch's keys so state dicts have
    torch's layout. They only choose kernels in torch and change nothing here, except
    ``differentiable=True`` (autograd through the step), which is refused."""
    if flags.get("differentiable"):
        raise NotImplementedError(
            f"{op}: differentiable=True is not supported (tapegrad updates parameters in "
            "place with NumPy; there is no graph through the step)"
        )
    return flags


def new_step() -> Tensor:
    """The ``step`` counter of a parameter's state: a 0-d float32 tensor, as torch."""
    return Tensor._wrap(np.zeros((), np.float32))

"""``torch.nn.utils.stateless.functional_call``: the deprecated spelling of
``func.functional_call``."""

from __future__ import annotations

import warnings

__all__ = ["functional_call"]


def functional_call(
    module, parameters_and_buffers, args=None, kwargs=None, *, tie_weights=True, strict=False
):
    """Call ``module`` with ``parameters_and_buffers`` (name -> tensor) standing in for its
    own; warns (FutureWarning) as torch does and runs ``tapegrad.func.functional_call``."""
    warnings.warn(
        "`tapegrad.nn.utils.stateless.functional_call` is deprecated (as in PyTorch 2.0). "
        "Please use `tapegrad.func.functional_call` instead which is a drop-in replacement.",
        FutureWarning,
        stacklevel=2,
    )
    from ...func import functional_call as call  # noqa: PLC0415 - func sits above nn

    return call(
        module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict
    )

"""torch's top-level in-place functions: ``torch.abs_(x)``, ``torch.relu_(x)``,
``torch.clamp_(x, min=0)``... Each is the Tensor method of its name (the same in-place
op, version counter and autograd checks), taking the tensor first. One table of names."""

from __future__ import annotations

from .tensor import Tensor

#: the in-place functions torch exports at the top level that are Tensor methods here
NAMES = (
    "abs_ acos_ acosh_ addmv_ arccos_ arccosh_ arcsin_ arcsinh_ arctan_ arctanh_ asin_ "
    "asinh_ atan_ atanh_ ceil_ clamp_ clamp_max_ clamp_min_ clip_ conj_physical_ cos_ cosh_ "
    "deg2rad_ detach_ erf_ erfc_ exp2_ exp_ expm1_ fill_ fix_ floor_ frac_ gcd_ i0_ "
    "index_put_ lcm_ ldexp_ log10_ log1p_ log2_ log_ logit_ nan_to_num_ neg_ negative_ "
    "rad2deg_ reciprocal_ relu_ round_ rsqrt_ sigmoid_ sin_ sinc_ sinh_ sqrt_ square_ tan_ "
    "tanh_ trunc_ xlogy_ zero_"
).split()

__all__ = list(NAMES)


def method_as_function(name, what="in place"):
    """torch's top-level function for the Tensor method ``name``, tensor first: TypeError
    (torch's) for a non-Tensor input, then the method."""
    method = getattr(Tensor, name)

    def function(input, *args, **kwargs):
        if not isinstance(input, Tensor):
            raise TypeError(
                f"{name}(): argument 'input' (position 1) must be Tensor, "
                f"not {type(input).__name__}"
            )
        return method(input, *args, **kwargs)

    function.__name__ = function.__qualname__ = name
    function.__module__ = "tapegrad"
    function.__doc__ = f"``input.{name}(*args, **kwargs)``: {what}, as ``torch.{name}``."
    return function


globals().update({_name: method_as_function(_name) for _name in NAMES})

"""Which backward rules hold for complex tensors (Note [Complex autograd guard]).

Every Node recorded with a complex output, or with a complex input that requires grad,
passes through :func:`guard`, which returns the rule to record:

* ``SAME``: rules already right for complex tensors: real-linear maps (reshape, slicing,
  cat, sum...), whose adjoint has real coefficients, and the rules written for complex
  tensors (conj, real, imag, view_as_real, complex, polar, the FFTs, eig...);
* ``HOLOMORPHIC``: rules of holomorphic functions written as for real numbers (``g * f'``).
  With PyTorch's convention (for a real loss L, z.grad = dL/dx + i dL/dy) a holomorphic
  f needs ``g * conj(f'(z))``, which is ``conj(rule(conj(g)))``: the rule is wrapped so;
  the ``sum_to``/cast a rule applies for a real operand of a complex result keeps the real
  part, which is that operand's gradient;
* ``REPLACED``: a rule for the complex case of an op whose real rule does not hold (abs,
  angle), made from the Node's inputs;
* anything else raises NotImplementedError naming the op, before any gradient is wrong.

Adding a Node name here is a claim that its rule is right for complex tensors: each one
has a complex128 gradcheck and a torch comparison in tests/test_complex_autograd.py.
"""

from __future__ import annotations

from ..autograd import graph

__all__ = ["SAME", "HOLOMORPHIC", "REPLACED", "guard"]

SAME = frozenset(
    {
        # real-linear shape and data movement
        "ReshapeBackward",
        "TransposeBackward",
        "PermuteBackward",
        "SliceBackward",
        "IndexBackward",
        "IndexPutAccumulateBackward",
        "SelectBackward",
        "CatBackward",
        "StackBackward",
        "SplitBackward",
        "ExpandBackward",
        "CloneBackward",
        "ToCopyBackward",
        "FlipBackward",
        "UnfoldBackward",
        "UnfoldBackwardBackward",
        "ConstantPadBackward",
        "ReflectPadBackward",
        "ReplicatePadBackward",
        "CircularPadBackward",
        "DiagonalBackward",
        "DiagonalBackwardBackward",
        "DiagEmbedBackward",
        "RollBackward",
        "SumBackward",
        "MeanBackward",
        "NegBackward",
        # written for complex tensors (ops/complex_ops.py, fft.py, ops/eig.py)
        "ConjBackward",
        "RealBackward",
        "ImagBackward",
        "ViewAsRealBackward",
        "ViewAsComplexBackward",
        "ComplexBackward",
        "PolarBackward",
        "FftC2CBackward",
        "FftR2CBackward",
        "FftC2RBackward",
        "FftResizeBackward",
        "LinalgEigBackward",
    }
)

HOLOMORPHIC = frozenset(
    {
        "AddBackward",  # holomorphic in both operands (alpha may be complex)
        "SubBackward",
        "MulBackward",
        "DivBackward",
        "ExpBackward",
        "MatmulBackward",
        "LinalgSolveBackward",  # X = A⁻¹B is holomorphic in A and B
    }
)

# name -> factory(inputs) -> backward, for the complex case (filled by ops/complex_ops.py)
REPLACED: dict = {}


def _conj(t):
    return t.conj() if t is not None and t._data.dtype.kind == "c" else t


def _holomorphic(backward):
    def rule(g, *rest):
        grads = backward(_conj(g), *rest)
        return tuple(_conj(gi) for gi in grads)

    return rule


def _complex_involved(inputs, dtype) -> bool:
    if dtype.kind == "c":
        return True
    return any(t is not None and t._rg and t._data.dtype.kind == "c" for t in inputs)


def guard(name, inputs, backward, dtype):
    """The rule to record for Node ``name`` (see the module docstring); ``dtype`` is the
    output's (for several outputs: a complex one's, if any)."""
    if not _complex_involved(inputs, dtype):
        return backward
    graph._set_complex_live()
    if name in SAME:
        return backward
    if name in HOLOMORPHIC:
        return _holomorphic(backward)
    factory = REPLACED.get(name)
    if factory is not None:
        return factory(inputs)
    op = name[:-8] if name.endswith("Backward") else name
    raise NotImplementedError(
        f"tg.{_snake(op)}: autograd for complex tensors is not supported by this op "
        f"({name}); its gradient rule is written for real numbers. Compute it without "
        "requires_grad (or under tg.no_grad()), or write it from the ops that support complex "
        "autograd (docs/complex.md lists them)."
    )


def _snake(camel: str) -> str:
    out = []
    for i, c in enumerate(camel):
        if c.isupper() and i:
            out.append("_")
        out.append(c.lower())
    return "".join(out)


graph.COMPLEX_GUARD[0] = guard

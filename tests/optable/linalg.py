"""Table rows: matmul in all its promotion and broadcasting forms."""

from . import OpCase

CASES = [
    OpCase("matmul", lambda m, a, b: a @ b, [(3, 4), (4, 2)], name="mm"),
    OpCase("matmul", lambda m, a, b: a @ b, [(4,), (4, 2)], name="vec-mat"),
    OpCase("matmul", lambda m, a, b: a @ b, [(3, 4), (4,)], name="mat-vec"),
    OpCase("matmul", lambda m, a, b: a @ b, [(4,), (4,)], name="dot"),
    OpCase("matmul", lambda m, a, b: m.matmul(a, b), [(2, 3, 4), (4, 5)], name="batch-mat"),
    OpCase("matmul", lambda m, a, b: a @ b, [(2, 1, 3, 4), (5, 4, 2)], name="broadcast-batch"),
    OpCase("matmul", lambda m, a, b: a @ b, [(4,), (2, 4, 3)], name="vec-batch"),
    OpCase("matmul", lambda m, a, b: a @ b, [(2, 3, 4), (4,)], name="batch-vec"),
]

"""A generic check of a bad-input error's message against the case's inputs and torch's.

Note [Checked messages]
A table of bad inputs that compares only the exception's type lets every number in the
message be wrong: a mutated rank in "expected {k + 1}D input" or a ``shape[0]`` that
should be ``shape[1]`` survives. ``check_message`` checks every row's message the same
way, so a new row gets the checks for free:

- op: the message names the op (the row's name up to its first "-", or ``names``), unless
  it is torch's own text (Python-level torch messages often name nothing);
- shapes: every shape printed in ours (``[2, 3]``, ``(2, 3)``) is the shape of an input
  tensor (or its batch dims ``[:-1]``/``[:-2]``, or matrix dims ``[-2:]``), a sequence
  of ints passed in, or one torch's message prints, or an input's shape with entries
  replaced by numbers torch states (the expected shape torch says in words): what the
  input had, never a count the code made up;
- numbers: every other integer in ours is an input's size, rank or element count, an
  int passed in, or one of torch's numbers; and where ours is torch's text, every number
  torch's states is in ours;
- ranks: where torch's message states ranks ("Expected 3D or 4D", "3-dimensional"),
  ours states the same ones, and states no rank the input and torch do not have;
- dtypes: the dtypes torch names that an input has (the offending ones), ours names
  too, in NumPy's or torch's spelling.

The inputs are read from the traceback of our exception: the locals of every tapegrad
frame it passed (the op's arguments as the op saw them, including the Tensors inside
argument tuples and lists). A check a row cannot meet is waived by name, with a reason,
in the row's table (``waive``): a waiver is the exception, written down.
"""

from __future__ import annotations

import difflib
import os
import re

import numpy as np

import tapegrad as tg

_TG_DIR = os.path.dirname(tg.__file__)

CHECKS = ("op", "shapes", "numbers", "ranks", "dtypes")

# torch's spellings of dtypes, and NumPy's names for them
_TORCH_DTYPES = {
    "float": "float32",
    "double": "float64",
    "half": "float16",
    "bfloat16": "bfloat16",
    "long": "int64",
    "long int": "int64",
    "int": "int32",
    "short": "int16",
    "char": "int8",
    "byte": "uint8",
    "bool": "bool",
    "complexfloat": "complex64",
    "complexdouble": "complex128",
}
_NP_DTYPES = (
    "float16",
    "float32",
    "float64",
    "bfloat16",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "complex64",
    "complex128",
)
# a shape: "[2, 3]", "(2, 3)", "(3,)", "[]", "()"; not "x[0, 1]" (an index), "f()" or "(3)"
_SHAPE = re.compile(
    r"(?<![\w\]])(?:\[\s*(-?\d+(?:\s*,\s*-?\d+)*)?\s*\]"
    r"|\(\s*(-?\d+\s*,(?:\s*-?\d+\s*,)*(?:\s*-?\d+)?)?\s*\))"
)
_INT = re.compile(r"(?<![\w.\-])-?\d+(?![\w.])|(?<![\w.])-\d+(?![\w.])")
_RANK = re.compile(r"(?<![\w.])(\d+)(?:-?D\b|-dimensional|-d\b| dimensions?\b| dims?\b)")
_TIMES = re.compile(r"(?<![\w.])\d+(?:x\d+)+(?![\w.])")
_CODE = re.compile(r"\(position \d+\)|\bsize\(-?\d+\)|\bdim\(\)")
_INDEXING = re.compile(r"(?<=[\w\]])\[[^\]]*\]")
_RANK_RANGE = re.compile(r"(?<![\w.])(\d+) (?:to|or) (\d+) dimensions")
# torch's "with optional 0 dim batch size" states no rank
_NOT_RANK = re.compile(r"(?:optional|possibly) 0[ -]dim(?:ensional)? batch|0 batch size")


def _walk(value, tensors, seqs, ints, depth=0):
    if isinstance(value, tg.Tensor):
        tensors.append(value)
    elif isinstance(value, bool):
        return
    elif isinstance(value, (int, np.integer)):
        ints.add(int(value))
    elif isinstance(value, float) and value.is_integer():
        ints.add(int(value))
    elif isinstance(value, (tuple, list)) and depth < 3:
        ints.add(len(value))  # "2 operands were given"
        if value and all(
            isinstance(v, (int, np.integer)) and v is not True and v is not False for v in value
        ):
            seqs.add(tuple(int(v) for v in value))
        for v in value:
            _walk(v, tensors, seqs, ints, depth + 1)
    elif isinstance(value, dict) and depth < 2:
        for v in value.values():
            _walk(v, tensors, seqs, ints, depth + 1)


def inputs_of(exc):
    """The Tensors, int sequences and ints in the locals of every tapegrad frame of ``exc``."""
    tensors, seqs, ints = [], set(), set()
    tb = exc.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        if frame.f_code.co_filename.startswith(_TG_DIR):
            for value in frame.f_locals.values():
                _walk(value, tensors, seqs, ints)
        tb = tb.tb_next
    return tensors, seqs, ints


def _shapes(msg):
    # torch's "(2x3 and 4x2)", "(1x2x2x2)": shapes too
    out = [tuple(int(v) for v in m.group(0).split("x")) for m in _TIMES.finditer(msg)]
    for m in _SHAPE.finditer(msg.replace("torch.Size(", "(")):
        body = m.group(1) or m.group(2)
        out.append(tuple(int(v) for v in body.split(",") if v.strip()) if body else ())
    return out


def _expected(shape, inputs, theirs_ints):
    """``shape`` is an input's shape with some entries replaced by numbers torch states:
    the expected shape, where torch says the expected size in words."""
    return any(
        len(s) == len(shape) and all(a == b or a in theirs_ints for a, b in zip(shape, s))
        for s in inputs
    )


def _ints(msg):
    text = _SHAPE.sub(" ", _TIMES.sub(" ", msg.replace("torch.Size(", "(")))
    text = _INDEXING.sub(" ", text)  # "shape[-1]", "D[0, 0]": code, not sizes
    text = _CODE.sub(" ", text)  # "(position 2)", "size(-2)"
    text = re.sub(r"(?<![\w.])(-?\d+)\.0(?![\w.])", r"\1", text)  # -1.0 is -1
    return {int(v) for v in _INT.findall(text)}


def _ranks(msg):
    msg = _NOT_RANK.sub(" ", msg)
    found = {int(v) for v in _RANK.findall(msg)}
    return found | {int(v) for pair in _RANK_RANGE.findall(msg) for v in pair}


def _dtypes(msg):
    low = msg.lower()
    found = {d for d in _NP_DTYPES if re.search(rf"(?<![\w]){d}(?![\w])", low)}
    for word, d in _TORCH_DTYPES.items():
        # torch's ScalarType names are capitalized ("Float", "Long"); "long int" as in C
        pattern = rf"(?<![\w.]){word.title()}(?![\w])" if " " not in word else word
        if re.search(pattern, msg) or re.search(rf"dtype:? {word}(?![\w])", low):
            found.add(d)
        if re.search(rf"torch\.{word}(?![\w])", low):
            found.add(d)
    return found


def _normalized(msg):
    msg = msg.replace("torch.Size(", "(").replace("torch.", "").replace("tapegrad.", "")
    return re.sub(r"[^a-z0-9]+", " ", msg.lower()).strip()


def torchs_text(msg, want):
    """Ours is torch's message (give or take a word): torch's Python-level checks often
    name no op, and ours keep their words."""
    a, b = _normalized(msg), _normalized(want)
    return bool(a and b) and difflib.SequenceMatcher(None, a, b).ratio() >= 0.75


def check_message(case, ours, theirs, names=(), waive=()):
    """Check our exception ``ours`` for row ``case`` against torch's ``theirs``.

    ``names``: the op's names as a message may spell them (default: ``case`` up to its
    first "-"); ``waive``: the CHECKS this row is excused from, ``{check: reason}``.
    """
    msg, want = str(ours), str(theirs) if theirs is not None else ""
    waive = dict(waive) if isinstance(waive, dict) else dict.fromkeys(waive, "")
    if isinstance(ours, KeyError) and ours.args:
        msg = str(ours.args[0])
    unknown = set(waive) - set(CHECKS)
    assert not unknown, f"{case}: unknown checks waived: {unknown}"
    tensors, seqs, ints = inputs_of(ours)
    shapes = {tuple(t.shape) for t in tensors}
    dims = {d for s in shapes for d in s} | {len(s) for s in shapes}
    dims |= {int(np.prod(s)) for s in shapes}
    theirs_ints = _ints(want) | {v for s in _shapes(want) for v in s} | _ranks(want)
    # an input's shape, its batch dims ([:-1], [:-2]) or matrix dims ([-2:])
    parts = {s[:-1] for s in shapes} | {s[:-2] for s in shapes} | {s[-2:] for s in shapes}
    allowed_shapes = shapes | parts | seqs | set(_shapes(want))
    allowed_ints = dims | ints | {v for s in seqs for v in s} | {len(s) for s in seqs}
    allowed_ints |= theirs_ints
    allowed_ints |= {-v for v in allowed_ints}
    problems = []
    if "op" not in waive and not torchs_text(msg, want):
        names = names or (case.split("-")[0],)
        if not any(n.lower() in msg.lower() for n in names):
            problems.append(f"op: names none of {list(names)}")
    if "shapes" not in waive:
        bad = [
            s
            for s in _shapes(msg)
            if s not in allowed_shapes and not _expected(s, shapes | seqs, theirs_ints)
        ]
        if bad:
            problems.append(f"shapes: {bad} are no input's shape (inputs: {sorted(shapes)})")
    if "numbers" not in waive:
        ours_ints = _ints(msg) | _ranks(msg)
        bad = sorted(ours_ints - allowed_ints)
        if bad:
            problems.append(f"numbers: {bad} are no input's size, rank or argument")
        if torchs_text(msg, want):  # torch's words: then torch's numbers too
            theirs_all = _ints(want) | {v for s in _shapes(want) for v in s} | _ranks(want)
            ours_all = ours_ints | {v for s in _shapes(msg) for v in s}
            if theirs_all - ours_all:
                problems.append(f"numbers: torch's {sorted(theirs_all - ours_all)} missing")
    if "ranks" not in waive:
        theirs_r, ours_r = _ranks(want), _ranks(msg)
        missing = theirs_r - ours_r
        # a rank torch states may also be given as the full shape of the input
        missing -= {len(s) for s in _shapes(msg) if s in shapes}
        if missing:
            problems.append(f"ranks: torch states {sorted(theirs_r)}, ours {sorted(ours_r)}")
        extra = ours_r - theirs_ints - {len(s) for s in shapes | seqs}
        if extra:
            problems.append(f"ranks: ours states {sorted(extra)}, neither torch nor an input")
    if "dtypes" not in waive:
        theirs_d, ours_d = _dtypes(want), _dtypes(msg)
        # the dtypes torch names that an input has: the offending ones
        have = {str(t.dtype) for t in tensors}
        if (theirs_d & have) - ours_d:
            problems.append(f"dtypes: torch names {sorted(theirs_d & have)}, ours {sorted(ours_d)}")
    assert not problems, f"{case}: {problems}\n  ours:  {msg}\n  torch: {want}"

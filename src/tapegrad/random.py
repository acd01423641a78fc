"""Random number generators: ``tapegrad.Generator``, the default generator, and the
``torch.random`` functions (``manual_seed``, ``seed``, ``initial_seed``, ``get_rng_state``,
``set_rng_state``, ``fork_rng``).

Note [Random streams]
Every random function of tapegrad (``rand``, ``randn``, ``randint``, ``randperm``,
``multinomial``, ``normal``, ``bernoulli``, ``Tensor.uniform_``/``normal_``, dropout,
``nn.init``, ``DataLoader`` shuffling, the samplers, ``random_split``) draws from a
:class:`Generator`: the one passed as ``generator=``, else :data:`default_generator`.
A Generator wraps NumPy's PCG64, so the numbers are not PyTorch's (same seed,
different values) but follow the same rules: ``manual_seed(n)`` makes a run
reproducible, the default generator starts from a fresh seed in every process (so
unseeded programs draw different numbers per run, as torch's), and a new
``Generator()`` starts from torch's fixed default seed, 67280421310721.

The state (``get_state``/``get_rng_state``) is a uint8 tensor, as in torch, so it can
be stored with ``tapegrad.save`` and handed back to ``set_state``.
"""

from __future__ import annotations

import contextlib
import os

import numpy as np

from .tensor import Tensor

__all__ = [
    "Generator",
    "default_generator",
    "manual_seed",
    "seed",
    "initial_seed",
    "get_rng_state",
    "set_rng_state",
    "fork_rng",
]

DEFAULT_SEED = 67280421310721  # torch's default_rng_seed_val
_U64 = 1 << 64
_STATE_BYTES = 16 + 16 + 1 + 4 + 8  # PCG64 state, increment, has_uint32, uinteger, seed


def _fresh_seed() -> int:
    return int.from_bytes(os.urandom(8), "little")


def _seed_value(seed) -> int:
    try:
        seed = int(seed)
    except (TypeError, ValueError):
        raise TypeError(
            f"manual_seed expected an int seed, got {type(seed).__name__}: {seed!r}"
        ) from None
    if not -(1 << 63) <= seed < _U64:
        raise RuntimeError(
            f"Overflow when unpacking long: seed {seed} is outside "
            f"[-0x8000_0000_0000_0000, 0xffff_ffff_ffff_ffff]"
        )
    return seed % _U64


class Generator:
    """A seedable source of random numbers, as ``torch.Generator`` (NumPy's PCG64 inside).

    Args:
        device: ``"cpu"`` (the only device whose generators tapegrad has). For
            compatibility with tapegrad code written before torch's signature, an int
            is taken as a seed: ``Generator(5)`` is ``Generator().manual_seed(5)``.

    >>> import tapegrad as tg
    >>> g = tg.Generator().manual_seed(3)
    >>> a = tg.rand(2, generator=g)
    >>> state = g.get_state()
    >>> b = tg.rand(2, generator=g)
    >>> _ = g.set_state(state)
    >>> tg.equal(tg.rand(2, generator=g), b), g.initial_seed()
    (True, 3)
    """

    def __init__(self, device="cpu"):
        seed = DEFAULT_SEED
        if isinstance(device, (int, np.integer)) and not isinstance(device, bool):
            seed, device = int(device), "cpu"
        if str(device) != "cpu":
            raise RuntimeError(
                f"Generator: tapegrad has random generators on the CPU only, got device "
                f"{str(device)!r}; use tapegrad.Generator() (device='cpu')"
            )
        self.device = "cpu"
        self.manual_seed(seed)

    def manual_seed(self, seed) -> Generator:
        """Reseed (any int in [-2**63, 2**64)); returns self."""
        self._seed = _seed_value(seed)
        self._rng = np.random.Generator(np.random.PCG64(self._seed))
        return self

    def seed(self) -> int:
        """Reseed from the operating system's entropy; returns the new seed."""
        value = _fresh_seed()
        self.manual_seed(value)
        return value

    def initial_seed(self) -> int:
        """The seed this generator was last seeded with."""
        return self._seed

    def get_state(self) -> Tensor:
        """The full state as a uint8 tensor (pass it to :meth:`set_state`)."""
        st = self._rng.bit_generator.state
        raw = (
            st["state"]["state"].to_bytes(16, "little")
            + st["state"]["inc"].to_bytes(16, "little")
            + bytes([st["has_uint32"]])
            + int(st["uinteger"]).to_bytes(4, "little")
            + self._seed.to_bytes(8, "little")
        )
        return Tensor._wrap(np.frombuffer(raw, dtype=np.uint8).copy())

    def set_state(self, new_state) -> Generator:
        """Restore a state from :meth:`get_state`; returns self.

        Raises:
            TypeError: if ``new_state`` is not a uint8 tensor of the right length.
        """
        data = new_state._data if isinstance(new_state, Tensor) else new_state
        if isinstance(data, dict):  # NumPy's own state dict (internal callers)
            self._rng.bit_generator.state = data
            return self
        if (
            not isinstance(data, np.ndarray)
            or data.dtype != np.uint8
            or data.shape != (_STATE_BYTES,)
        ):
            what = (
                f"a tensor of dtype {data.dtype} and shape {tuple(data.shape)}"
                if isinstance(data, np.ndarray)
                else type(new_state).__name__
            )
            raise TypeError(
                f"set_state: RNG state must be a uint8 tensor of shape ({_STATE_BYTES},) as "
                f"returned by get_state(), got {what}"
            )
        raw = data.tobytes()
        self._rng.bit_generator.state = {
            "bit_generator": "PCG64",
            "state": {
                "state": int.from_bytes(raw[0:16], "little"),
                "inc": int.from_bytes(raw[16:32], "little"),
            },
            "has_uint32": raw[32],
            "uinteger": int.from_bytes(raw[33:37], "little"),
        }
        self._seed = int.from_bytes(raw[37:45], "little")
        return self

    def _raw_state(self) -> dict:
        """NumPy's state dict: cheaper than :meth:`get_state`, for tapegrad's own save/restore
        (checkpoint replays, the graph cache); :meth:`set_state` takes it back."""
        return self._rng.bit_generator.state

    @property
    def numpy(self) -> np.random.Generator:
        """The NumPy generator behind this one (tapegrad.jit records draws through it)."""
        return self._rng

    def __repr__(self) -> str:
        return f"<tapegrad.Generator device='cpu' initial_seed={self._seed}>"


default_generator = Generator()
default_generator.seed()  # a fresh seed per process, as torch's default generator


def manual_seed(seed) -> Generator:
    """Seed the default generator (rand, randn, dropout, init, shuffling, samplers); returns it."""
    return default_generator.manual_seed(seed)


def seed() -> int:
    """Seed the default generator from the operating system's entropy; returns the seed."""
    return default_generator.seed()


def initial_seed() -> int:
    """The seed the default generator was last seeded with."""
    return default_generator.initial_seed()


def get_rng_state() -> Tensor:
    """The default generator's state, a uint8 tensor."""
    return default_generator.get_state()


def set_rng_state(new_state) -> None:
    """Restore the default generator's state from :func:`get_rng_state`."""
    default_generator.set_state(new_state)


@contextlib.contextmanager
def fork_rng(
    devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices", device_type="cuda"
):  # noqa: E501
    """Run a block with the default generator's state saved before and restored after it.

    ``devices`` and ``device_type`` are accepted for torch compatibility (tapegrad has only
    the CPU generator); ``enabled=False`` makes it a no-op.
    """
    if not enabled:
        yield
        return
    state = default_generator.get_state()
    try:
        yield
    finally:
        default_generator.set_state(state)

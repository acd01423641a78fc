"""Optimizers (``tg.optim``) and learning-rate schedulers (``tg.optim.lr_scheduler``)."""

from . import lr_scheduler, swa_utils
from .adafactor import Adafactor
from .adam import Adam, AdamW
from .adam_variants import NAdam, RAdam
from .adaptive import Adadelta, Adagrad, Adamax
from .lbfgs import LBFGS
from .muon import Muon
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD
from .sgd_variants import ASGD, Rprop
from .sparse_adam import SparseAdam

__all__ = [
    "Optimizer",
    "SGD",
    "Adam",
    "AdamW",
    "RMSprop",
    "Adagrad",
    "Adadelta",
    "Adamax",
    "NAdam",
    "RAdam",
    "ASGD",
    "Rprop",
    "LBFGS",
    "SparseAdam",
    "Adafactor",
    "Muon",
    "lr_scheduler",
    "swa_utils",
]

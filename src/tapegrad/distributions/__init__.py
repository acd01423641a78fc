"""``tapegrad.distributions``, as ``torch.distributions``: probability distributions with
``sample``, reparameterised ``rsample`` (differentiable), ``log_prob``, ``entropy``, moments,
``cdf``/``icdf`` where closed forms exist, ``kl_divergence``, argument validation,
transforms and ``biject_to``/``transform_to``.

>>> import tapegrad as tg
>>> from tapegrad.distributions import Normal
>>> d = Normal(tg.tensor(0.0), tg.tensor(1.0))
>>> round(d.log_prob(tg.tensor(0.0)).item(), 4)
-0.9189
"""

import sys as _sys

from . import constraints, transforms
from .constraint_registry import biject_to, transform_to
from .continuous import Cauchy, Exponential, Laplace, Normal, Uniform
from .continuous_bernoulli import ContinuousBernoulli
from .counts import Multinomial, NegativeBinomial
from .discrete import Bernoulli, Binomial, Categorical, Geometric, OneHotCategorical, Poisson
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .gamma import Beta, Chi2, Dirichlet, Gamma
from .heavy_tailed import FisherSnedecor, GeneralizedPareto, StudentT
from .kl import kl_divergence, register_kl
from .kl_extra import __all__ as _kl_extra  # registers the pairs
from .lkj_wishart import LKJCholesky, Wishart
from .lowrank_multivariate_normal import LowRankMultivariateNormal
from .mixture import MixtureSameFamily
from .multivariate_normal import MultivariateNormal
from .relaxed import (
    ExpRelaxedCategorical,
    LogitRelaxedBernoulli,
    OneHotCategoricalStraightThrough,
    RelaxedBernoulli,
    RelaxedOneHotCategorical,
)
from .transformed import Independent, LogNormal, TransformedDistribution
from .transformed_families import (
    Gumbel,
    HalfCauchy,
    HalfNormal,
    InverseGamma,
    Kumaraswamy,
    LogisticNormal,
    Pareto,
    Weibull,
)
from .transforms import *  # noqa: F403 - torch.distributions exports every transform
from .transforms import __all__ as _transforms_all
from .von_mises import VonMises

__all__ = [name for name in dir() if not name.startswith("_")]

from . import _submodules  # noqa: E402

_submodules.install(_sys.modules[__name__])
del _kl_extra, _transforms_all

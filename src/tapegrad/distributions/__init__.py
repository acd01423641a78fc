"""``tapegrad.distributions``, as ``torch.distributions``: probability distributions with
``sample``, reparameterised ``rsample`` (differentiable), ``log_prob``, ``entropy``, moments,
``cdf``/``icdf`` where closed forms exist, ``kl_divergence`` and argument validation.

>>> import tapegrad as tg
>>> from tapegrad.distributions import Normal
>>> d = Normal(tg.tensor(0.0), tg.tensor(1.0))
>>> round(d.log_prob(tg.tensor(0.0)).item(), 4)
-0.9189
"""

from . import constraints, transforms
from .continuous import Cauchy, Exponential, Laplace, Normal, Uniform
from .discrete import Bernoulli, Binomial, Categorical, Geometric, OneHotCategorical, Poisson
from .distribution import Distribution
from .gamma import Beta, Chi2, Dirichlet, Gamma
from .kl import kl_divergence, register_kl
from .multivariate_normal import MultivariateNormal
from .transformed import Independent, LogNormal, TransformedDistribution
from .transforms import (
    AffineTransform,
    ComposeTransform,
    ExpTransform,
    PowerTransform,
    SigmoidTransform,
    SoftmaxTransform,
    TanhTransform,
    Transform,
)

__all__ = [name for name in dir() if not name.startswith("_")]

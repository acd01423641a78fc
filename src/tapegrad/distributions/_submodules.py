"""torch's per-family module names (``torch.distributions.normal.Normal``, ...): a table of
module name -> the public names it holds. Families whose code lives in a file of another
name (several share ``continuous.py``, ``discrete.py``, ...) get a small alias module
registered in ``sys.modules``, so ``from tapegrad.distributions.normal import Normal``
works as it does for torch."""

from __future__ import annotations

import sys
import types

# torch module name -> names it exports (all already imported into the package)
SUBMODULES = {
    "bernoulli": ["Bernoulli"],
    "beta": ["Beta"],
    "binomial": ["Binomial"],
    "categorical": ["Categorical"],
    "cauchy": ["Cauchy"],
    "chi2": ["Chi2"],
    "dirichlet": ["Dirichlet"],
    "exponential": ["Exponential"],
    "fishersnedecor": ["FisherSnedecor"],
    "generalized_pareto": ["GeneralizedPareto"],
    "geometric": ["Geometric"],
    "gumbel": ["Gumbel"],
    "half_cauchy": ["HalfCauchy"],
    "half_normal": ["HalfNormal"],
    "independent": ["Independent"],
    "inverse_gamma": ["InverseGamma"],
    "kumaraswamy": ["Kumaraswamy"],
    "laplace": ["Laplace"],
    "lkj_cholesky": ["LKJCholesky"],
    "log_normal": ["LogNormal"],
    "logistic_normal": ["LogisticNormal"],
    "mixture_same_family": ["MixtureSameFamily"],
    "multinomial": ["Multinomial"],
    "negative_binomial": ["NegativeBinomial"],
    "normal": ["Normal"],
    "one_hot_categorical": ["OneHotCategorical", "OneHotCategoricalStraightThrough"],
    "pareto": ["Pareto"],
    "poisson": ["Poisson"],
    "relaxed_bernoulli": ["RelaxedBernoulli", "LogitRelaxedBernoulli"],
    "relaxed_categorical": ["RelaxedOneHotCategorical", "ExpRelaxedCategorical"],
    "studentT": ["StudentT"],
    "transformed_distribution": ["TransformedDistribution"],
    "uniform": ["Uniform"],
    "weibull": ["Weibull"],
    "wishart": ["Wishart"],
}


def install(package) -> None:
    """Create each alias module of ``package`` (the distributions package) from its names."""
    for name, members in SUBMODULES.items():
        full = f"{package.__name__}.{name}"
        module = types.ModuleType(full, f"torch.distributions.{name} ({', '.join(members)}).")
        for member in members:
            setattr(module, member, getattr(package, member))
        module.__all__ = list(members)
        sys.modules[full] = module
        setattr(package, name, module)

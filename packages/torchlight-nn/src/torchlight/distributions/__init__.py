"""``torchlight.distributions``: probability distributions with PyTorch's API (``torch.distributions``).

``Normal``, ``Uniform``, ``Categorical`` and ``Bernoulli`` each offer ``sample``, ``log_prob``,
``entropy``, ``mean``/``variance`` (``Normal`` and ``Uniform`` also ``rsample``, the
reparameterised, differentiable draw), and ``kl_divergence`` has closed forms for same-type
pairs; ``Independent`` turns batch dims into event dims (a diagonal Gaussian). Typical uses: a policy's action distribution (``Categorical(logits=net(x))``), a VAE's
latent (``Normal(mu, sigma).rsample()``).

>>> import torchlight.distributions as D
>>> pi = D.Categorical(logits=tl.zeros(3))
>>> a = pi.sample(); pi.log_prob(a).shape
()
"""

from .bernoulli import Bernoulli
from .categorical import Categorical
from .distribution import Distribution
from .independent import Independent
from .kl import kl_divergence, register_kl
from .normal import Normal
from .uniform import Uniform

__all__ = [
    "Distribution",
    "Normal",
    "Uniform",
    "Categorical",
    "Bernoulli",
    "Independent",
    "kl_divergence",
    "register_kl",
]

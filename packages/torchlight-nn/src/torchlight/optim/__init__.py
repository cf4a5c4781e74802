"""``torchlight.optim``: optimizers and learning-rate schedulers with PyTorch's semantics.

>>> model = nn.Linear(3, 1)
>>> opt = tl.optim.AdamW(model.parameters(), lr=3e-4)
>>> sched = tl.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=100)
>>> loss = model(tl.randn(8, 3)).pow(2).mean()
>>> loss.backward(); opt.step(); opt.zero_grad(); sched.step()
"""

from . import lr_scheduler, swa_utils
from .adadelta import Adadelta
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .adamax import Adamax
from .lbfgs import LBFGS
from .nadam import NAdam
from .optimizer import Optimizer, OptimizerError
from .radam import RAdam
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = [
    "Optimizer",
    "OptimizerError",
    "SGD",
    "Adam",
    "AdamW",
    "RMSprop",
    "Adagrad",
    "Adadelta",
    "Adamax",
    "NAdam",
    "RAdam",
    "LBFGS",
    "lr_scheduler",
    "swa_utils",
]

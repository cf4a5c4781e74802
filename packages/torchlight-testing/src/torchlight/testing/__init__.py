"""torchlight.testing: the backend conformance kit (distribution ``torchlight-testing``).

``BackendConformance`` is the aggregate pytest class every backend subclasses; ``catalog`` says
what each named op computes; ``strategies`` builds views in every layout and hypothesis
strategies over shapes; ``profiles`` sizes the inputs.
"""

from . import catalog, strategies
from .conformance import BackendConformance, assert_close
from .profiles import PROFILES, SizeProfile, resolve_profile

__all__ = [
    "BackendConformance",
    "assert_close",
    "catalog",
    "strategies",
    "PROFILES",
    "SizeProfile",
    "resolve_profile",
]

"""``python -m torchlight.compat script.py args...`` (see :mod:`torchlight.compat.runner`)."""

import sys

from .runner import main

if __name__ == "__main__":
    sys.exit(main())

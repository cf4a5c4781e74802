"""Test configuration for torchlight-nn.

OpenBLAS's worker threads spin while waiting for work; on a small, busy CI runner (2 cores shared
with other jobs) that turns a 0.02 ms matmul into a 10 ms one. These tests multiply small
matrices, so one BLAS thread is both faster and steadier. The variable only takes effect if
numpy has not been imported yet (it is read when OpenBLAS loads).
"""

import os
import sys

if "numpy" not in sys.modules:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

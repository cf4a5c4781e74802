"""numba-cuda's on-disk kernel cache is on for the backend's kernels (outside the simulator):
every kind of kernel closure can be keyed (its cell contents pickle), the cache lands in
``NUMBA_CACHE_DIR``, and a cache written from other sources is emptied (the stamp). Runs in
subprocesses without ``NUMBA_ENABLE_CUDASIM``: enabling the cache compiles nothing, so no GPU is
needed."""

import os
import subprocess
import sys

_CODE = """
import numba
from torchlight.backends.cuda import _cross_entropy as CE, _elementwise as E, _fused as F, _launch as L
from torchlight.backends.cuda import _random as RND, _recurrent as R, _scalar as S, _updates as U
assert L.DISK_CACHE and not L.SIMULATOR
kernels = [R.gru_forward_kernel(numba.float32), R.lstm_backward_kernel(numba.float64),
           RND.random_kernel("normal", "float32"), E.map_flat(S.unary_float), E.zip_flat(S.binary_float),
           E.map_strided(S.unary_float, 3), U.adam_kernel(numba.float32), F.softmax_kernel(numba.float32, 2),
           CE.cross_entropy_kernel(numba.float32, 1)]
print("enabled", all(L.enable_disk_cache(k) for k in kernels))
print("path", kernels[0]._cache.cache_path)
print("digest", L.sources_digest())
"""


def _run(cache_dir):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["NUMBA_CACHE_DIR"] = str(cache_dir)
    proc = subprocess.run(
        [sys.executable, "-c", _CODE], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return dict(line.split(" ", 1) for line in proc.stdout.strip().splitlines())


def test_kernels_get_a_disk_cache_and_a_sources_stamp(tmp_path):
    out = _run(tmp_path)
    assert out["enabled"] == "True"
    path = out["path"]
    assert path.startswith(str(tmp_path)), path
    stamp = os.path.join(path, "torchlight-cuda-sources.sha1")
    with open(stamp) as f:
        assert f.read().strip() == out["digest"]
    with open(stamp, "w") as f:  # as if the cache had been written by other sources
        f.write("0" * 40)
    _run(tmp_path)
    with open(stamp) as f:
        assert f.read().strip() == out["digest"], "a stale cache must be emptied and re-stamped"

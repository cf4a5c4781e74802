"""A stock PyTorch-style training loop runs under ``TORCHLIGHT_DEVICE=numba``.

Factories then make numba tensors, ``"cpu"`` names numba too (a PyTorch program's
``.to("cpu")`` stays there), while ``from_numpy``, ``tensor(ndarray)`` and the DataLoader's
collated batches come from numpy arrays; numba and cpu both keep their data in host memory
(the ``host_memory`` backend capability), so these combine without copies or device errors (see
docs/developer/design-decisions.md, "Host-memory backends share tensors"). Run in a subprocess
so the environment variable is seen at startup, as a user would set it.
"""

import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("torchlight.backends.numba")
pytest.importorskip("torchlight.nn")
pytest.importorskip("torchlight.data")

SCRIPT = textwrap.dedent(
    """
    import numpy as np
    import torchlight as tl
    from torchlight import nn, optim
    from torchlight.data import DataLoader, Dataset

    assert tl.zeros(1).device == "numba"
    arr = np.arange(3.0)
    t = tl.from_numpy(arr)
    arr[0] = 5.0
    assert t.device == "numba" and t.tolist() == [5.0, 1.0, 2.0]   # still zero-copy
    assert tl.tensor(np.ones(2)).device == "numba"
    assert tl.ones(2, device="cpu").device == "numba"              # "cpu": the host backend chosen
    host = tl.ones(2, device="numpy")
    assert host.device == "cpu" and (host + tl.ones(2)).device == "numba"  # mixing runs on numba

    class Points(Dataset):  # yields numpy samples: the collated batches come from from_numpy
        def __init__(self):
            rng = np.random.default_rng(1)
            self.x = rng.standard_normal((256, 2)).astype(np.float32)
            self.y = (self.x[:, 0] + 2 * self.x[:, 1] > 0).astype(np.int64)

        def __len__(self):
            return len(self.x)

        def __getitem__(self, i):
            return self.x[i], int(self.y[i])

    tl.manual_seed(0)
    model = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 2)).to("cpu")
    assert all(p.device == "numba" for p in model.parameters())     # .to("cpu") stays on numba
    opt = optim.SGD(model.parameters(), lr=0.5)
    loader = DataLoader(Points(), batch_size=32, shuffle=True, seed=0)
    losses = []
    for epoch in range(5):
        for x, y in loader:
            x = x.to(tl.device("numba"))                              # a device object, as in PyTorch
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
    assert all(p.device == "numba" for p in model.parameters())
    assert np.mean(losses[-4:]) < 0.5 * np.mean(losses[:4]), (losses[:4], losses[-4:])
    print("OK", losses[0], losses[-1])
    """
)


def test_training_loop_with_a_dataloader_under_torchlight_device_numba():
    env = dict(os.environ, TORCHLIGHT_DEVICE="numba")
    r = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=900
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "OK" in r.stdout

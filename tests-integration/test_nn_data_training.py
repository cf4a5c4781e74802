"""nn + optim + data together: an MLP learns torchlight.data's synthetic spiral and XOR sets
through a DataLoader, to > 95% accuracy (issue 3's integration test, on the data package)."""

import pytest

import torchlight as tl
from torchlight import nn, optim
from torchlight.data import DataLoader, synthetic


@pytest.mark.parametrize("name", ["spiral", "xor"])
def test_mlp_learns_synthetic_set(name):
    tl.manual_seed(0)
    ds = getattr(synthetic, name)(n=200, seed=1)
    model = nn.Sequential(
        nn.Linear(2, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 2)
    )
    opt = optim.Adam(model.parameters(), lr=0.02)
    loader = DataLoader(ds, batch_size=50, shuffle=True, seed=0)
    first = None
    for _epoch in range(150):
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            first = loss.item() if first is None else first
    X = tl.stack([ds[i][0] for i in range(len(ds))])
    Y = tl.stack([ds[i][1] for i in range(len(ds))])
    with tl.no_grad():
        acc = (model(X).argmax(-1) == Y).float().mean().item()
    assert loss.item() < first
    assert acc > 0.95, f"{name}: accuracy {acc:.3f}"

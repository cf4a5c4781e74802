"""Rank 0 alone writes the checkpoint; every rank loads it (from the shared file, or broadcast
from rank 0) and training continues bit-identically to an uninterrupted run."""


def test_rank0_checkpoint_and_resume(mpi, tmp_path):
    res = mpi("checkpoint.py", str(tmp_path))
    res.assert_ok()
    assert (tmp_path / "ckpt.npz").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt.npz"]  # no stray temporary files

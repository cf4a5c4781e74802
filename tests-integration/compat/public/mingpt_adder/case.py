"""karpathy/minGPT's projects/adder/adder.py (with the mingpt package files it imports) training a
tiny GPT to add 1-digit numbers: 21 iterations of random batches (the trainer's RandomSampler with
replacement), an evaluation at iteration 0, losses printed every 10. Dropout is off
(``--model.*_pdrop=0.0``): a dropout layer draws its mask inside the framework, where the PyTorch
oracle cannot give both runs the same one (oracle_draws.py replays only the program's own
draws); the layer has its own tests in torchlight-nn (test_linear.py::test_dropout)."""

SCRIPT = "adder.py"
ARGS = [
    "--data.ndigit=1",
    "--trainer.max_iters=21",
    "--trainer.num_workers=0",
    "--trainer.batch_size=16",
    "--trainer.learning_rate=1e-2",
    "--trainer.device=cpu",
    "--model.model_type=None",
    "--model.n_layer=1",
    "--model.n_head=2",
    "--model.n_embd=16",
    # no dropout: its masks come from inside the layers, which the PyTorch oracle cannot replay
    "--model.embd_pdrop=0.0",
    "--model.resid_pdrop=0.0",
    "--model.attn_pdrop=0.0",
    "--system.work_dir=out",
]
STEPS = ["--trainer.max_iters"]
EXPECT = "decrease"
SLOW = False
ORACLE = True

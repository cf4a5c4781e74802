"""karpathy/minGPT's projects/adder/adder.py (with the mingpt package files it imports) training a
tiny GPT to add 1-digit numbers: 21 iterations of random batches (the trainer's RandomSampler with
replacement), an evaluation at iteration 0, losses printed every 10."""

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
    "--system.work_dir=out",
]
STEPS = ["--trainer.max_iters"]
EXPECT = "decrease"
SLOW = False
ORACLE = False  # random batches

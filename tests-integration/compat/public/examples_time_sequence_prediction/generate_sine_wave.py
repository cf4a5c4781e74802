# Source: https://github.com/pytorch/examples
# Path: time_sequence_prediction/generate_sine_wave.py
# Commit: aa7adf08482be9136dac7ea65a188df89a8b1c7a
# License: BSD-3-Clause (the text is in LICENSE beside this file)
# Copied verbatim for torchlight's compatibility suite: nothing below this header is changed.
import numpy as np
import torch

np.random.seed(2)

T = 20
L = 1000
N = 100

x = np.empty((N, L), 'int64')
x[:] = np.array(range(L)) + np.random.randint(-4 * T, 4 * T, N).reshape(N, 1)
data = np.sin(x / 1.0 / T).astype('float64')
torch.save(data, open('traindata.pt', 'wb'))

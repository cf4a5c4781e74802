"""Differentiable operations: each a ``Function`` with a forward and its chain-rule backward.

Split by kind — pointwise, reductions, shape (views), indexing, and the nn-flavoured fused ops —
so each forward/backward pair sits next to its derivation.
"""

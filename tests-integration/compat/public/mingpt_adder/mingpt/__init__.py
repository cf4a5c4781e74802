# Source: https://github.com/karpathy/minGPT
# Path: mingpt/__init__.py
# Commit: 0d9d098cd208a0de1e7a456d62462c8ce352136b
# License: MIT (the text is in LICENSE beside this file)
# Copied verbatim for torchlight's compatibility suite: nothing below this header is changed.

"""opgen: scaffold complete custom PyTorch operator projects in CUDA."""

__version__ = "0.1.0"

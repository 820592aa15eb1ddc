"""gpulint: find and fix the code patterns that waste GPU time and memory in PyTorch programs."""

__version__ = "0.1.0"

"""devicebench: a reproducible study of deep-learning training and inference on CPUs and GPUs."""

__version__ = "0.1.0"

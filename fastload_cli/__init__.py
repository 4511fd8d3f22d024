"""fastload: find out why PyTorch training is slow, by running the script under counterfactual
input-pipeline modes and measuring the difference."""

__version__ = "0.1.0"

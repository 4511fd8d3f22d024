"""What the GPU zoo scripts share: a CUDA device, or a clear exit without one."""

from __future__ import annotations

import sys


def cuda_device():
    import torch

    if not torch.cuda.is_available():
        sys.exit("this zoo case needs a CUDA GPU (torch.cuda.is_available() is False)")
    return torch.device("cuda")

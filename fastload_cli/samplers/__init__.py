"""Outside-in measurements of a run: the process tree and system (psutil), the GPU (NVML)."""

"""CPU backend: NumPy, plus numba-compiled kernels where NumPy has no routine."""

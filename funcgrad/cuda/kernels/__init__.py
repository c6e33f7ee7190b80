"""CUDA kernels, one module per family. Each module also lists its kernels with argument types
(`ptx_cases`), so every kernel can be compiled to PTX for a real GPU where none is present."""

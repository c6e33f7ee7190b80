"""funcgrad: JAX-style function transforms, a NumPy namespace and a training stack.

    import funcgrad as fg
    import funcgrad.numpy as fnp
    grads = fg.grad(loss_fn)(params, x, y)
"""
from . import numpy  # noqa: F401
from . import _methods  # noqa: F401  (Array's operators and methods: funcgrad.numpy's functions)
from .memory import max_memory_allocated, memory_allocated, reset_peak_memory_stats
from . import amp, checkpoint, cuda, data, debug, flatten_util, lax, nn, optim, profiler, random, scipy, tree  # noqa: F401
from .array import Array, Device
from .check_grads import check_grads
from .config import config
from .devices import default_backend, device_count, device_get, device_put, devices, local_devices
from .dtypes import (bfloat16, bool_, complex64, complex128, float0, float16, float32, float64, int8, int16, int32,
                     int64, uint8, uint16, uint32, uint64)
from . import errors  # noqa: F401
from .errors import (AxisError, ConcretizationError, DeviceMismatchError, GradientCutWarning, NonFiniteError,
                     ShapeError, TracerLeakError)
from .numpy import (arange, array, asarray, eye, full, full_like, linspace, ones, ones_like,
                    stop_gradient, zeros, zeros_like)
from .tree import (register_dataclass, register_pytree_node, static_field, tree_flatten,
                   tree_flatten_with_path, tree_leaves, tree_map, tree_structure, tree_unflatten)
from .control import cond, fori_loop, scan, switch, while_loop
from .jit import ShapeDtypeStruct, disable_jit, eval_shape, jit, make_program
from .vmap import vmap
from .custom import checkpoint as remat, custom_gradient, custom_jvp, custom_vjp
from .jvp import hessian, jacfwd, jvp, linearize
from .vjp import grad, jacrev, linear_transpose, value_and_grad, vjp
from .callback import io_callback, pure_callback

tree_util = tree  # jax.tree_util's name for the same functions
jacobian = jacrev


def block_until_ready(tree):
    """Wait until every array in tree is computed (GPU work is asynchronous); returns tree."""
    return tree_map(lambda x: x.block_until_ready() if hasattr(x, "block_until_ready") else x, tree)

__version__ = "0.1.0"

__all__ = [
    "Array", "Device", "config", "check_grads",
    "bfloat16", "bool_", "complex64", "complex128", "float0", "float16", "float32", "float64", "int8", "int16", "int32",
    "int64", "uint8", "uint16", "uint32", "uint64",
    "AxisError", "ConcretizationError", "DeviceMismatchError", "GradientCutWarning", "NonFiniteError", "ShapeError",
    "TracerLeakError",
    "arange", "array", "asarray", "eye", "full", "full_like", "linspace", "ones", "ones_like",
    "stop_gradient", "zeros", "zeros_like",
    "register_dataclass", "register_pytree_node", "static_field", "tree_flatten", "tree_flatten_with_path",
    "tree_leaves", "tree_map", "tree_structure", "tree_unflatten",
    "device_get", "device_count", "local_devices", "default_backend", "remat", "custom_vjp", "custom_jvp",
    "custom_gradient", "linearize", "linear_transpose", "jacobian", "eval_shape", "ShapeDtypeStruct", "disable_jit",
    "block_until_ready", "pure_callback", "io_callback", "grad", "hessian", "jacfwd", "jacrev", "jvp", "value_and_grad", "vjp",
    "jit", "make_program", "cond", "switch", "fori_loop", "while_loop", "scan", "lax", "tree_util", "vmap", "memory_allocated", "max_memory_allocated", "reset_peak_memory_stats",
    "amp", "checkpoint", "cuda", "data", "nn", "profiler", "numpy", "optim", "random", "device_put", "devices",
]


def __getattr__(name: str):
    """funcgrad.distributions loads on first use: it was 0.18 of the 1.08 s of CPU `import funcgrad`
    took, which every launched worker and command-line call pays."""
    if name == "distributions":
        import importlib
        return importlib.import_module(".distributions", __name__)
    raise AttributeError(f"module 'funcgrad' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), "distributions"])

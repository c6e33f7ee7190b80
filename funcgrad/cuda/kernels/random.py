"""Threefry-2x32 on the device: a thread per counter pair, the same 20 rounds as funcgrad.cpu.threefry,
so a key gives the same numbers on every device."""
from __future__ import annotations


from ... import dtypes
from ...cpu.threefry import _PARITY, _ROTATIONS
from ..buffer import DeviceValue, empty
from ..runtime import launch, launch_shape
from .common import INDEX, array_type, compile_source, scalar_type, tuple_type

_ROUNDS = []
for _block in range(5):
    for _r in _ROTATIONS[_block % 2]:
        _ROUNDS += ["        x0 = (x0 + x1) & M",
                    f"        x1 = (((x1 << np.uint64({_r})) | (x1 >> np.uint64({32 - _r}))) & M) ^ x0"]
    _ROUNDS += [f"        x0 = (x0 + ks{(_block + 1) % 3}) & M",
                f"        x1 = (x1 + ks{(_block + 2) % 3} + np.uint64({_block + 1})) & M"]

SOURCE = f"""@cuda.jit(cache=True)
def kernel(key, k_off, kshape, k_st, k_step, x0s, x0_off, x0_st, x1s, x1_off, x1_st, n, pairs, out):
    M = np.uint64(0xFFFFFFFF)
    for i in range(cuda.grid(1), pairs, cuda.gridsize(1)):
        row = i // n
        c = i % n
        kb = S.element(row, kshape, k_st, k_off)
        ks0 = np.uint64(key[kb])
        ks1 = np.uint64(key[kb + k_step])
        ks2 = ks0 ^ ks1 ^ np.uint64({int(_PARITY)})
        x0 = (np.uint64(x0s[x0_off + c * x0_st]) + ks0) & M
        x1 = (np.uint64(x1s[x1_off + c * x1_st]) + ks1) & M
{chr(10).join(_ROUNDS)}
        out[2 * i] = np.uint32(x0)
        out[2 * i + 1] = np.uint32(x1)
"""


def threefry2x32(key: DeviceValue, x0: DeviceValue, x1: DeviceValue) -> DeviceValue:
    """key (..., 2), counters x0, x1 (n,) -> (..., n, 2) uint32."""
    n = x0.shape[0]
    batch = key.shape[:-1]
    out = empty(batch + (n, 2), dtypes.uint32)
    pairs = out.size // 2
    if pairs:
        kernel = compile_source(SOURCE)
        launch(kernel, *launch_shape(pairs), key.data, key.offset, batch or (1,), key.strides[:-1] or (0,),
               key.strides[-1], x0.data, x0.offset, x0.strides[0], x1.data, x1.offset, x1.strides[0], n, pairs,
               out.data)
    return out


def ptx_cases():
    i64 = scalar_type(INDEX)
    u32 = array_type(dtypes.uint32)
    for nb in (1, 2):
        sig = (u32, i64, tuple_type(nb), tuple_type(nb), i64, u32, i64, i64, u32, i64, i64, i64, i64, u32)
        yield f"threefry2x32[{nb} key dims]", compile_source(SOURCE), sig

"""SIMD vectors for numba kernels: a register-blocked micro-kernel names its accumulators.

LLVM vectorises loops, but not a GEMM-style micro-kernel: a block of accumulators that must stay
in registers while a long reduction streams past them only stays there when the kernel holds them
as values, and numba has no vector type. `Vec` is one (an LLVM vector of a literal count of
elements, which LLVM splits into the machine's registers: cpu/direct's are one of the host's,
cpu/registers), and `load`, `load_halves`, `store`, `splat`, `broadcast`, `fma`, `add` and `total` are its
instructions, emitted inline. A kernel's local Vec variables become
SSA values, so its accumulators live in registers from first FMA to the store.

`load` and `store` take a 1-D C-contiguous array and an element index and do no bounds check:
the kernels that use them check their arrays' sizes once, before the loops.
"""
from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.core.errors import RequireLiteralValue
from numba.extending import intrinsic, models, register_model


class Vec(types.Type):
    """`count` values of a float dtype in one vector."""

    def __init__(self, dtype: types.Float, count: int) -> None:
        self.dtype, self.count = dtype, count
        super().__init__(name=f"Vec({dtype}, {count})")


@register_model(Vec)
class _VecModel(models.PrimitiveModel):
    def __init__(self, dmm, fe_type: Vec) -> None:
        super().__init__(dmm, fe_type, ir.VectorType(dmm.lookup(fe_type.dtype).get_value_type(), fe_type.count))


def _literal(count) -> int:
    if not isinstance(count, types.IntegerLiteral):
        raise RequireLiteralValue(count)  # numba retries with the literal value
    return count.literal_value


def _splat(builder, ty: ir.VectorType, value):
    first = builder.insert_element(ir.Constant(ty, ir.Undefined), value, ir.Constant(ir.IntType(32), 0))
    return builder.shuffle_vector(first, ir.Constant(ty, ir.Undefined), ir.Constant(ir.VectorType(ir.IntType(32), ty.count), [0] * ty.count))


def _address(context, builder, array_type, array, index, vector_type):
    data = cgutils.create_struct_proxy(array_type)(context, builder, value=array).data
    return builder.bitcast(builder.gep(data, [index]), vector_type.as_pointer())


@intrinsic
def load(typingctx, array, index, count):
    """array[index:index + count] as a vector (index an element, any alignment)."""
    vec = Vec(array.dtype, _literal(count))

    def codegen(context, builder, sig, args):
        ty = context.get_value_type(vec)
        return builder.load(_address(context, builder, sig.args[0], args[0], args[1], ty), align=array.dtype.bitwidth // 8)
    return vec(array, index, count), codegen


@intrinsic
def load_halves(typingctx, array, first, second, count):
    """array[first:first + count // 2] then array[second:second + count // 2] as one vector of
    count (two loads of half vectors and a shuffle that joins them: two short rows in one register)."""
    vec = Vec(array.dtype, _literal(count))

    def codegen(context, builder, sig, args):
        ty = context.get_value_type(vec)
        half = ir.VectorType(ty.element, ty.count // 2)
        lo, hi = (builder.load(_address(context, builder, sig.args[0], args[0], i, half), align=array.dtype.bitwidth // 8)
                  for i in (args[1], args[2]))
        return builder.shuffle_vector(lo, hi, ir.Constant(ir.VectorType(ir.IntType(32), ty.count), list(range(ty.count))))
    return vec(array, first, second, count), codegen


@intrinsic
def store(typingctx, array, index, vector):
    """array[index:index + count] = vector."""
    def codegen(context, builder, sig, args):
        address = _address(context, builder, sig.args[0], args[0], args[1], args[2].type)
        builder.store(args[2], address, align=array.dtype.bitwidth // 8)
    return types.none(array, index, vector), codegen


@intrinsic
def splat(typingctx, value, count):
    """A vector of count copies of value."""
    vec = Vec(value, _literal(count))

    def codegen(context, builder, sig, args):
        return _splat(builder, context.get_value_type(vec), args[0])
    return vec(value, count), codegen


@intrinsic
def broadcast(typingctx, array, index, count):
    """A vector of count copies of array[index] (one broadcasting load: no bounds or wrap-around
    test on index, so it folds into the instruction that uses it)."""
    vec = Vec(array.dtype, _literal(count))

    def codegen(context, builder, sig, args):
        ty = context.get_value_type(vec)
        element = _address(context, builder, sig.args[0], args[0], args[1], ty.element)
        return _splat(builder, ty, builder.load(element, align=array.dtype.bitwidth // 8))
    return vec(array, index, count), codegen


@intrinsic
def fma(typingctx, a, b, c):
    """a * b + c, rounded once (LLVM's fma intrinsic: the hardware's instruction where it has one)."""
    def codegen(context, builder, sig, args):
        ty = args[0].type
        name = f"llvm.fma.v{ty.count}f{a.dtype.bitwidth}"
        return builder.call(cgutils.get_or_insert_function(builder.module, ir.FunctionType(ty, [ty] * 3), name), args)
    return a(a, b, c), codegen


@intrinsic
def add(typingctx, a, b):
    """a + b, lane by lane."""
    def codegen(context, builder, sig, args):
        return builder.fadd(args[0], args[1])
    return a(a, b), codegen


@intrinsic
def total(typingctx, a):
    """The sum of a's lanes, added in order from the first (LLVM's ordered reduction: no
    reassociation, the same bits on every machine)."""
    def codegen(context, builder, sig, args):
        ty = args[0].type
        name = f"llvm.vector.reduce.fadd.v{ty.count}f{a.dtype.bitwidth}"
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ty.element, [ty.element, ty]), name)
        return builder.call(fn, [ir.Constant(ty.element, -0.0), args[0]])
    return a.dtype(a), codegen

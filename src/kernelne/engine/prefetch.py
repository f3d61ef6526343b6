"""Software prefetch for numba loops that touch rows of a matrix at random.

Negative samples hit random rows of the context matrix; on graphs whose embeddings do not fit
in the core's cache each such row is a cache miss. Asking for the rows one pair ahead hides
that latency (LLVM's ``llvm.prefetch`` intrinsic; a hint, with no effect on results).
"""

from __future__ import annotations

from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

_LINE_FLOATS = 16  # 64-byte cache lines of float32


@intrinsic
def _prefetch(typingctx, arr, row, col):
    """Prefetch (for writing, keep in all caches) the cache line holding ``arr[row, col]``."""
    sig = types.void(arr, row, col)

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(
            context, builder, aryty, ary, [args[1], args[2]], wraparound=False
        )
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        builder.call(fn, [builder.bitcast(ptr, i8p), i32(1), i32(3), i32(1)])
        return context.get_dummy_value()

    return sig, codegen


@njit(inline="always")
def prefetch_row(arr, row):
    """Prefetch every cache line of the C-contiguous row ``arr[row]``."""
    for col in range(0, arr.shape[1], _LINE_FLOATS):
        _prefetch(arr, row, col)

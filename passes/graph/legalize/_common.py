"""The contract between graph-legalize and the modules that know how to legalize each op family.

A legalization is registered per graph op class (a unary op needs none: its class declares its
element function, passes/graph/legalize/unary.py):

    @legalizes(graph.SoftmaxOp)
    class LegalizeSoftmax(Legalization):
        def build(self, op, kb):                 # fill the kernel: kb.inputs / kb.outputs are
            ...                                  # memrefs of op's tensor operands / results
        def result_dims(self, op, g):            # one Index per `?` over all results, in order
            return [g.dim(op.input, i) for i, d in enumerate(shape) if d is dynamic]

`build` sees the kernel's buffers only: inside a kernel, dynamic extents are read with `kb.dim`
(`mem.dim`). `result_dims` runs at the graph level, before the op: `g.dim` emits `graph.dim`, and
`g.iadd/isub/imul/floordiv/ceildiv/max` emit folded `arith` on `index` (shape functions).
`extra_args` passes graph-level values (index operands packed into a tensor) as extra kernel inputs.
`kernel_key` says which ops may share one kernel: by default the op name, its properties and the
operand/result types, so two identical ops reuse one kernel.
"""

from __future__ import annotations


from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.rewriter import InsertPoint

from minimlir.dialects import graph
from minimlir.dialects.builder import Builder, Index
from minimlir.passes.loop._kernel_builder import KernelBuilder

LEGALIZATIONS: dict[type[Operation], Legalization] = {}


class Legalization:
    """How one graph op family becomes a loop kernel (see the module docstring)."""

    def build(self, op: Operation, kb: KernelBuilder) -> None:
        raise NotImplementedError

    def result_dims(self, op: Operation, g: GraphDims) -> list[Index]:
        """Default: results with static shapes need nothing; a dynamic dim of result k at
        position i is taken from the first tensor operand of the same rank whose dim i matches."""
        dims: list[Index] = []
        for res in op.results:
            assert isinstance(res.type, TensorType)
            for i, d in enumerate(res.type.get_shape()):
                if d >= 0:
                    continue
                dims.append(g.same_dim_as_operand(op, res.type, i))
        return dims

    def extra_args(self, op: Operation, g: GraphDims) -> list[SSAValue]:
        """Tensors built at the graph level (before `op`) and passed to the kernel after op's
        tensor operands: how index operands reach a kernel, which takes memrefs only (e.g. a
        graph.from_dims of them: an i64 buffer). Default: none. Their types must follow from
        `kernel_key`."""
        return []

    def kernel_attributes(self, op: Operation) -> dict[str, Attribute]:
        """Attributes for the kernel `build` fills (facts later passes may use). Default: none."""
        return {}

    def kernel_key(self, op: Operation) -> tuple:
        return (
            op.name,
            tuple(sorted((k, str(v)) for k, v in op.properties.items())),
            tuple(str(o.type) for o in op.operands if isinstance(o.type, TensorType)),
            tuple(str(r.type) for r in op.results),
        )


def _count_dynamic(t) -> int:
    """How many `?` dims a tensor type has."""
    return sum(1 for d in t.get_shape() if d < 0)


def legalizes(*op_types: type[Operation]):
    """Class decorator: register an instance of the Legalization for these graph op classes."""

    def register(cls: type[Legalization]) -> type[Legalization]:
        inst = cls()
        for t in op_types:
            assert t not in LEGALIZATIONS, f"{t.name} is legalized twice"
            LEGALIZATIONS[t] = inst
        return cls

    return register


class GraphDims(Builder):
    """Shape arithmetic at the graph level, emitted before `op` (index values, folded by the
    shared `Builder`; constants are emitted in place, not pooled)."""

    def __init__(self, op: Operation):
        super().__init__(InsertPoint.before(op))
        self._dims: dict[tuple[SSAValue, int], SSAValue] = {}

    def dim(self, value: SSAValue, i: int) -> Index:
        """Extent i of a tensor: an int when static, else a `graph.dim` (emitted once)."""
        assert isinstance(value.type, TensorType)
        d = value.type.get_shape()[i]
        if d >= 0:
            return d
        if isinstance(value.owner, graph.CallKernelOp):
            # a result of an op legalized before: its dims are operands of that call (this keeps
            # every dim an expression of the arguments' dims, so equal dims are equal values)
            call = value.owner
            types = [r.type for r in call.outputs]
            k = list(call.outputs).index(value)
            pos = sum(_count_dynamic(t) for t in types[:k]) + value.type.get_shape()[:i].count(d)
            return call.dims[pos]
        if (value, i) not in self._dims:
            self._dims[(value, i)] = self.emit(graph.DimOp(value, i))
        return self._dims[(value, i)]

    def same_dim_as_operand(self, op: Operation, result_type: TensorType, i: int) -> Index:
        rank = result_type.get_num_dims()
        # Prefer an operand whose dim is dynamic or > 1 at the aligned (right-justified) position.
        candidates: list[Index] = []
        for operand in op.operands:
            t = operand.type
            if not isinstance(t, TensorType):
                continue
            r = t.get_num_dims()
            j = i - (rank - r)
            if j < 0:
                continue
            d = t.get_shape()[j]
            if d < 0:
                candidates.append(self.dim(operand, j))
            elif d != 1:
                return d
        if not candidates:
            raise ValueError(f"cannot infer dynamic dim {i} of {op.name}'s result")
        candidates = list(dict.fromkeys(candidates))  # broadcasting a dim with itself: that dim
        if len(candidates) == 1:
            return candidates[0]
        # NumPy broadcasting of `?` with `?`: max (a 1 broadcasts to the other size).
        acc = candidates[0]
        for c in candidates[1:]:
            acc = self.max(acc, c)
        return acc

    # the names the legalizations' shape functions use (SymbolicGraphDims overrides them)
    def floordiv(self, a: Index, b: Index) -> Index:
        return self.ifloordiv(a, b)

    def ceildiv(self, a: Index, b: Index) -> Index:
        return self.iceildiv(a, b)

    def max(self, a: Index, b: Index) -> Index:
        return self.imax(a, b)

    def min(self, a: Index, b: Index) -> Index:
        return self.imin(a, b)

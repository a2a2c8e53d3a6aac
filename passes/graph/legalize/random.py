"""graph-legalize for graph.random: one spatial block over the result, element k (row-major) drawn
from the counter-based generator of `minimlir.dialects.elementfn` (splitmix64 of the seed's key
and k, then [0, 1) or Box-Muller), so the tensor does not depend on how the schedule tiles,
vectorizes or parallelizes the nest.

    %u = graph.random "uniform"(0.0, 1.0) seed 7 dims(%n) : tensor<?x4xf32>
  becomes
    loop.for %i, %j (0..n, 0..4)   loop.block "random" {
      %k = i * 4 + j : index -> i64
      %z = mix64(%k * GAMMA + (key + GAMMA))          (key = mix64(seed), a constant)
      Y[i, j] = (%z >>u 40) * 2^-24 : f32
    }
"""

from __future__ import annotations

from xdsl.dialects.builtin import i64

from minimlir.dialects import elementfn as ef
from minimlir.dialects import graph
from minimlir.passes.graph.legalize._common import GraphDims, Legalization, legalizes
from minimlir.passes.loop._kernel_builder import Index, KernelBuilder


@legalizes(graph.RandomOp)
class LegalizeRandom(Legalization):
    """Y[i…] = draw(seed, linear index of i…): block "random" (affine store, no loads)."""

    def build(self, op: graph.RandomOp, kb: KernelBuilder) -> None:
        (y,) = kb.outputs
        t = y.type.get_element_type()
        key = ef.mix64(op.seed.value.data)
        a, b = op.a.value.data, op.b.value.data
        dims = kb.dims(y)
        strides: list[Index] = [1] * len(dims)
        for k in range(len(dims) - 2, -1, -1):
            strides[k] = kb.top.imul(strides[k + 1], dims[k + 1])
        with kb.nest("random", dims) as (e, vs):
            linear: Index = 0
            for v, s in zip(vs, strides):
                linear = e.iadd(linear, e.imul(v, s))
            counter = e.cast(e.index(linear), i64)
            if op.distribution.data == "uniform":
                value = ef.random_uniform(e, key, counter, t, a, b)
            else:
                value = ef.random_normal(e, key, counter, t, a, b)
            e.store(value, y, vs)

    def result_dims(self, op: graph.RandomOp, g: GraphDims) -> list[Index]:
        return list(op.dims)

"""Graph ops of the second operator-coverage round (issue 14). Part of the `graph` dialect
(graph.py lists them in `Graph`); kept apart from the first ops so that merges stay clean.

    %y = graph.reduce_prod %x axes [1] : tensor<?x4xf32> -> tensor<?x1xf32>
"""

from __future__ import annotations

from xdsl.irdl import irdl_op_definition

from minimlir.dialects.graph import _ReduceOp


@irdl_op_definition
class ReduceProdOp(_ReduceOp):
    """Product over `axes` (1 for an empty reduction)."""

    name = "graph.reduce_prod"


COVERAGE_REDUCE = [ReduceProdOp]
COVERAGE_OPS = [ReduceProdOp]

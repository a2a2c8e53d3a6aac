"""graph-layout: chains of convs, pools and elementwise ops move to a channel-blocked layout
(NCHW{B}c, B the vector width: onnxruntime's NchwcTransformer, TVM's AlterOpLayout), converting
only at the chain's ends:

    %y = graph.conv2d %x, %w pads [1, 1, 1, 1] : (tensor<1x32x28x28xf32>, …) -> tensor<1x64x28x28xf32>
    %r = graph.relu %y : tensor<1x64x28x28xf32> -> tensor<1x64x28x28xf32>
    %p = graph.max_pool2d %r kernel [2, 2] strides [2, 2] : … -> tensor<1x64x14x14xf32>
  ->
    %a = graph.reshape %x : tensor<1x32x28x28xf32> -> tensor<1x2x16x28x28xf32>
    %b = graph.transpose %a perm [0, 1, 3, 4, 2] : … -> tensor<1x2x28x28x16xf32>
    %y = graph.conv2d %b, %w pads [1, 1, 1, 1] block 16 : (…) -> tensor<1x4x28x28x16xf32>
    %r = graph.relu %y : tensor<1x4x28x28x16xf32> -> tensor<1x4x28x28x16xf32>
    %p = graph.max_pool2d %r kernel [2, 2] strides [2, 2] block 16 : … -> tensor<1x4x14x14x16xf32>
    %t = graph.transpose %p perm [0, 1, 4, 2, 3] : … -> tensor<1x4x16x14x14xf32>
    %o = graph.reshape %t : … -> tensor<1x64x14x14xf32>

In the blocked layout every kernel of the chain runs with the channel block in vector lanes: a
conv's accumulator tile stores whole vectors (in NCHW its pixels are strided by H*W), and a pool
or an elementwise op over a 7x7 or 13x13 map is whole vectors too, never a ragged row.

A chain starts at a conv (group 1, static shapes, input and output channels multiples of B);
it grows through the ops that read only chain values, scalars and per-channel constants:

  * conv2d (the same conditions), max_pool2d and avg_pool2d (the `block` property);
  * a conv whose input has fewer channels than a block (an RGB image) reads it in NCHW and
    starts the chain with its blocked result (onnxruntime's NCHW-input NCHWc conv);
  * elementwise and broadcasting ops of the chain's shape (ReLU, Clip, Add, Mul, …): another
    operand is a chain value, a tensor of one element, or a per-channel (C, 1, 1) or (1, C, 1, 1)
    tensor, which moves to (1, C/B, 1, 1, B) (weight-only: graph-lift-params does it once);
  * concat along the channels, every part a chain value;
  * global average / max pools, as reduce_mean / reduce_max over H and W of the blocked value.

Anything else reads the NCHW value back (a transpose and a free reshape, built once per value).
A per-channel scale and shift after a conv fold into its weight first (graph-pack-weights's
fold, which cannot see them once they are blocked). A value with a dynamic channel count or
spatial size stays NCHW (the conv rule's blocked tile wants them static); a dynamic batch is fine.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import Float32Type, ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from minimlir.dialects import graph
from minimlir.dialects._fusion import OpPattern, fusion_kind
from minimlir.passes.graph.lift_params import weight_only


def _shape(v: SSAValue) -> list[int] | None:
    t = v.type
    return list(t.get_shape()) if isinstance(t, TensorType) else None


def _static4(v: SSAValue, any_type: bool = False) -> bool:
    """f32 NCHW with static C, H, W (the batch may be dynamic): the vector width is in f32 lanes.
    `any_type`: of any element type (an elementwise op's result: a comparison's i1 joins too)."""
    s = _shape(v)
    return (s is not None and len(s) == 4 and min(s[1:]) >= 0
            and (any_type or isinstance(v.type.get_element_type(), Float32Type)))  # type: ignore[union-attr]


def _batch(v: SSAValue, ip: InsertPoint, location) -> list[SSAValue]:
    """The dynamic dims a reshape of `v` (batch first) to another rank needs: [dim 0] or none."""
    if _shape(v)[0] >= 0:  # type: ignore[index]
        return []
    return [_insert(graph.DimOp(v, 0), ip, location)]


def _insert(op: Operation, ip: InsertPoint, location) -> SSAValue:
    op.location = location
    Rewriter.insert_op(op, ip)
    return op.results[0]


class _Layout:
    """One function's rewrite: `blocked[v]` is the NCHW{B}c form of the NCHW value v."""

    def __init__(self, block: int):
        self.b = block
        self.blocked: dict[SSAValue, SSAValue] = {}
        self.conversions: list[Operation] = []  # built here; erased at the end when unused

    # -- conversions ---------------------------------------------------------------------

    def blocks(self, v: SSAValue, nchw: list[int], ip: InsertPoint, location, dims=()) -> SSAValue:
        """`v`, seen as the NCHW shape `nchw`, in blocks: (N, C/B, H, W, B), a reshape to
        (N, C/B, B, H, W) and a transpose (recorded, erased at the end if nobody reads it)."""
        n, c, h, w = nchw
        elt = v.type.get_element_type()  # type: ignore[union-attr]
        r = graph.ReshapeOp(v, TensorType(elt, [n, c // self.b, self.b, h, w]), dims)
        _insert(r, ip, location)
        t = graph.TransposeOp(r.result, [0, 1, 3, 4, 2])
        _insert(t, InsertPoint.after(r), location)
        self.conversions += [t, r]
        return t.result

    def to_blocked(self, v: SSAValue, at: Operation) -> SSAValue:
        if v not in self.blocked:
            ip = InsertPoint.after(v.owner) if isinstance(v.owner, Operation) else InsertPoint.before(at)
            dims = _batch(v, ip, at.location)
            self.conversions += [d.owner for d in dims]  # type: ignore[misc]
            self.blocked[v] = self.blocks(v, _shape(v), ip, at.location, dims)  # type: ignore[arg-type]
        return self.blocked[v]

    def publish(self, old: Operation, new: SSAValue) -> None:
        """`new` (blocked) replaces the NCHW result of `old`: its other readers get it back in
        NCHW through a transpose and a reshape (erased at the end if nobody reads them)."""
        res = old.results[0]
        n, c, h, w = _shape(res)  # type: ignore[misc]
        elt = res.type.get_element_type()  # type: ignore[union-attr]
        t = graph.TransposeOp(new, [0, 1, 4, 2, 3])
        _insert(t, InsertPoint.after(new.owner), old.location)  # type: ignore[arg-type]
        dims = _batch(t.result, InsertPoint.after(t), old.location)
        r = graph.ReshapeOp(t.result, TensorType(elt, [n, c, h, w]), dims)
        _insert(r, InsertPoint.after(dims[-1].owner if dims else t), old.location)  # type: ignore[arg-type]
        self.conversions += [r, *(d.owner for d in dims), t]
        res.replace_all_uses_with(r.result)
        old.detach()
        old.erase()
        self.blocked[r.result] = new

    # -- which values and ops join -------------------------------------------------------

    def channels_ok(self, v: SSAValue, any_type: bool = False) -> bool:
        return _static4(v, any_type) and _shape(v)[1] % self.b == 0  # type: ignore[index]

    def conv_ok(self, op: graph.Conv2dOp) -> bool:
        """Group 1, static weights and channels, output channels in whole blocks; the input in
        whole blocks too, or fewer channels than one block (an image's: read in NCHW)."""
        ws = op.weight_shape()
        c = _shape(op.input)[1] if _static4(op.input) else -1  # type: ignore[index]
        return (not op.blocked and not op.tile and op.group.value.data == 1
                and (self.channels_ok(op.input) or 0 < c < self.b)
                and self.channels_ok(op.result) and len(ws) == 4 and min(ws) >= 0
                and isinstance(op.weight.type, TensorType))

    def side_operand(self, u: SSAValue, c: int, at: Operation) -> SSAValue | None:
        """A non-chain operand of an elementwise op in the chain, in a form that broadcasts
        against the blocked shape: one element (as it is) or per channel (blocked); else None."""
        s = _shape(u)
        if s is None:
            return None
        if all(d == 1 for d in s) and len(s) <= 5:
            return u
        if s not in ([c, 1, 1], [1, c, 1, 1]):
            return None
        return self.blocks(u, [1, c, 1, 1], InsertPoint.before(at), at.location)

    # -- the rewrite ---------------------------------------------------------------------

    def leads_on(self, v: SSAValue, depth: int = 4) -> bool:
        """A conv, pool or concat that would join reads `v`, directly or through elementwise ops:
        a conv alone pays two conversions and gains nothing (the NCHW kernel is as fast)."""
        for use in v.uses:
            u = use.operation
            if isinstance(u, graph.Conv2dOp) and self.conv_ok(u) and u.input is v:
                return True
            if isinstance(u, graph.MaxPool2dOp | graph.AvgPool2dOp | graph.GlobalAvgPoolOp
                          | graph.GlobalMaxPoolOp | graph.ConcatOp):
                return True
            if (depth and len(u.results) == 1 and fusion_kind(u) in (OpPattern.ELEMWISE, OpPattern.BROADCAST)
                    and self.channels_ok(u.results[0]) and self.leads_on(u.results[0], depth - 1)):
                return True
        return False

    def visit(self, op: Operation) -> None:
        if isinstance(op, graph.Conv2dOp):
            if self.conv_ok(op) and (op.input in self.blocked or self.leads_on(op.result)):
                self.conv(op)
            return
        if len(op.results) != 1 or not any(v in self.blocked for v in op.operands):
            return
        if isinstance(op, graph.MaxPool2dOp | graph.AvgPool2dOp) and not op.blocked:
            self.pool(op)
        elif isinstance(op, graph.GlobalAvgPoolOp | graph.GlobalMaxPoolOp):
            self.global_pool(op)
        elif isinstance(op, graph.ConcatOp):
            self.concat(op)
        elif (fusion_kind(op) in (OpPattern.ELEMWISE, OpPattern.BROADCAST) and not op.regions
              and op.name != "graph.random"):  # (random values follow the element's NCHW position)
            self.elementwise(op)

    def conv(self, op: graph.Conv2dOp) -> None:
        from minimlir.passes.graph.pack_weights import fold_scale_shift

        if weight_only(op.weight) and (op.bias is None or weight_only(op.bias)):
            op = fold_scale_shift(op)  # sees the NCHW scale and shift; blocked, it could not
        x = self.to_blocked(op.input, op) if self.channels_ok(op.input) else op.input
        new = graph.Conv2dOp(x, op.weight, op.bias, op.strides.get_values(), op.pads.get_values(),
                             op.dilations.get_values(), 1, op.tile, self.b)
        new.attributes.update(op.attributes)
        self.publish(op, _insert(new, InsertPoint.before(op), op.location))

    def pool(self, op: graph.MaxPool2dOp | graph.AvgPool2dOp) -> None:
        x = self.blocked[op.input]
        args = (x, op.kernel.get_values(), op.strides.get_values(), op.pads.get_values())
        if isinstance(op, graph.MaxPool2dOp):
            new = graph.MaxPool2dOp(*args, op.dilations.get_values(), bool(op.ceil_mode), self.b)
        else:
            new = graph.AvgPool2dOp(*args, bool(op.ceil_mode), bool(op.count_include_pad),
                                    op.dilations.get_values(), self.b)
        new.attributes.update(op.attributes)
        self.publish(op, _insert(new, InsertPoint.before(op), op.location))

    def global_pool(self, op: graph.GlobalAvgPoolOp | graph.GlobalMaxPoolOp) -> None:
        if not _static4(op.result):
            return
        red = graph.ReduceMeanOp if isinstance(op, graph.GlobalAvgPoolOp) else graph.ReduceMaxOp
        new = red(self.blocked[op.input], [2, 3], True)
        self.publish(op, _insert(new, InsertPoint.before(op), op.location))

    def concat(self, op: graph.ConcatOp) -> None:
        if op.axis.value.data != 1 or not all(v in self.blocked for v in op.operands):
            return
        if not self.channels_ok(op.result):
            return
        new = graph.ConcatOp([self.blocked[v] for v in op.operands], 1)
        self.publish(op, _insert(new, InsertPoint.before(op), op.location))

    def elementwise(self, op: Operation) -> None:
        res = op.results[0]
        if not self.channels_ok(res, any_type=True):
            return
        shape = _shape(res)
        operands: list[SSAValue] = []
        for u in op.operands:
            if u in self.blocked and _shape(u) == shape:
                operands.append(self.blocked[u])
                continue
            side = self.side_operand(u, shape[1], op)  # type: ignore[index]
            if side is None:
                return  # the chain ends here (the side conversions built are dead: erased)
            operands.append(side)
        nb = self.blocked[next(u for u in op.operands if u in self.blocked)]
        # the op's own element type (a comparison's i1, a cast's), in the blocked shape
        rt = TensorType(res.type.get_element_type(), nb.type.get_shape())  # type: ignore[union-attr]
        new = type(op).create(operands=operands, result_types=[rt], properties=dict(op.properties),
                              attributes=dict(op.attributes))
        new.verify()
        self.publish(op, _insert(new, InsertPoint.before(op), op.location))

    def finish(self) -> None:
        """Erase the conversions nobody reads (in use order: a reshape before its transpose)."""
        changed = True
        while changed:
            changed = False
            for c in list(self.conversions):
                if c.parent is not None and not c.results[0].uses:
                    c.detach()
                    c.erase()
                    self.conversions.remove(c)
                    changed = True


def layout_block(width: int) -> int:
    """The channel block graph-layout uses for a vector width of `width` f32 lanes."""
    return width if width >= 4 else 0


@dataclass(frozen=True)
class GraphLayoutPass(ModulePass):
    """Chains of convs, pools and elementwise ops to the channel-blocked NCHW{B}c layout (see the
    module docstring). `block`: B (0: the target's vector width, as loop-schedule's)."""

    name = "graph-layout"

    block: int = 0

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from minimlir.passes.graph.pack_weights import _config_for

        b = self.block or layout_block(_config_for(0).width)
        if b <= 0:
            return
        for fn in [f for f in op.walk() if f.name == "func.func"]:
            lay = _Layout(b)
            for o in list(fn.walk()):
                if o.parent is not None and o.dialect_name() == "graph":
                    lay.visit(o)
            lay.finish()

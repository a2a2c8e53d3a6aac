"""graph-pack-weights: conv weights that are params move to the layout the conv kernel reads
(onnxruntime's NCHWc weight reorder, TVM's AlterOpLayout on the kernel), as graph ops that
graph-lift-params then runs once, at load time, instead of in every call:

    %w = graph.param "conv.weight" : tensor<64x32x3x3xf32>
    %y = graph.conv2d %x, %w pads [1, 1, 1, 1] : (…, tensor<64x32x3x3xf32>) -> …
  ->
    %r = graph.reshape %w : tensor<64x32x3x3xf32> -> tensor<2x32x32x3x3xf32>
    %p = graph.transpose %r perm [0, 2, 3, 4, 1] : tensor<2x32x32x3x3xf32> -> tensor<2x32x3x3x32xf32>
    %y = graph.conv2d %x, %p pads [1, 1, 1, 1] weight_tile 32 : (…, tensor<2x32x3x3x32xf32>) -> …

First a per-channel Mul and Add after a conv (a batch norm left as such) fold into its weight
and bias (`fold_scale_shift`). Then 1x1 convs (stride 1, no padding, at least 12 vectors of
pixels, MATMUL_MIN_PIXEL_VECTORS: at 13x13 the conv stays faster) become matmuls over the pixels
(onnxruntime runs them as a GEMM too):

  * group 1, [O, C] x [N, C, H*W], when neither its input comes from nor its result feeds a
    concat that copies: the conv rule keeps its accumulator tile across output channels, so its
    stores to NCHW scatter, and it reads the input row by row across all C channels (ResNet-50's
    64 -> 256 1x1 convs at 56x56 ran at 42 GFLOP/s, 2.8x onnxruntime's time; as a matmul, 1.2x).
    The conv's chain of elementwise consumers (bias, residual add, ReLU) moves before the final
    reshape (`_sink_reshape`), so graph-fuse fuses it into the matmul;
  * grouped, [G, O/G, C/G] x [N, G, C/G, H*W], when the channels per group fit the panels badly
    (T below two full vectors: ShuffleNet's 68 and 34 channels per group): 1.5-2x faster than
    narrow channel panels.

The weight is a free reshape either way.

A matmul's weight B (K, N), a param, gets the column panels the matmul rule streams (`_pack_matmul`:
`graph.matmul … weight_tile T`, a (ceil(N/T), K, T) tensor), where the rule packs B by default
(`matmul_weight_panel`); the rule then reads the panels in place instead of copying each one per
call, and a tuned panel of another width repacks from this layout.

The panel T is the one the conv2d schedule rule's vector path packs its weights in by default
(`conv_weight_tile`: nv vectors of the target's width): with it the rule reads the weight as it
is and builds no packing nest (ResNet-50 repacked 100 MB of weights per inference). A tuned
schedule with another panel repacks from this layout, as before from OIHW. Applies to float
convs whose weight is a `graph.param` or `graph.constant` (directly, or through ops of such
values only: graph-lift-params hoists the lot) with a static shape; not to depthwise convs (the
rows rule reads them as they are) nor where the vector path refuses the channel count.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from minimlir.dialects import graph
from minimlir.passes.graph.lift_params import reads_param, weight_only
from minimlir.passes.mem.concat_in_place import in_place as concat_in_place


def _pack(op: graph.Conv2dOp, tile: int) -> None:
    o, c, kh, kw = op.weight_shape()
    elt = op.weight.type.get_element_type()  # type: ignore[union-attr]
    ip = InsertPoint.before(op)
    r = graph.ReshapeOp(op.weight, TensorType(elt, [o // tile, tile, c, kh, kw]))
    t = graph.TransposeOp(r.result, [0, 2, 3, 4, 1])
    for new in (r, t):
        new.location = op.weight.owner.location  # type: ignore[union-attr]
        Rewriter.insert_op(new, ip)
    op.operands[1] = t.result
    op.properties["weight_tile"] = graph._i64(tile)


def _channel_vector(v, o: int) -> bool:
    """`v` is a weight-only per-output-channel factor of an NCHW conv result: (O, 1, 1) or (1, O, 1, 1)."""
    t = v.type
    return (isinstance(t, TensorType) and list(t.get_shape()) in ([o, 1, 1], [1, o, 1, 1])
            and weight_only(v))


def fold_scale_shift(op: graph.Conv2dOp) -> graph.Conv2dOp:
    """conv(x, W, b) * s + t, s and t weight-only per output channel (a batch norm the exporter
    left as Mul and Add: Inception-v2) -> conv(x, W*s, b*s + t), onnxruntime's ConvMulFusion and
    ConvAddFusion; graph-lift-params computes W*s once. Returns the conv that holds the result."""
    o, _, _, _ = op.weight_shape()
    while op.result.has_one_use():
        user = next(iter(op.result.uses)).operation
        if not isinstance(user, graph.MulOp | graph.AddOp) or user.result.type != op.result.type:
            break
        other = user.rhs if user.lhs is op.result else user.lhs
        if other is op.result or not _channel_vector(other, o):
            break
        elt = op.result.type.get_element_type()  # type: ignore[union-attr]
        ip = InsertPoint.before(user)
        new: list = []

        def add(n):
            new.append(n)
            Rewriter.insert_op(n, ip)
            return n.results[0]

        flat = add(graph.ReshapeOp(other, TensorType(elt, [o])))
        w, b = op.weight, op.bias
        if isinstance(user, graph.MulOp):
            ws = op.weight.type.get_shape()  # type: ignore[union-attr]
            s4 = add(graph.ReshapeOp(other, TensorType(elt, [o, 1, 1, 1])))
            w = add(graph.MulOp(op.weight, s4, TensorType(elt, ws)))
            b = add(graph.MulOp(b, flat, TensorType(elt, [o]))) if b is not None else None
        else:
            b = add(graph.AddOp(b, flat, TensorType(elt, [o]))) if b is not None else flat
        conv = graph.Conv2dOp(op.input, w, b, op.strides.get_values(), op.pads.get_values(),
                              op.dilations.get_values(), op.group.value.data)
        conv.attributes.update(op.attributes)
        for n in (*new, conv):
            n.location = op.location
        Rewriter.insert_op(conv, ip)
        user.result.replace_all_uses_with(conv.result)
        user.detach()
        user.erase()
        op.detach()
        op.erase()
        op = conv
    return op


MATMUL_MIN_PIXEL_VECTORS = 12
"""A 1x1 conv runs as a matmul from this many vectors of pixels (192 at 16 lanes): on fewer the conv
rule's tile is faster (one thread, 13x13 = 169 pixels: SqueezeNet's 64 -> 256 1x1 conv 0.052 ->
0.045 ms, 256 -> 1000 0.81 -> 0.60 ms; at 14x14 both take the same time, at 28x28 the matmul wins)."""


def _copying_concat(op) -> bool:
    return isinstance(op, graph.ConcatOp) and not concat_in_place(op)


def _as_matmul(op: graph.Conv2dOp, cfg) -> bool:
    """Rewrite a 1x1 conv (stride 1, no padding) as a matmul over the pixels (see the module
    docstring) when it pays."""
    from minimlir.passes.loop.schedule.default.conv2d import conv_weight_tile

    xs = op.input.type.get_shape()  # type: ignore[union-attr]
    o, cg, kh, kw = op.weight_shape()
    group = op.group.value.data
    if ((cg == 1 and o == group) or op.tile or (kh, kw) != (1, 1) or min(xs[1:]) < 0
            or list(op.strides.get_values()) != [1, 1] or any(op.pads.get_values())
            or list(op.dilations.get_values()) != [1, 1] or o % group):
        return False
    og, hw = o // group, xs[2] * xs[3]
    if hw < MATMUL_MIN_PIXEL_VECTORS * cfg.width:
        return False
    chain = _epilogue_chain(op.result)
    end = chain[-1].results[0] if chain else op.result
    if group > 1:
        if conv_weight_tile(og, cfg) >= 2 * cfg.width:
            return False
    elif any(_copying_concat(u.operation) for u in end.uses) or _copying_concat(op.input.owner):
        # group 1: where neither the input comes from nor the result feeds a concat that copies
        # (graph-fuse fuses the reshape into such a concat, which then copies element by element:
        # SqueezeNet's fire modules got 0.2 ms slower each). A concat whose parts are contiguous
        # stays apart and costs no copy (mem-concat-in-place). Also where C is above the matmul's
        # reduction tile (its epilogue then runs on C after the last k block, not in registers):
        # the conv rule's tile read its NCHW input row by row across all C channels and lost at
        # two threads (ResNet-50's 1024 -> 256 at 14x14: 0.52 ms a call in the model, 0.43 as a
        # matmul; whole models at 2 threads, interleaved: ResNet-50 34.5 -> 33.4 ms, DenseNet-121
        # 27.5 -> 26.6, Inception-v2 17.8 -> 17.5; at one thread within 2%)
        return False
    elt = op.input.type.get_element_type()  # type: ignore[union-attr]
    new: list = []

    def add(o_):
        new.append(o_)
        return o_.results[0]

    dims = [add(graph.DimOp(op.input, 0))] if xs[0] < 0 else []
    if group == 1:
        x = add(graph.ReshapeOp(op.input, TensorType(elt, [xs[0], cg, hw]), dims))
        w = add(graph.ReshapeOp(op.weight, TensorType(elt, [og, cg])))
    else:
        x = add(graph.ReshapeOp(op.input, TensorType(elt, [xs[0], group, cg, hw]), dims))
        w = add(graph.ReshapeOp(op.weight, TensorType(elt, [group, og, cg])))
    y = add(graph.MatMulOp(w, x))
    if op.bias is not None:
        b = add(graph.ReshapeOp(op.bias, TensorType(elt, [group, og, 1] if group > 1 else [og, 1])))
        y = add(graph.AddOp(y, b))
    ip = InsertPoint.before(op)
    for n in new:
        n.location = op.location
        Rewriter.insert_op(n, ip)
    y = _sink_reshape(op.result, chain, y, dims)
    out = graph.ReshapeOp(y, op.result.type, dims)  # type: ignore[arg-type]
    out.location = op.location
    Rewriter.insert_op(out, InsertPoint.after(y.owner))
    _retire(op, chain, out.result)
    return True


def _retire(op, chain: list, value) -> None:
    """`value` replaces the end of `op`'s epilogue `chain` (op itself without one); the chain and
    op are erased."""
    (chain[-1].results[0] if chain else op.result).replace_all_uses_with(value)
    for o in reversed(chain):
        o.detach()
        o.erase()
    op.detach()
    op.erase()


def _epilogue_chain(v) -> list:
    """The chain of one-use elementwise consumers of the conv result `v` (bias, batch-norm shift,
    residual add, ReLU, ...): each takes the previous value once, its other operands are tensors of
    v's type (a residual) or 0-d scalars (per-channel factors were folded into the conv already)."""
    from minimlir.dialects._fusion import OpPattern, fusion_kind

    chain, cur = [], v
    while cur.has_one_use():
        user = next(iter(cur.uses)).operation
        if (fusion_kind(user) not in (OpPattern.ELEMWISE, OpPattern.BROADCAST) or len(user.results) != 1
                or user.regions or user.results[0].type != v.type or sum(o is cur for o in user.operands) != 1):
            break
        others = [o for o in user.operands if o is not cur]
        if any(o.type != v.type and (not isinstance(o.type, TensorType) or o.type.get_shape()) for o in others):
            break
        chain.append(user)
        cur = user.results[0]
    return chain


def _sink_reshape(v, chain: list, y, dims):
    """The conv's result `v` (N, O, H, W) is the matmul's `y` (N, O, H*W) reshaped (or `y` is the
    channel-padded conv's result, `_pad_channels`: a chain without residuals): apply its
    epilogue `chain` to `y` instead, and reshape once at the end, so graph-fuse fuses the chain
    into the matmul as its epilogue (a reshape after a matmul ends its fusion group: the ReLU ran
    as a kernel of its own, a full extra pass). An operand of v's type (a residual) is reshaped
    too (a view). Returns the chain's last value as (N, O, H*W)."""
    t4, t3 = v.type, y.type
    cur, cur3 = v, y
    for user in chain:
        ip = InsertPoint.before(user)
        ops = []
        for o in user.operands:
            if o is cur:
                ops.append(cur3)
            elif o.type == t4:
                r = graph.ReshapeOp(o, t3, dims)
                r.location = user.location
                Rewriter.insert_op(r, ip)
                ops.append(r.result)
            else:
                ops.append(o)
        new = type(user).create(operands=ops, result_types=[t3], properties=dict(user.properties),
                                attributes=dict(user.attributes))
        new.location = user.location
        Rewriter.insert_op(new, ip)
        cur, cur3 = user.results[0], new.results[0]
    return cur3


def _whole(shape) -> list[int]:
    """graph.slice ends taking every index of `shape`: a dynamic dim's end is "to the end" (INT64_MAX)."""
    return [d if d >= 0 else 2**63 - 1 for d in shape]


def _subsample_pointwise(op: graph.Conv2dOp) -> graph.Conv2dOp:
    """A strided 1x1 conv without padding (ResNet's projection shortcuts) -> a strided slice of
    its input and the stride-1 conv, which `_as_matmul` may then run as a matmul: ResNet-50's
    256 -> 512 1x1/2 conv at 56x56 took 2.98 ms (69 GFLOP/s), a 28x28 input at stride 1 1.77 ms.
    Returns the conv that holds the result."""
    xs = op.input.type.get_shape()  # type: ignore[union-attr]
    strides = list(op.strides.get_values())
    if (list(op.weight_shape()[2:]) != [1, 1] or strides == [1, 1] or any(op.pads.get_values()) or op.tile
            or op.group.value.data != 1 or len(xs) != 4 or min(xs[1:]) < 0):
        return op
    sub = graph.SliceOp(op.input, [0, 0, 0, 0], _whole(xs), [1, 1, *strides])
    conv = graph.Conv2dOp(sub.result, op.weight, op.bias, [1, 1], [0, 0, 0, 0], [1, 1], 1)
    conv.attributes.update(op.attributes)
    ip = InsertPoint.before(op)
    for n in (sub, conv):
        n.location = op.location
        Rewriter.insert_op(n, ip)
    op.result.replace_all_uses_with(conv.result)
    op.detach()
    op.erase()
    return conv


def padded_channels(o: int, cfg) -> int:
    """The output-channel count a group-1 conv with `o` channels computes: the next multiple of
    the vector width when that adds at most half, and of the default panel (two vectors) when
    that adds at most 1/16. The conv rule's panel is a divisor of the channel count, so 1000
    channels ran in 8-lane panels of one vector: SqueezeNet's conv10 (512 -> 1000 at 13x13) took
    2.24 ms at 77 GFLOP/s, as 1024 channels 1.23 ms; 88 -> 96 and 120 -> 128 halved the time too,
    24 -> 32 (a third more work) still cut it by a fifth, 272 -> 288 by 5%."""
    w = cfg.width
    if w < 8:
        return o
    p = -(-o // w) * w
    if 2 * (p - o) > o:
        return o
    wide = max(1, cfg.conv2d.nv) * w  # 1008 channels: one-vector panels, 119 GFLOP/s; 1024: 145
    q = -(-o // wide) * wide
    return q if 16 * (q - o) <= o else p


def _pad_channels(op: graph.Conv2dOp, cfg) -> graph.Conv2dOp:
    """conv(x, W, b) with O output channels the vector width does not divide -> conv(x, W', b')
    with P = padded_channels(O) (W' and b' zero-padded: weight-only, graph-lift-params pads them
    once) followed by a slice of the first O channels, moved after the conv's chain of unary
    elementwise consumers (ReLU, Clip, …: scalars besides) so graph-fuse still fuses that chain
    into the conv; the slice fuses into the next consumer. Returns the conv to pack."""
    o = op.weight_shape()[0]
    xs = op.input.type.get_shape()  # type: ignore[union-attr]
    p = padded_channels(o, cfg)
    if p == o or op.group.value.data != 1 or op.tile or len(xs) != 4:
        return op
    ip = InsertPoint.before(op)
    new: list = []

    def add(n):
        new.append(n)
        Rewriter.insert_op(n, ip)
        return n.results[0]

    w = add(graph.PadOp(op.weight, [0, 0, 0, 0, p - o, 0, 0, 0]))
    b = add(graph.PadOp(op.bias, [0, p - o])) if op.bias is not None else None
    conv = graph.Conv2dOp(op.input, w, b, op.strides.get_values(), op.pads.get_values(),
                          op.dilations.get_values(), 1)
    conv.attributes.update(op.attributes)
    for n in (*new, conv):
        n.location = op.location
    Rewriter.insert_op(conv, ip)
    chain, prev = [], op.result
    for user in _epilogue_chain(op.result):  # the unary prefix: other operands 0-d scalars
        if any(u is not prev and u.type == op.result.type for u in user.operands):
            break  # a residual: it would need padding too
        chain.append(user)
        prev = user.results[0]
    cur_p = _sink_reshape(op.result, chain, conv.result, [])  # (no residual in the chain: nothing reshaped)
    ends = _whole(conv.result.type.get_shape())
    ends[1] = o
    cut = graph.SliceOp(cur_p, [0, 0, 0, 0], ends)
    cut.location = op.location
    Rewriter.insert_op(cut, InsertPoint.after(cur_p.owner))
    _retire(op, chain, cut.result)
    return conv


def _pack_matmul(op: graph.MatMulOp, cfg) -> None:
    """A matmul's weight B (K, N) in the column panels the matmul rule streams (`weight_tile`):
    onnxruntime pre-packs a constant GEMM B at session creation (MlasGemmPackB); the rule
    otherwise copied each kc x nv*W panel of B per call, rows N floats apart (BERT's 128 x 512 x
    2048: a tenth of the kernel's time). Where the rule packs B by default (a static M of several
    register tiles: matmul_weight_panel), for a float32 B computed from params only."""
    from minimlir.passes.loop.schedule.default.matmul import matmul_weight_panel

    a, b = op.lhs.type, op.rhs.type
    if op.tile or not isinstance(a, TensorType) or not isinstance(b, TensorType):
        return
    sa, sb = a.get_shape(), b.get_shape()
    if (len(sb) != 2 or len(sa) < 2 or min(sb) < 0 or sa[-2] < 0 or sa[-1] < 0
            or b.get_element_type() != a.get_element_type() or "f32" != str(b.get_element_type())):
        return
    if not weight_only(op.rhs) or not reads_param(op.rhs):
        return
    (k, n), m = sb, sa[-2]
    tile = matmul_weight_panel(m, k, n, cfg)
    if not tile:
        return
    ip = InsertPoint.before(op)
    w, new_ops = op.rhs, []
    panels = -(-n // tile)
    if panels * tile != n:
        new_ops.append(graph.PadOp(w, [0, 0, 0, panels * tile - n]))
        w = new_ops[-1].result
    new_ops.append(graph.ReshapeOp(w, TensorType(b.get_element_type(), [k, panels, tile])))
    new_ops.append(graph.TransposeOp(new_ops[-1].result, [1, 0, 2]))
    for o in new_ops:
        o.location = op.rhs.owner.location  # type: ignore[union-attr]
        Rewriter.insert_op(o, ip)
    mm = graph.MatMulOp(op.lhs, new_ops[-1].results[0], weight_tile=tile, cols=n)
    mm.location = op.location
    mm.attributes.update(op.attributes)
    Rewriter.insert_op(mm, ip)
    op.result.replace_all_uses_with(mm.result)
    op.detach()
    op.erase()


def _config_for(width: int):
    from minimlir.passes.loop.schedule.default.config import ScheduleConfig

    cfg = ScheduleConfig.for_host()
    return cfg.replace(width=width) if width else cfg


@dataclass(frozen=True)
class GraphPackWeightsPass(ModulePass):
    """Conv weights that are params get the conv kernel's packed layout (OIHW{T}o), matmul weights
    the matmul rule's column panels, as graph ops graph-lift-params runs once at load time.
    `width`: the vector width in f32 lanes (0: the target's, as loop-schedule's)."""

    name = "graph-pack-weights"

    width: int = 0

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from minimlir.passes.loop.schedule.default.conv2d import conv_weight_tile

        cfg = _config_for(self.width)
        for conv in [o for o in op.walk() if isinstance(o, graph.Conv2dOp)]:
            if conv.tile or not isinstance(conv.weight.type, TensorType):
                continue
            if not weight_only(conv.weight):  # computed per call: nothing to do once
                continue
            if not conv.blocked:  # (graph-layout folded a blocked conv's scale; it stays a conv)
                if conv.bias is None or weight_only(conv.bias):
                    conv = fold_scale_shift(conv)  # W*s stays weight-only
                conv = _subsample_pointwise(conv)
                if _as_matmul(conv, cfg):
                    continue
            o, c, _, _ = conv.weight_shape()
            group = conv.group.value.data
            if min(conv.weight.type.get_shape()) < 0 or o % group:
                continue
            if c == 1 and o == group:  # depthwise: the rows rule
                continue
            if not conv.blocked:  # (a blocked conv's channels are whole blocks already)
                conv = _pad_channels(conv, cfg)
            o = conv.weight_shape()[0]
            tile = conv_weight_tile(o // group, cfg)
            if tile:
                _pack(conv, tile)
        for mm in [o for o in op.walk() if isinstance(o, graph.MatMulOp)]:
            _pack_matmul(mm, cfg)
        _fold_reshape_pairs(op)


def _fold_reshape_pairs(module: ModuleOp) -> None:
    """reshape(reshape(x)) back to x's own type -> x: a residual add between two 1x1 convs
    rewritten as matmuls reads the first one's (N, O, H*W) result through (N, O, H, W) and back."""
    erased: set = set()
    for r in [o for o in module.walk() if isinstance(o, graph.ReshapeOp)]:
        if r in erased:
            continue
        inner = r.input.owner
        if isinstance(inner, graph.ReshapeOp) and r.result.type == inner.input.type:
            r.result.replace_all_uses_with(inner.input)
            r.detach()
            r.erase()
            if not inner.result.uses:
                erased.add(inner)
                inner.detach()
                inner.erase()

"""Lower `func.func` / `func.call` / `func.return` to `llvm.func` / `llvm.call` / `llvm.return`.

    func.func @f(%i: index, %x: vector<8xf32>) -> f32      llvm.func @f(%i: i64, %x: vector<8xf32>) -> f32
    func.func private @g(f32) -> f32                   ->  llvm.func @g(f32) -> f32       (external decl)
    %r = func.call @g(%x) : (f32) -> f32                   %r = llvm.call @g(%x) : (f32) -> f32

Linkage: public functions and private declarations are `external`; private definitions
are `internal` (LLVM may inline and drop them). Several results are returned as an
`!llvm.struct<(…)>` (insertvalue / extractvalue), as MLIR does.

Types go through passes/_llvm_common.py. A type with a registered *expander* (memref,
registered by the mem lowering) becomes several arguments; inside the body the old value
is rebuilt with `builtin.unrealized_conversion_cast %ptr, %d0 : !llvm.ptr, i64 to memref<?xf32>`,
and call operands are split with the inverse cast. The mem lowering folds both. Argument
attributes (`llvm.noalias`, …) of an expanded argument go to its first part (the pointer).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func, llvm
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    ModuleOp,
    UnitAttr,
    UnrealizedConversionCastOp,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint, Rewriter

from minimlir.dialects import llvm_ext as ext
from minimlir.dialects.loop import KERNEL_ATTR
from minimlir.passes.to_llvm._common import (
    convert_block_args,
    convert_type,
    expand_type,
    from_llvm,
)
from minimlir.passes.to_llvm._conversion import convert


def result_type(outputs: tuple[Attribute, ...] | list[Attribute]) -> Attribute:
    """LLVM return type of a function with `outputs`: void, the one type, or a struct."""
    if not outputs:
        return llvm.LLVMVoidType()
    converted = [convert_type(t) for t in outputs]
    if len(converted) == 1:
        return converted[0]
    return llvm.LLVMStructType.from_type_list(converted)


def _expand_entry_args(block: Block) -> None:
    """Replace each entry argument with a registered 1:N expansion by its N parts."""
    for arg in list(block.args):
        parts = expand_type(arg.type)
        if len(parts) == 1:
            continue
        index = arg.index
        new_args = [block.insert_arg(t, index + k) for k, t in enumerate(parts)]
        cast = UnrealizedConversionCastOp.get(new_args, [arg.type])
        Rewriter.insert_op(cast, InsertPoint.at_start(block))
        arg.replace_all_uses_with(cast.results[0])
        block.erase_arg(arg)


def _arg_attrs(op: func.FuncOp) -> ArrayAttr[DictionaryAttr] | None:
    if op.arg_attrs is None:
        return None
    attrs: list[DictionaryAttr] = []
    for t, d in zip(op.function_type.inputs.data, op.arg_attrs.data, strict=True):
        n = len(expand_type(t))
        attrs.append(d)
        attrs.extend(DictionaryAttr({}) for _ in range(n - 1))
    if all(not d.data for d in attrs):
        return None
    return ArrayAttr(attrs)


class LowerFunc(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.FuncOp, rewriter: PatternRewriter) -> None:
        inputs = [p for t in op.function_type.inputs.data for p in expand_type(t)]
        fn_type = llvm.LLVMFunctionType(inputs, result_type(op.function_type.outputs.data))
        is_decl = not op.body.blocks
        private = op.sym_visibility is not None and op.sym_visibility.data == "private"
        linkage = "internal" if private and not is_decl else "external"
        body = rewriter.move_region_contents_to_new_regions(op.body)
        if not is_decl:
            blocks = list(body.blocks)
            _expand_entry_args(blocks[0])
            for block in blocks:
                convert_block_args(block)
        new = llvm.FuncOp(
            op.sym_name.data,
            fn_type,
            linkage=llvm.LinkageAttr(linkage),
            body=body if not is_decl else Region([]),
        )
        attrs = _arg_attrs(op)
        if attrs is not None:
            new.arg_attrs = attrs
        if KERNEL_ATTR in op.attributes and not is_decl:
            # a kernel stays a call (LLVM `noinline`; its parallel bodies still inline into it):
            # inlined, its loops were optimized in the caller's context, so the same kernel ran at
            # another speed depending on whether LLVM inlined it, which a split compile decides by
            # the part it lands in, and a tuning candidate (the kernel and a main calling it)
            # always did: SqueezeNet's tuned classifier conv measured 6% faster than the default
            # alone and ran 53% slower in the model, where it was not inlined
            new.no_inline = UnitAttr()
        for name, value in op.attributes.items():
            if name.startswith("llvm."):
                new.attributes[name] = value
        rewriter.replace(op, [new], [])


def _call_operands(args, before: Operation, rewriter: PatternRewriter) -> list[SSAValue]:
    out: list[SSAValue] = []
    for a in args:
        parts = expand_type(a.type)
        if len(parts) == 1 and parts[0] == a.type:
            out.append(a)
            continue
        owner = a.owner
        if isinstance(owner, UnrealizedConversionCastOp) and list(owner.inputs.types) == parts:
            out.extend(owner.inputs)
            continue
        cast = UnrealizedConversionCastOp.get([a], parts)
        rewriter.insert(cast, InsertPoint.before(before))
        out.extend(cast.results)
    return out


class LowerCall(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.CallOp, rewriter: PatternRewriter) -> None:
        args = _call_operands(op.arguments, op, rewriter)
        ret = result_type(op.result_types)
        call = llvm.CallOp(
            op.callee.string_value(),
            *args,
            return_type=None if isinstance(ret, llvm.LLVMVoidType) else ret,
        )
        new_ops: list[Operation] = [call]
        results: list[SSAValue] = []
        if len(op.results) == 1:
            results = [call.results[0]]
        elif len(op.results) > 1:
            for k, r in enumerate(op.results):
                ev = llvm.ExtractValueOp(
                    DenseArrayBase.from_list(i64, [k]), call.results[0], convert_type(r.type)
                )
                new_ops.append(ev)
                results.append(ev.results[0])
        casts, values = from_llvm(results, [r.type for r in op.results])
        rewriter.replace(op, new_ops + casts, values)


class LowerReturn(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.ReturnOp, rewriter: PatternRewriter) -> None:
        from minimlir.passes.to_llvm._common import operands_to_llvm

        values = operands_to_llvm(op.arguments, rewriter, op)
        if len(values) <= 1:
            rewriter.replace(op, [llvm.ReturnOp(values[0] if values else None)], [])
            return
        struct_t = llvm.LLVMStructType.from_type_list([v.type for v in values])
        ops: list[Operation] = [undef := llvm.UndefOp(struct_t)]
        acc: SSAValue = undef.results[0]
        for k, v in enumerate(values):
            ins = llvm.InsertValueOp(DenseArrayBase.from_list(i64, [k]), acc, v)
            ops.append(ins)
            acc = ins.results[0]
        rewriter.replace(op, [*ops, llvm.ReturnOp(acc)], [])


@dataclass(frozen=True)
class ConvertFuncToLlvmPass(ModulePass):
    """func -> llvm (scalar/vector/index signatures; memref through registered expanders)."""

    name = "convert-func-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        ext.load_into(ctx)
        # calls, then returns, then the functions (whose bodies move): three phases of one walk
        phases = [{func.CallOp: LowerCall()}, {func.ReturnOp: LowerReturn()}, {func.FuncOp: LowerFunc()}]
        convert(op, phases, illegal=("func",))

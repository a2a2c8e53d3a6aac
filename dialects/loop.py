"""The `loop` dialect: kernels as loop nests around named compute blocks (TensorIR analogue).

    func.func @add(%a: memref<?xf32>, %b: memref<?xf32>, %c: memref<?xf32>)
        attributes {loop.kernel} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %n = mem.dim %a, 0 : memref<?xf32>
      loop.for %i = %c0 to %n step %c1 parallel {
        loop.block "add" (%vi = %i) [spatial] {
          ...
        }
      }
      func.return
    }

A kernel is a `func.func` carrying the unit attribute `loop.kernel`: memref arguments only (inputs
first, outputs last), no results. A `loop.block` binds its iteration variables to affine
expressions of the enclosing loop variables; every iteration domain starts at 0. A block with a
reduce variable may have an `init` region, run for a spatial point before its first body
instance (when every reduce variable is 0).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    FunctionType,
    IndexType,
    IntegerAttr,
    MemRefType,
    StringAttr,
    UnitAttr,
    I64,
)
from xdsl.ir import Attribute, Block, Dialect, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import (
    HasParent,
    IsTerminator,
    Pure,
    RecursiveMemoryEffect,
    SingleBlockImplicitTerminator,
)
from xdsl.utils.exceptions import VerifyException

KERNEL_ATTR = "loop.kernel"
# on a mem.alloca: scratch whose contents never outlive one iteration of the loops around its
# uses (a schedule's accumulator tile or cache_read copy: written before every read), so
# loop-outline-parallel gives each thread its own, even when several parallel loops use it
PRIVATE_ATTR = "loop.private"
# on a kernel: it is exactly `out = concat(inputs..., axis)` (set by graph-legalize on a concat that
# is not fused with other ops), so mem-concat-in-place may let the inputs' producers write their
# parts of `out` instead of calling it
CONCAT_AXIS_ATTR = "loop.concat_axis"
LOOP_KINDS = ("serial", "parallel", "vectorize", "unroll")
ITER_KINDS = ("spatial", "reduce")


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Terminator of loop.for and loop.block regions (implicit in the custom syntax)."""

    name = "loop.yield"

    traits = lazy_traits_def(lambda: (IsTerminator(), Pure(), HasParent(ForOp, BlockOp)))
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__()


def _ensure_yield(region: Region) -> None:
    """Give every (non-empty) block of `region` a trailing loop.yield if it has no terminator."""
    for block in region.blocks:
        last = block.last_op
        if last is None or not last.has_trait(IsTerminator, value_if_unregistered=False):
            block.add_op(YieldOp())


def _print_body(printer: Printer, region: Region) -> None:
    """`{ … }` without the entry block's arguments (the op's syntax names them) or its loop.yield."""
    printer.print_region(
        region, print_entry_block_args=False, print_empty_block=False, print_block_terminators=False
    )


def _as_region(body: Region | Block | Sequence[Operation] | None, nargs: int) -> Region:
    if body is None:
        return Region(Block(arg_types=[IndexType()] * nargs))
    if isinstance(body, Region):
        return body
    if isinstance(body, Block):
        return Region(body)
    return Region(Block(list(body), arg_types=[IndexType()] * nargs))


@irdl_op_definition
class ForOp(IRDLOperation):
    """Run the body for %i = lb, lb+step, ... < ub; `kind` says how (serial/parallel/...)."""

    name = "loop.for"

    lb = operand_def(IndexType)
    ub = operand_def(IndexType)
    step = operand_def(IndexType)
    kind = prop_def(StringAttr, default_value=StringAttr("serial"))
    unroll_factor = opt_prop_def(IntegerAttr[I64])
    body = region_def("single_block")

    traits = traits_def(SingleBlockImplicitTerminator(YieldOp), RecursiveMemoryEffect())

    def __init__(
        self,
        lb: SSAValue | Operation,
        ub: SSAValue | Operation,
        step: SSAValue | Operation,
        body: Region | Block | Sequence[Operation] | None = None,
        kind: str = "serial",
        unroll_factor: int | None = None,
    ):
        """`body=None` makes an empty body block with the induction variable as argument."""
        props: dict[str, Attribute] = {"kind": StringAttr(kind)}
        if unroll_factor is not None:
            props["unroll_factor"] = IntegerAttr(unroll_factor, 64)
        region = _as_region(body, 1)
        super().__init__(operands=[lb, ub, step], regions=[region], properties=props)
        _ensure_yield(self.body)

    @property
    def induction_var(self) -> SSAValue:
        return self.body.block.args[0]

    def verify_(self) -> None:
        block = self.body.block
        if len(block.args) != 1 or not isinstance(block.args[0].type, IndexType):
            raise VerifyException(
                "body must have exactly one block argument of type index (the induction variable)"
            )
        if self.kind.data not in LOOP_KINDS:
            raise VerifyException(
                f"loop kind must be one of {', '.join(LOOP_KINDS)}, got '{self.kind.data}'"
            )
        if self.unroll_factor is not None:
            if self.kind.data != "unroll":
                raise VerifyException(
                    f"unroll_factor is only allowed on 'unroll' loops, not '{self.kind.data}'"
                )
            if self.unroll_factor.value.data < 1:
                raise VerifyException(
                    f"unroll_factor must be >= 1, got {self.unroll_factor.value.data}"
                )
        _verify_enclosing_kernel(self)

    def print(self, printer: Printer):
        printer.print_string(" ")
        printer.print_ssa_value(self.induction_var)
        printer.print_string(" = ")
        printer.print_ssa_value(self.lb)
        printer.print_string(" to ")
        printer.print_ssa_value(self.ub)
        printer.print_string(" step ")
        printer.print_ssa_value(self.step)
        if self.kind.data != "serial":
            printer.print_string(f" {self.kind.data}")
        if self.unroll_factor is not None:
            if self.kind.data != "unroll":
                printer.print_string(" unroll_factor")  # invalid IR, still printable
            printer.print_string(f"({self.unroll_factor.value.data})")
        printer.print_string(" ")
        _print_body(printer, self.body)
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> ForOp:
        indvar = parser.parse_argument(expect_type=False)
        parser.parse_punctuation("=")
        index = IndexType()
        lb = parser.parse_operand(index)
        parser.parse_keyword("to")
        ub = parser.parse_operand(index)
        parser.parse_keyword("step")
        step = parser.parse_operand(index)
        kind = "serial"
        factor: int | None = None
        pos = parser.pos
        word = parser.parse_optional_identifier()
        if word is not None:
            if word not in LOOP_KINDS:
                parser.raise_error(
                    f"unknown loop kind '{word}', expected {', '.join(LOOP_KINDS)} or '{{'",
                    pos,
                    parser.pos,
                )
            kind = word
        if kind == "unroll" and parser.parse_optional_punctuation("(") is not None:
            factor = parser.parse_integer(allow_boolean=False, allow_negative=False)
            parser.parse_punctuation(")")
        body = parser.parse_region((indvar.resolve(IndexType()),))
        attrs = parser.parse_optional_attr_dict()
        op = cls(lb, ub, step, body, kind=kind, unroll_factor=factor)
        op.attributes |= attrs
        return op


@irdl_op_definition
class BlockOp(IRDLOperation):
    """A named compute block: its body runs once per point of its iteration domain."""

    name = "loop.block"

    bindings = var_operand_def(IndexType)
    block_name = prop_def(StringAttr)
    iter_kinds = prop_def(ArrayAttr[StringAttr])
    body = region_def("single_block")
    init = region_def()  # zero blocks: no init; else one block (checked in verify_)

    traits = traits_def(SingleBlockImplicitTerminator(YieldOp), RecursiveMemoryEffect())

    def __init__(
        self,
        block_name: str,
        bindings: Sequence[SSAValue | Operation],
        iter_kinds: Sequence[str],
        body: Region | Block | Sequence[Operation] | None = None,
        init: Region | Block | Sequence[Operation] | None = None,
    ):
        """`body=None` makes an empty body whose arguments are the iteration variables;
        `init=None` means no init region (pass `Region()` explicitly for the same effect)."""
        n = len(bindings)
        init_region = Region() if init is None else _as_region(init, n)
        super().__init__(
            operands=[list(bindings)],
            regions=[_as_region(body, n), init_region],
            properties={
                "block_name": StringAttr(block_name),
                "iter_kinds": ArrayAttr([StringAttr(k) for k in iter_kinds]),
            },
        )
        _ensure_yield(self.body)
        _ensure_yield(self.init)

    @property
    def iter_vars(self) -> tuple[SSAValue, ...]:
        """The iteration variables (body block arguments), one per binding."""
        return tuple(self.body.block.args)

    @property
    def kinds(self) -> list[str]:
        return [k.data for k in self.iter_kinds.data]

    @property
    def has_init(self) -> bool:
        return bool(self.init.blocks)

    def binding_of(self, iter_var: SSAValue) -> SSAValue:
        """The binding (an affine index of the outer loop vars) of a body/init iteration var."""
        for region in (self.body, self.init):
            if region.blocks and iter_var in region.block.args:
                return self.bindings[region.block.args.index(iter_var)]
        raise ValueError(
            f"{iter_var} is not an iteration variable of block '{self.block_name.data}'"
        )

    def verify_(self) -> None:
        name = self.block_name.data
        if not name:
            raise VerifyException("block name must not be empty")
        kinds = self.kinds
        for k in kinds:
            if k not in ITER_KINDS:
                raise VerifyException(
                    f"block '{name}': iteration kind must be 'spatial' or 'reduce', got '{k}'"
                )
        n = len(self.bindings)
        if len(kinds) != n:
            raise VerifyException(
                f"block '{name}': {n} binding(s) but {len(kinds)} iteration kind(s)"
            )
        if len(self.init.blocks) > 1:
            raise VerifyException(f"block '{name}': init region must have at most one block")
        for label, region in (("body", self.body), ("init", self.init)):
            if not region.blocks:
                continue
            args = region.block.args
            if len(args) != n or any(not isinstance(a.type, IndexType) for a in args):
                raise VerifyException(
                    f"block '{name}': {label} region must have {n} index argument(s), one per "
                    f"binding, got {len(args)}"
                )
        if self.has_init and "reduce" not in kinds:
            raise VerifyException(
                f"block '{name}': an init region needs at least one 'reduce' iteration variable"
            )
        _verify_enclosing_kernel(self)

    def print(self, printer: Printer):
        printer.print_string(" ")
        printer.print_string_literal(self.block_name.data)
        printer.print_string(" (")
        args = self.body.block.args
        for k, (arg, val) in enumerate(zip(args, self.bindings)):
            if k:
                printer.print_string(", ")
            printer.print_ssa_value(arg)
            printer.print_string(" = ")
            printer.print_ssa_value(val)
        printer.print_string(") [")
        printer.print_string(", ".join(self.kinds))
        printer.print_string("] ")
        _print_body(printer, self.body)
        if self.has_init:
            # The init region's arguments are other SSA values that carry the same meaning:
            # print them under the body's names (the syntax declares the names once).
            names = printer._ssa_values  # pyright: ignore[reportPrivateUsage]
            for body_arg, init_arg in zip(args, self.init.block.args):
                names[init_arg] = names[body_arg]
            printer.print_string(" init ")
            _print_body(printer, self.init)
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> BlockOp:
        block_name = parser.parse_str_literal()

        def parse_binding():
            arg = parser.parse_argument(expect_type=False)
            parser.parse_punctuation("=")
            return arg, parser.parse_operand(IndexType())

        pairs = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parse_binding)
        kinds = parser.parse_comma_separated_list(
            parser.Delimiter.SQUARE, lambda: parser.parse_identifier()
        )
        args = [a.resolve(IndexType()) for a, _ in pairs]
        body = parser.parse_region(args)
        init = None
        if parser.parse_optional_keyword("init") is not None:
            init = parser.parse_region([a.resolve(IndexType()) for a, _ in pairs])
        attrs = parser.parse_optional_attr_dict()
        op = cls(block_name, [v for _, v in pairs], kinds, body, init)
        op.attributes |= attrs
        return op


# --------------------------------------------------------------------------------------------
# Kernels: func.func marked with the unit attribute `loop.kernel`.


def is_kernel(op: Operation) -> bool:
    """Is `op` a func.func marked `loop.kernel`?"""
    return isinstance(op, func.FuncOp) and KERNEL_ATTR in op.attributes


def make_kernel(
    name: str, input_types: Sequence[Attribute], output_types: Sequence[Attribute]
) -> func.FuncOp:
    """An empty kernel `@name(inputs..., outputs...)` whose body holds only `func.return`.

    Build into it with `Builder.at_start(kernel.body.block)`; `kernel.args` are the buffers.
    """
    arg_types = [*input_types, *output_types]
    kernel = func.FuncOp(name, FunctionType.from_lists(arg_types, []))
    kernel.body.block.add_op(func.ReturnOp())
    kernel.attributes[KERNEL_ATTR] = UnitAttr()
    verify_kernel(kernel)
    return kernel


def verify_kernel(op: func.FuncOp) -> None:
    """Raise VerifyException unless `op` is a well-formed kernel: memref args only, no results."""
    name = op.sym_name.data
    for k, t in enumerate(op.function_type.inputs.data):
        if not isinstance(t, MemRefType):
            raise VerifyException(
                f"kernel @{name}: argument #{k} must be a memref, got {t}"
            )
    if op.function_type.outputs.data:
        raise VerifyException(
            f"kernel @{name} must not return results (outputs are written to its last "
            f"memref arguments), got {len(op.function_type.outputs.data)}"
        )


def verify_kernels(root: Operation) -> None:
    """verify_kernel on every loop.kernel function under `root`."""
    for op in root.walk():
        if is_kernel(op):
            verify_kernel(op)  # type: ignore[arg-type]


def _verify_enclosing_kernel(op: Operation) -> None:
    # xDSL has no hook to verify a dialect attribute on a foreign op, so the outermost
    # loop.for / loop.block of a kernel checks the kernel's signature.
    parent = op.parent_op()
    if parent is not None and is_kernel(parent):
        verify_kernel(parent)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# Navigation helpers for schedule primitives and lowerings.


def enclosing_loops(op: Operation, stop: Operation | None = None) -> list[ForOp]:
    """The loop.for ops strictly enclosing `op` (below `stop`, if given), outermost first."""
    loops: list[ForOp] = []
    parent = op.parent_op()
    while parent is not None and parent is not stop:
        if isinstance(parent, ForOp):
            loops.append(parent)
        parent = parent.parent_op()
    loops.reverse()
    return loops


def block_loops(block: BlockOp) -> list[ForOp]:
    """The loops enclosing a compute block, outermost first."""
    return enclosing_loops(block)


def find_block(root: Operation, name: str) -> BlockOp | None:
    """The first loop.block named `name` under (or equal to) `root`, or None."""
    for op in root.walk():
        if isinstance(op, BlockOp) and op.block_name.data == name:
            return op
    return None


def blocks_of(root: Operation) -> list[BlockOp]:
    """Every loop.block under `root`, in program order."""
    return [op for op in root.walk() if isinstance(op, BlockOp)]


# What legalization knew about a compute block, stamped on it as attributes so passes match them
# instead of block names or argument counts:
#     loop.block "conv2d" (...) [...] {...} {kind = "conv2d", groups = 32 : i64, depthwise,
#                                            strides = [1 : i64, 1 : i64], dilations = [...]}
KIND_ATTR = "kind"
STAMP_PARAMS = ("batch", "groups", "depthwise", "strides", "dilations", "block")


def stamp_kind(blk: BlockOp, kind: str, **params: int | bool | Sequence[int]) -> BlockOp:
    """Record on `blk` that it computes `kind` with `params` (ints, int lists; True is a unit attr)."""
    assert set(params) <= set(STAMP_PARAMS), f"declare new stamp parameters in STAMP_PARAMS: {params}"
    blk.attributes[KIND_ATTR] = StringAttr(kind)
    for key, v in params.items():
        if v is True:
            blk.attributes[key] = UnitAttr()
        elif isinstance(v, bool):
            continue
        elif isinstance(v, int):
            blk.attributes[key] = IntegerAttr(v, 64)
        else:
            blk.attributes[key] = ArrayAttr([IntegerAttr(int(x), 64) for x in v])
    return blk


def unstamp(blk: BlockOp) -> None:
    """Remove what stamp_kind recorded (it is derived from the block's structure)."""
    for key in (KIND_ATTR, *STAMP_PARAMS):
        blk.attributes.pop(key, None)


def block_kind(blk: BlockOp) -> str | None:
    """The kind legalization stamped on `blk` (stamp_kind), else None."""
    a = blk.attributes.get(KIND_ATTR)
    return a.data if isinstance(a, StringAttr) else None


def blocks_of_kind(root: Operation, kind: str) -> list[BlockOp]:
    """The blocks under `root` stamped `kind`, in program order."""
    return [b for b in blocks_of(root) if block_kind(b) == kind]


def int_param(blk: BlockOp, key: str, default: int) -> int:
    a = blk.attributes.get(key)
    return a.value.data if isinstance(a, IntegerAttr) else default


def loops_of(kernel: Operation) -> list[ForOp]:
    """Every loop.for under `kernel`, in program (pre-)order: outer loops before inner ones."""
    return [op for op in kernel.walk() if isinstance(op, ForOp)]


Loop = Dialect("loop", [ForOp, BlockOp, YieldOp])

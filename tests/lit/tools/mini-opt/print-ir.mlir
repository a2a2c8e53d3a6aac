// IR dumps go to stderr, in mlir-opt's format; the result still goes to stdout.
// RUN: mini-opt %s -p 'func.func(cse),canonicalize' --print-ir-after-all 2>&1 >/dev/null | filecheck %s --check-prefix=ALL
// ALL:      // -----// IR Dump After cse //----- //
// ALL-NEXT: func.func @dup(
// ALL:      // -----// IR Dump After cse //----- //
// ALL-NEXT: func.func @clean(
// ALL:      // -----// IR Dump After canonicalize //----- //
// ALL-NEXT: builtin.module {

// RUN: mini-opt %s -p 'func.func(cse),canonicalize' --print-ir-before=cse 2>&1 >/dev/null | filecheck %s --check-prefix=BEFORE
// BEFORE:      // -----// IR Dump Before cse //----- //
// BEFORE-NEXT: func.func @dup(
// BEFORE-COUNT-2: arith.addi
// BEFORE-NOT:  IR Dump After
// BEFORE-NOT:  IR Dump Before canonicalize

// RUN: mini-opt %s -p 'func.func(cse),canonicalize' --mlir-print-ir-after=canonicalize,cse 2>&1 >/dev/null | filecheck %s --check-prefix=AFTER
// AFTER-COUNT-2: IR Dump After cse
// AFTER:         IR Dump After canonicalize

// Only @dup changes under cse, and canonicalize changes nothing after it.
// RUN: mini-opt %s -p 'func.func(cse),canonicalize' --print-ir-after-change 2>&1 >/dev/null | filecheck %s --check-prefix=CHANGE
// CHANGE:      // -----// IR Dump After cse //----- //
// CHANGE-NEXT: func.func @dup(
// CHANGE-NOT:  IR Dump

// RUN: not mini-opt %s -p cse --print-ir-after=cez 2>&1 | filecheck %s --check-prefix=BADNAME
// BADNAME: error: --print-ir-after: unknown pass 'cez'; did you mean {{.*}}'cse'?

func.func @dup(%a: i32) -> i32 {
  %0 = arith.addi %a, %a : i32
  %1 = arith.addi %a, %a : i32
  %2 = arith.muli %0, %1 : i32
  func.return %2 : i32
}

func.func @clean() {
  func.return
}

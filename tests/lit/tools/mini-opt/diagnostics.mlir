// Errors are `file:line:col: error: message`, the source line and a caret; exit code 1.
// RUN: not mini-opt %s --split-input-file 2>&1 | filecheck %s

// Parse error.
// CHECK:      diagnostics.mlir:[[# @LINE + 4]]:26: error: {{.*}}
// CHECK-NEXT:   %0 = arith.addi %a, %a i32
// CHECK-NEXT:                          ^
func.func @parse_error(%a: i32) {
  %0 = arith.addi %a, %a i32
  func.return
}

// -----

// Verifier error, located at the op's name, as mlir-opt does.
// CHECK:      diagnostics.mlir:[[# @LINE + 4]]:8: error: 'arith.addi' op {{.*}}
// CHECK-NEXT:   %0 = "arith.addi"(%a) : (i32) -> i32
// CHECK-NEXT:        ^
func.func @verify_error(%a: i32) {
  %0 = "arith.addi"(%a) : (i32) -> i32
  func.return
}

// -----

// An explicit location wins over the position in this file.
// CHECK:      model.onnx:3:4: error: 'arith.addi' op
func.func @named_loc(%a: i32) {
  %0 = "arith.addi"(%a) : (i32) -> i32 loc("node"("model.onnx":3:4))
  func.return
}

// -----

// A location without a position is printed as MLIR prints it.
// CHECK:      loc("just_a_name"): error: 'arith.addi' op
func.func @name_only(%a: i32) {
  %0 = "arith.addi"(%a) : (i32) -> i32 loc("just_a_name")
  func.return
}

// CHECK-NOT: Traceback

// Pass diagnostics: remarks and warnings (with notes) print and exit 0, an error exits 1.
// RUN: mini-opt %S/Inputs/two-funcs.mlir --load-pass-plugin=%S/Inputs/test_passes.py -p test-diagnose 2>&1 \
// RUN:   | filecheck %s --check-prefix=REMARK
// REMARK:      two-funcs.mlir:1:1: remark: function @first has 2 ops
// REMARK-NEXT: func.func @first(%a: i32) -> i32 {
// REMARK-NEXT: ^
// REMARK:      two-funcs.mlir:6:1: remark: function @second has 1 ops
// REMARK:      func.func @first

// RUN: mini-opt %S/Inputs/two-funcs.mlir --load-pass-plugin=%S/Inputs/test_passes.py -p 'test-diagnose{severity=warning}' 2>&1 \
// RUN:   | filecheck %s --check-prefix=WARNING
// WARNING:      two-funcs.mlir:1:1: warning: function @first has 2 ops
// WARNING:      two-funcs.mlir:3:3: note: its terminator is here
// WARNING-NEXT:   func.return %0 : i32
// WARNING-NEXT:   ^

// RUN: not mini-opt %S/Inputs/two-funcs.mlir --load-pass-plugin=%S/Inputs/test_passes.py -p 'func.func(test-diagnose{severity=error})' 2>&1 \
// RUN:   | filecheck %s --check-prefix=PASSERR
// PASSERR:     two-funcs.mlir:1:1: error: function @first has 2 ops
// PASSERR-NOT: builtin.module

// A DiagnosticException without an op still reports cleanly.
// RUN: not mini-opt %S/Inputs/two-funcs.mlir --load-pass-plugin=%S/Inputs/test_passes.py -p 'test-diagnose{severity=plain-error}' 2>&1 \
// RUN:   | filecheck %s --check-prefix=PLAIN
// PLAIN: loc(unknown): error: function @first has 2 ops

// A pass that leaves invalid IR: the verifier error, and which pass produced it.
// RUN: not mini-opt %S/Inputs/two-funcs.mlir --load-pass-plugin=%S/Inputs/test_passes.py -p 'cse,test-break-ir' 2>&1 \
// RUN:   | filecheck %s --check-prefix=BROKEN
// BROKEN:      two-funcs.mlir:1:1: error: 'arith.constant' op
// BROKEN:      two-funcs.mlir:1:1: note: the IR after pass 'test-break-ir' does not verify

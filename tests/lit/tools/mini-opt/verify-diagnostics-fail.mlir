// Unmatched expectations and unexpected diagnostics fail with mlir-opt's messages (exit 1).
// RUN: not mini-opt %s --split-input-file --verify-diagnostics 2>&1 | filecheck %s

// CHECK-DAG: verify-diagnostics-fail.mlir:[[# @LINE + 3]]:8: error: unexpected error: 'arith.addi' op Expected 2 operands, but got 1
// CHECK-DAG: verify-diagnostics-fail.mlir:[[# @LINE + 3]]:6: error: expected error "not the message" was not produced
func.func @wrong_message(%a: i32) {
  %0 = "arith.addi"(%a) : (i32) -> i32
  // expected-error @-1 {{not the message}}
  func.return
}

// -----

// CHECK-DAG: verify-diagnostics-fail.mlir:[[# @LINE + 2]]:6: error: expected error "wrong line" was not produced
func.func @wrong_line(%a: i32) {
  // expected-error @+2 {{wrong line}}
  %0 = "arith.addi"(%a) : (i32) -> i32
  func.return
}
// CHECK-DAG: verify-diagnostics-fail.mlir:[[# @LINE - 3]]:8: error: unexpected error: 'arith.addi' op

// -----

// CHECK-DAG: verify-diagnostics-fail.mlir:[[# @LINE + 2]]:6: error: expected remark "never emitted" was not produced
func.func @nothing_wrong() {
  // expected-remark @+1 {{never emitted}}
  func.return
}

// -----

// CHECK-DAG: verify-diagnostics-fail.mlir:[[# @LINE + 2]]:3: error: unexpected error: unknown operation 'func.nope'
func.func @parse_error() {
  func.nope
}

// Remarks from passes must be expected too.
// RUN: not mini-opt %S/Inputs/two-funcs.mlir --verify-diagnostics --load-pass-plugin=%S/Inputs/test_passes.py \
// RUN:   -p test-diagnose 2>&1 | filecheck %s --check-prefix=REMARK
// REMARK: two-funcs.mlir:1:1: error: unexpected remark: function @first has 2 ops
// REMARK: two-funcs.mlir:6:1: error: unexpected remark: function @second has 1 ops

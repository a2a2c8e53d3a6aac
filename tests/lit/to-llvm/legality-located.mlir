// RUN: not mini-opt %s -p convert-arith-to-llvm 2>&1 | filecheck %s --check-prefix=ARITH
// RUN: not mini-opt %s -p convert-math-to-llvm 2>&1 | filecheck %s --check-prefix=MATH

// The conversion driver's one legality check: an op that no pattern handles is reported at its
// own location, as mlir-opt does (file:line:col), not as a bare message.

func.func @unsupported(%a: i32, %b: i32) -> i32 {
  // ARITH: legality-located.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: failed to legalize operation 'arith.addui_extended'
  %sum, %overflow = arith.addui_extended %a, %b : i32, i1
  // MATH: legality-located.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: failed to legalize operation 'math.ctlz'
  %z = math.ctlz %sum : i32
  func.return %z : i32
}

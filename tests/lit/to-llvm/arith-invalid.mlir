// RUN: not mini-opt %s -p convert-arith-to-llvm 2>&1 | filecheck %s

// addui_extended has no lowering: the legality check names it.
// CHECK: failed to legalize operation 'arith.addui_extended'
func.func @unsupported(%a: i32, %b: i32) -> i32 {
  %sum, %overflow = arith.addui_extended %a, %b : i32, i1
  func.return %sum : i32
}

// Parsed ops remember where they came from, but the locations are only printed on request.
// RUN: mini-opt %s | filecheck %s --check-prefix=PLAIN
// RUN: mini-opt %s --mlir-print-debuginfo | filecheck %s
// RUN: mini-opt %s --print-debuginfo | filecheck %s

// PLAIN-NOT: loc(
// CHECK-LABEL: func.func @f
// CHECK-NEXT:    %{{.*}} = arith.constant 1 : i32 loc("{{.*}}debuginfo.mlir":[[# @LINE + 4]]:8)
// CHECK-NEXT:    %{{.*}} = arith.constant 2 : i32 loc("node"("model.onnx":3:4))
// CHECK-NEXT:    func.return loc("{{.*}}debuginfo.mlir":[[# @LINE + 4]]:3)
func.func @f() {
  %0 = arith.constant 1 : i32
  %1 = arith.constant 2 : i32 loc("node"("model.onnx":3:4))
  func.return
}

// RUN: mini-opt %s -p 'graph-bufferize{max-inline-elements=2}' --verify-diagnostics | filecheck %s

// Above max-inline-elements a constant still works, but it is a heap buffer written with one
// store per element on every call, right where it was: the pass warns. A big splat is just a fill.
// CHECK-LABEL: func.func @large_constant
// CHECK-SAME:    () -> memref<3xf32> {
// CHECK-NEXT:    %[[S:.*]] = mem.alloc() : memref<8xf32>
// CHECK-NEXT:    %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    mem.fill %[[Z]], %[[S]] : f32, memref<8xf32>
// CHECK-NEXT:    mem.dealloc %[[S]] : memref<8xf32>
// CHECK-NEXT:    %[[C:.*]] = mem.alloc() : memref<3xf32>
// CHECK-COUNT-3: arith.constant
// CHECK-COUNT-3: mem.store
// CHECK-NEXT:    %[[R:.*]] = mem.alloc() {mem.result_slot = 0 : i64} : memref<3xf32>
// CHECK-NEXT:    mem.copy %[[C]], %[[R]]
// CHECK-NEXT:    mem.dealloc %[[C]] : memref<3xf32>
// CHECK-NEXT:    func.return %[[R]] : memref<3xf32>
func.func @large_constant() -> tensor<3xf32> {
  %s = graph.constant dense<0.0> : tensor<8xf32>
  // expected-warning @+1 {{graph.constant of 3 elements is written with 3 stores on every call (more than max-inline-elements=2); make it a graph.param}}
  %c = graph.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  func.return %c : tensor<3xf32>
}

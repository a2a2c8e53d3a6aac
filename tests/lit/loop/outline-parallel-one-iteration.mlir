// RUN: mini-opt %s -p loop-outline-parallel | filecheck %s

// A parallel loop of one iteration (a matmul's single row block) is not outlined: no fork-join,
// the calling thread runs it. A parallel loop nested in it is outlined instead.
// CHECK-LABEL: builtin.module attributes {loop.parallel_bodies = [@k__par0]}
// CHECK-LABEL: func.func private @k
// CHECK:         loop.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:      func.call @k__par0
// CHECK-LABEL: func.func private @k__par0
// CHECK-SAME:    attributes {loop.parallel_body}
func.func private @k(%x: memref<4x40xf32>, %y: memref<4x40xf32>) attributes {loop.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c40 = arith.constant 40 : index
  loop.for %b = %c0 to %c1 step %c1 parallel {
    loop.for %i = %c0 to %c4 step %c1 parallel {
      loop.for %j = %c0 to %c40 step %c1 {
        loop.block "copy" (%vi = %i, %vj = %j) [spatial, spatial] {
          %v = mem.load %x[%vi, %vj] : memref<4x40xf32> -> f32
          mem.store %v, %y[%vi, %vj] : f32, memref<4x40xf32>
        }
      }
    }
  }
  func.return
}

// RUN: mini-opt %s -p loop-outline-parallel | filecheck %s

// The parallel loop becomes one call over the whole range (lb, ub, step, captured buffers);
// the constant is cloned, the private accumulator is cloned (one per thread), buffers are noalias.
// CHECK-LABEL: builtin.module attributes {loop.parallel_bodies = [@k__par0]}
// CHECK-LABEL: func.func private @k
// CHECK-SAME:    (%[[X:.*]]: memref<?x40xf32>, %[[Y:.*]]: memref<?x40xf32>)
// CHECK-NOT:     mem.alloca
// CHECK:         %[[N:.*]] = mem.dim %[[X]], 0 : memref<?x40xf32>
// CHECK-NEXT:    func.call @k__par0(%{{.*}}, %[[N]], %{{.*}}, %[[X]], %[[Y]]) : (index, index, index, memref<?x40xf32>, memref<?x40xf32>) -> ()
// CHECK-NEXT:    func.return
// CHECK-LABEL: func.func private @k__par0
// CHECK-SAME:    (%[[LO:.*]]: index, %[[HI:.*]]: index, %[[ST:.*]]: index, %{{.*}}: memref<?x40xf32> {llvm.noalias}, %{{.*}}: memref<?x40xf32> {llvm.noalias})
// CHECK-SAME:    attributes {loop.parallel_body}
// CHECK:         mem.alloca() : memref<40xf32>
// CHECK:         loop.for %{{.*}} = %[[LO]] to %[[HI]] step %[[ST]] {
// CHECK:           loop.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:         func.return
func.func private @k(%x: memref<?x40xf32>, %y: memref<?x40xf32>) attributes {loop.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c40 = arith.constant 40 : index
  %tmp = mem.alloca() : memref<40xf32>
  %n = mem.dim %x, 0 : memref<?x40xf32>
  loop.for %i = %c0 to %n step %c1 parallel {
    loop.for %j = %c0 to %c40 step %c1 {
      loop.block "copy" (%vi = %i, %vj = %j) [spatial, spatial] {
        %v = mem.load %x[%vi, %vj] : memref<?x40xf32> -> f32
        mem.store %v, %tmp[%vj] : f32, memref<40xf32>
        %w = mem.load %tmp[%vj] : memref<40xf32> -> f32
        mem.store %w, %y[%vi, %vj] : f32, memref<?x40xf32>
      }
    }
  }
  func.return
}

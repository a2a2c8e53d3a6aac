// RUN: mini-opt %s -p loop-outline-parallel | filecheck %s

// A `loop.private` scratch buffer (a schedule's accumulator tile or cache_read copy) used by two
// parallel loops: each outlined body gets its own copy (one per thread), none is passed in.
// Without the mark, a buffer used outside the loop is shared (passed as an argument).
// CHECK-LABEL: func.func private @k
// CHECK-NOT:     {loop.private}
// CHECK:         func.call @k__par0(%{{.*}}, %{{.*}}, %{{.*}}, %x, %shared, %y)
// CHECK-NEXT:    func.call @k__par1(%{{.*}}, %{{.*}}, %{{.*}}, %x, %shared, %y)
// CHECK-LABEL: func.func private @k__par1
// CHECK:         mem.alloca() {loop.private} : memref<40xf32>
// CHECK-LABEL: func.func private @k__par0
// CHECK:         mem.alloca() {loop.private} : memref<40xf32>
func.func private @k(%x: memref<4x40xf32>, %y: memref<4x40xf32>) attributes {loop.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c40 = arith.constant 40 : index
  %tmp = mem.alloca() {loop.private} : memref<40xf32>
  %shared = mem.alloca() : memref<40xf32>
  loop.for %i = %c0 to %c2 step %c1 parallel {
    loop.for %j = %c0 to %c40 step %c1 {
      loop.block "a" (%vi = %i, %vj = %j) [spatial, spatial] {
        %v = mem.load %x[%vi, %vj] : memref<4x40xf32> -> f32
        mem.store %v, %tmp[%vj] : f32, memref<40xf32>
        %w = mem.load %tmp[%vj] : memref<40xf32> -> f32
        %s = mem.load %shared[%vj] : memref<40xf32> -> f32
        %z = arith.addf %w, %s : f32
        mem.store %z, %y[%vi, %vj] : f32, memref<4x40xf32>
      }
    }
  }
  loop.for %i = %c2 to %c4 step %c1 parallel {
    loop.for %j = %c0 to %c40 step %c1 {
      loop.block "b" (%vi = %i, %vj = %j) [spatial, spatial] {
        %v = mem.load %x[%vi, %vj] : memref<4x40xf32> -> f32
        mem.store %v, %tmp[%vj] : f32, memref<40xf32>
        %w = mem.load %tmp[%vj] : memref<40xf32> -> f32
        %s = mem.load %shared[%vj] : memref<40xf32> -> f32
        %z = arith.addf %w, %s : f32
        mem.store %z, %y[%vi, %vj] : f32, memref<4x40xf32>
      }
    }
  }
  func.return
}

// RUN: mini-opt %s -p 'loop-vectorize{block=add loop=1},loop-parallel{block=add loop=0},loop-lower-vectors{width=8}' | filecheck %s

// 10 columns, width 8: one vector iteration (contiguous loads, a splat of the invariant
// scalar) and a scalar remainder loop from 8 to 10.

// CHECK-LABEL: func.func @add
// CHECK-DAG:     %[[C8:.*]] = arith.constant 8 : index
// CHECK-DAG:     %[[C10:.*]] = arith.constant 10 : index
// CHECK:         loop.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} parallel {
// CHECK-NEXT:      loop.for %[[J:.*]] = %{{.*}} to %[[C8]] step %[[C8]] {
// CHECK-NEXT:        loop.block "add" (%[[VI:.*]] = %[[I]], %[[VJ:.*]] = %[[J]]) [spatial, spatial] {
// CHECK-NEXT:          %[[X:.*]] = mem.load %{{.*}}[%[[VI]], %[[VJ]]] : memref<?x10xf32> -> vector<8xf32>
// CHECK-NEXT:          %[[Y:.*]] = mem.load %{{.*}}[%[[VJ]]] : memref<10xf32> -> vector<8xf32>
// CHECK-NEXT:          %[[K:.*]] = mem.load %{{.*}}[] : memref<f32> -> f32
// CHECK-NEXT:          %[[P:.*]] = arith.addf %[[X]], %[[Y]] : vector<8xf32>
// CHECK-NEXT:          %[[KV:.*]] = vector.broadcast %[[K]] : f32 to vector<8xf32>
// CHECK-NEXT:          %[[Q:.*]] = arith.mulf %[[P]], %[[KV]] : vector<8xf32>
// CHECK-NEXT:          mem.store %[[Q]], %{{.*}}[%[[VI]], %[[VJ]]] : vector<8xf32>, memref<?x10xf32>
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK-NEXT:      loop.for %[[R:.*]] = %[[C8]] to %[[C10]] step %{{.*}} {
// CHECK-NEXT:        loop.block "add"
// CHECK-NEXT:          mem.load {{.*}} -> f32
func.func @add(%a: memref<?x10xf32>, %b: memref<10xf32>, %s: memref<f32>, %c: memref<?x10xf32>) attributes {loop.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c10 = arith.constant 10 : index
  %n = mem.dim %a, 0 : memref<?x10xf32>
  loop.for %i = %c0 to %n step %c1 {
    loop.for %j = %c0 to %c10 step %c1 {
      loop.block "add" (%vi = %i, %vj = %j) [spatial, spatial] {
        %x = mem.load %a[%vi, %vj] : memref<?x10xf32> -> f32
        %y = mem.load %b[%vj] : memref<10xf32> -> f32
        %k = mem.load %s[] : memref<f32> -> f32
        %p = arith.addf %x, %y : f32
        %q = arith.mulf %p, %k : f32
        mem.store %q, %c[%vi, %vj] : f32, memref<?x10xf32>
      }
    }
  }
  func.return
}

// RUN: mini-opt %s -p 'loop-decompose-reduction{block=matmul loop=1}' | filecheck %s

// The init moves to its own block "matmul_init" over a copy of the j loop, before the j loop
// of the reduction; the reduction block keeps no init.

// CHECK-LABEL: func.func @matmul
// CHECK:         loop.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:      loop.for %[[J0:.*]] = %{{.*}} to %[[N:.*]] step %{{.*}} {
// CHECK-NEXT:        loop.block "matmul_init" (%[[A:.*]] = %[[I]], %[[B:.*]] = %[[J0]]) [spatial, spatial] {
// CHECK-NEXT:          %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:          mem.store %[[Z]], %{{.*}}[%[[A]], %[[B]]] : f32, memref<?x?xf32>
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK-NEXT:      loop.for %[[J:.*]] = %{{.*}} to %[[N]] step %{{.*}} {
// CHECK-NEXT:        loop.for
// CHECK-NEXT:          loop.block "matmul" ({{.*}}) [spatial, spatial, reduce] {
// CHECK:                 mem.store
// CHECK-NEXT:          }
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK-NEXT:    }
func.func @matmul(%a: memref<?x?xf32>, %b: memref<?x?xf32>, %c: memref<?x?xf32>) attributes {loop.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = mem.dim %a, 0 : memref<?x?xf32>
  %k = mem.dim %a, 1 : memref<?x?xf32>
  %n = mem.dim %b, 1 : memref<?x?xf32>
  loop.for %i = %c0 to %m step %c1 {
    loop.for %j = %c0 to %n step %c1 {
      loop.for %kk = %c0 to %k step %c1 {
        loop.block "matmul" (%vi = %i, %vj = %j, %vk = %kk) [spatial, spatial, reduce] {
          %x = mem.load %a[%vi, %vk] : memref<?x?xf32> -> f32
          %y = mem.load %b[%vk, %vj] : memref<?x?xf32> -> f32
          %z = mem.load %c[%vi, %vj] : memref<?x?xf32> -> f32
          %p = arith.mulf %x, %y : f32
          %s = arith.addf %z, %p : f32
          mem.store %s, %c[%vi, %vj] : f32, memref<?x?xf32>
        } init {
          %zero = arith.constant 0.0 : f32
          mem.store %zero, %c[%vi, %vj] : f32, memref<?x?xf32>
        }
      }
    }
  }
  func.return
}

// RUN: mini-opt %s -p 'loop-vectorize{block=pool loop=1},loop-lower-vectors{width=8}' | filecheck %s
// RUN: mini-opt %s -p 'loop-vectorize{block=pool loop=1},loop-lower-vectors{width=8},convert-vector-to-llvm' | filecheck %s --check-prefix=LLVM

// A stride-2 load along the vectorized loop (a pool's x[2*j + 1]): two contiguous vector loads,
// x[2j+1 : 2j+9] and x[2j+8 : 2j+16], the last ending at the last lane's element, and a shuffle
// of their even lanes. The store stays contiguous.

// CHECK-LABEL: func.func @pool
// CHECK:         loop.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:           %[[A:.*]] = mem.load %{{.*}}[%[[VI:.*]], %[[X:.*]]] : memref<4x19xf32> -> vector<8xf32>
// CHECK-NEXT:      %[[C7:.*]] = arith.constant 7 : index
// CHECK-NEXT:      %[[X7:.*]] = arith.addi %[[X]], %[[C7]] : index
// CHECK-NEXT:      %[[B:.*]] = mem.load %{{.*}}[%[[VI]], %[[X7]]] : memref<4x19xf32> -> vector<8xf32>
// CHECK-NEXT:      %[[E:.*]] = vector.shuffle %[[A]], %[[B]] [0, 2, 4, 6, 9, 11, 13, 15] : vector<8xf32>, vector<8xf32>
// CHECK:           mem.store %{{.*}}, %{{.*}} : vector<8xf32>, memref<4x9xf32>
// CHECK:         loop.for %{{.*}} = %{{.*}} to %{{.*}} step
// CHECK:           mem.load {{.*}} -> f32

// LLVM:          llvm.shufflevector %{{.*}}, %{{.*}} [0, 2, 4, 6, 9, 11, 13, 15] : vector<8xf32>
// LLVM-NOT:      vector.shuffle
func.func @pool(%x: memref<4x19xf32>, %y: memref<4x9xf32>) attributes {loop.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c9 = arith.constant 9 : index
  loop.for %i = %c0 to %c4 step %c1 {
    loop.for %j = %c0 to %c9 step %c1 {
      loop.block "pool" (%vi = %i, %vj = %j) [spatial, spatial] {
        %t = arith.muli %vj, %c2 : index
        %u = arith.addi %t, %c1 : index
        %a = mem.load %x[%vi, %u] : memref<4x19xf32> -> f32
        %b = arith.mulf %a, %a : f32
        mem.store %b, %y[%vi, %vj] : f32, memref<4x9xf32>
      }
    }
  }
  func.return
}


// RUN: mini-opt %s | filecheck %s
// RUN: mini-opt %s | mini-opt | filecheck %s
// RUN: mini-opt %s --print-op-generic | mini-opt | filecheck %s

// C[i, j] = sum_k A[i, k] * B[k, j], the reduction initialised by the init region.

// CHECK-LABEL: func.func @matmul
// CHECK-SAME:    (%[[A:.*]]: memref<?x?xf32>, %[[B:.*]]: memref<?x?xf32>, %[[C:.*]]: memref<?x?xf32>) attributes {loop.kernel} {
// CHECK:         %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[C1:.*]] = arith.constant 1 : index
// CHECK-NEXT:    %[[M:.*]] = mem.dim %[[A]], 0 : memref<?x?xf32>
// CHECK-NEXT:    %[[K:.*]] = mem.dim %[[A]], 1 : memref<?x?xf32>
// CHECK-NEXT:    %[[N:.*]] = mem.dim %[[B]], 1 : memref<?x?xf32>
// CHECK-NEXT:    loop.for %[[I:.*]] = %[[C0]] to %[[M]] step %[[C1]] parallel {
// CHECK-NEXT:      loop.for %[[J:.*]] = %[[C0]] to %[[N]] step %[[C1]] {
// CHECK-NEXT:        loop.for %[[KK:.*]] = %[[C0]] to %[[K]] step %[[C1]] {
// CHECK-NEXT:          loop.block "matmul" (%[[VI:.*]] = %[[I]], %[[VJ:.*]] = %[[J]], %[[VK:.*]] = %[[KK]]) [spatial, spatial, reduce] {
// CHECK-NEXT:            %[[X:.*]] = mem.load %[[A]][%[[VI]], %[[VK]]] : memref<?x?xf32> -> f32
// CHECK-NEXT:            %[[Y:.*]] = mem.load %[[B]][%[[VK]], %[[VJ]]] : memref<?x?xf32> -> f32
// CHECK-NEXT:            %[[Z:.*]] = mem.load %[[C]][%[[VI]], %[[VJ]]] : memref<?x?xf32> -> f32
// CHECK-NEXT:            %[[P:.*]] = arith.mulf %[[X]], %[[Y]] : f32
// CHECK-NEXT:            %[[S:.*]] = arith.addf %[[Z]], %[[P]] : f32
// CHECK-NEXT:            mem.store %[[S]], %[[C]][%[[VI]], %[[VJ]]] : f32, memref<?x?xf32>
// CHECK-NEXT:          } init {
// CHECK-NEXT:            %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:            mem.store %[[ZERO]], %[[C]][%[[VI]], %[[VJ]]] : f32, memref<?x?xf32>
// CHECK-NEXT:          }
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
func.func @matmul(%a: memref<?x?xf32>, %b: memref<?x?xf32>, %c: memref<?x?xf32>) attributes {loop.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = mem.dim %a, 0 : memref<?x?xf32>
  %k = mem.dim %a, 1 : memref<?x?xf32>
  %n = mem.dim %b, 1 : memref<?x?xf32>
  loop.for %i = %c0 to %m step %c1 parallel {
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

// Elementwise add with dynamic dims; the inner loop is split by 8 (i = io * 8 + ii) and
// vectorized, so the block binds an affine expression of two loop variables.

// CHECK-LABEL: func.func @add
// CHECK-SAME:    (%[[A:.*]]: memref<?x?xf32>, %[[B:.*]]: memref<?x?xf32>, %[[C:.*]]: memref<?x?xf32>) attributes {loop.kernel} {
// CHECK:         loop.for %[[R:.*]] = %{{.*}} to %{{.*}} step %{{.*}} parallel {
// CHECK-NEXT:      loop.for %[[IO:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:        loop.for %[[II:.*]] = %{{.*}} to %{{.*}} step %{{.*}} vectorize {
// CHECK-NEXT:          %[[T:.*]] = arith.muli %[[IO]], %{{.*}} : index
// CHECK-NEXT:          %[[COL:.*]] = arith.addi %[[T]], %[[II]] : index
// CHECK-NEXT:          loop.block "add" (%[[VR:.*]] = %[[R]], %[[VC:.*]] = %[[COL]]) [spatial, spatial] {
// CHECK-NEXT:            %[[X:.*]] = mem.load %[[A]][%[[VR]], %[[VC]]] : memref<?x?xf32> -> f32
// CHECK-NEXT:            %[[Y:.*]] = mem.load %[[B]][%[[VR]], %[[VC]]] : memref<?x?xf32> -> f32
// CHECK-NEXT:            %[[S:.*]] = arith.addf %[[X]], %[[Y]] : f32
// CHECK-NEXT:            mem.store %[[S]], %[[C]][%[[VR]], %[[VC]]] : f32, memref<?x?xf32>
// CHECK-NEXT:          }
// CHECK-NEXT:        }
func.func @add(%a: memref<?x?xf32>, %b: memref<?x?xf32>, %c: memref<?x?xf32>) attributes {loop.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %rows = mem.dim %a, 0 : memref<?x?xf32>
  %cols = mem.dim %a, 1 : memref<?x?xf32>
  %tiles = arith.divui %cols, %c8 : index
  loop.for %r = %c0 to %rows step %c1 parallel {
    loop.for %io = %c0 to %tiles step %c1 {
      loop.for %ii = %c0 to %c8 step %c1 vectorize {
        %t = arith.muli %io, %c8 : index
        %col = arith.addi %t, %ii : index
        loop.block "add" (%vr = %r, %vc = %col) [spatial, spatial] {
          %x = mem.load %a[%vr, %vc] : memref<?x?xf32> -> f32
          %y = mem.load %b[%vr, %vc] : memref<?x?xf32> -> f32
          %s = arith.addf %x, %y : f32
          mem.store %s, %c[%vr, %vc] : f32, memref<?x?xf32>
        }
      }
    }
  }
  func.return
}

// Loop kinds: serial is not printed, unroll may carry a factor; a block may have no
// iteration variables; extra attributes are kept after the region.

// CHECK-LABEL: func.func @kinds
// CHECK:         loop.for %[[I:.*]] = %[[LB:.*]] to %[[UB:.*]] step %[[ST:.*]] unroll {
// CHECK-NEXT:      loop.for %{{.*}} = %[[LB]] to %[[UB]] step %[[ST]] unroll(4) {
// CHECK-NEXT:        loop.for %{{.*}} = %[[LB]] to %[[I]] step %[[ST]] {
// CHECK-NEXT:          loop.block "scalar" () [] {
// CHECK-NEXT:            %{{.*}} = mem.load %{{.*}}[] : memref<f32> -> f32
// CHECK-NEXT:          }
// CHECK-NEXT:        } {note = "triangular"}
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
func.func @kinds(%m: memref<f32>) attributes {loop.kernel} {
  %lb = arith.constant 0 : index
  %ub = arith.constant 16 : index
  %st = arith.constant 1 : index
  loop.for %i = %lb to %ub step %st unroll {
    loop.for %j = %lb to %ub step %st unroll(4) {
      loop.for %k = %lb to %i step %st {
        loop.block "scalar" () [] {
          %v = mem.load %m[] : memref<f32> -> f32
        }
      } {note = "triangular"}
    }
  }
  func.return
}

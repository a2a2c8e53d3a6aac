// RUN: mini-opt %s | mini-opt | filecheck %s --check-prefix=ROUNDTRIP
// RUN: mini-opt %s --print-op-generic | mini-opt | filecheck %s --check-prefix=ROUNDTRIP
// RUN: mini-opt %s -p graph-infer-dims | filecheck %s --check-prefix=DIMS
// RUN: mini-opt %s -p graph-legalize | filecheck %s
// RUN: mini-opt %s -p graph-fuse | filecheck %s --check-prefix=FUSE

// ROUNDTRIP-LABEL: func.func @uniform
// ROUNDTRIP-SAME:    (%[[X:.*]]: tensor<?x4xf32>)
// ROUNDTRIP-NEXT:    %[[N:.*]] = graph.dim %[[X]], 0 : tensor<?x4xf32>
// ROUNDTRIP-NEXT:    %[[U:.*]] = graph.random "uniform"(-1.000000e+00, 1.000000e+00) seed 42 dims(%[[N]]) : tensor<?x4xf32>
// ROUNDTRIP-NEXT:    func.return %[[U]] : tensor<?x4xf32>
// ROUNDTRIP-LABEL: func.func @normal
// ROUNDTRIP-NEXT:    %[[Z:.*]] = graph.random "normal"(0.000000e+00, 2.000000e+00) seed -7 : tensor<3xf64>
// ROUNDTRIP-NEXT:    func.return %[[Z]] : tensor<3xf64>

// The result's `?` is the dims operand: graph-infer-dims names it after x's dim.
// DIMS-LABEL: func.func @uniform
// DIMS:         graph.random "uniform"{{.*}} dims(%{{.*}}) {graph.dims = ["x.dim0"]} : tensor<?x4xf32>

// One block over the result; element (i, j) is draw number i * 4 + j: the splitmix64 state
// key + (k + 1) * GAMMA (one multiply, one add of constants), its 64-bit mix (xor, logical shift
// right, wrapping multiply), then the top 24 bits scaled to [0, 1) and mapped to [low, high).

// CHECK-LABEL: func.func @uniform
// CHECK-SAME:    (%[[X:.*]]: tensor<?x4xf32>)
// CHECK-NEXT:    %[[N:.*]] = graph.dim %[[X]], 0
// CHECK-NEXT:    %{{.*}} = graph.call_kernel @random_0() dims(%[[N]]) : () -> tensor<?x4xf32>
// CHECK-LABEL: func.func @normal
// CHECK-NEXT:    graph.call_kernel @random_1() : () -> tensor<3xf64>

// CHECK-LABEL: func.func private @random_0
// CHECK-SAME:    (%[[Y:.*]]: memref<?x4xf32>) attributes {loop.kernel}
// CHECK:         loop.block "random" (%[[I:.*]] = %{{.*}}, %[[J:.*]] = %{{.*}}) [spatial, spatial] {
// CHECK-NEXT:      %[[I4:.*]] = arith.muli %[[I]], %{{.*}} : index
// CHECK-NEXT:      %[[K:.*]] = arith.addi %[[I4]], %[[J]] : index
// CHECK-NEXT:      %[[K64:.*]] = arith.index_cast %[[K]] : index to i64
// CHECK-NEXT:      %[[GAMMA:.*]] = arith.constant -7046029254386353131 : i64
// CHECK-NEXT:      %[[START:.*]] = arith.constant {{-?[0-9]+}} : i64
// CHECK-NEXT:      %[[KG:.*]] = arith.muli %[[K64]], %[[GAMMA]] : i64
// CHECK-NEXT:      %[[S:.*]] = arith.addi %[[KG]], %[[START]] : i64
// CHECK-NEXT:      %[[C30:.*]] = arith.constant 30 : i64
// CHECK-NEXT:      %[[SH:.*]] = arith.shrui %[[S]], %[[C30]] : i64
// CHECK-NEXT:      %[[XO:.*]] = arith.xori %[[S]], %[[SH]] : i64
// CHECK-NEXT:      %[[M1:.*]] = arith.constant -4658895280553007687 : i64
// CHECK-NEXT:      arith.muli %[[XO]], %[[M1]] : i64
// CHECK:           %[[C40:.*]] = arith.constant 40 : i64
// CHECK-NEXT:      %[[TOP:.*]] = arith.shrui %{{.*}}, %[[C40]] : i64
// CHECK-NEXT:      %[[F:.*]] = arith.sitofp %[[TOP]] : i64 to f32
// CHECK-NEXT:      %[[ULP:.*]] = arith.constant 5.96046448e-08 : f32
// CHECK-NEXT:      %[[U:.*]] = arith.mulf %[[F]], %[[ULP]] : f32
// CHECK-NEXT:      %[[LO:.*]] = arith.constant -1.000000e+00 : f32
// CHECK-NEXT:      %[[W:.*]] = arith.constant 2.000000e+00 : f32
// CHECK-NEXT:      %[[UW:.*]] = arith.mulf %[[U]], %[[W]] : f32
// CHECK-NEXT:      %[[V:.*]] = arith.addf %[[LO]], %[[UW]] : f32
// CHECK-NEXT:      mem.store %[[V]], %[[Y]][%[[I]], %[[J]]] : f32, memref<?x4xf32>
func.func @uniform(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %n = graph.dim %x, 0 : tensor<?x4xf32>
  %u = graph.random "uniform"(-1.0, 1.0) seed 42 dims(%n) : tensor<?x4xf32>
  func.return %u : tensor<?x4xf32>
}

// Box-Muller: two 53-bit draws (counters 2k and 2k + 1), sqrt(-2 log(1 - u1)) * cos(2 pi u2),
// scaled by 2 (the mean 0 adds nothing).

// CHECK-LABEL: func.func private @random_1
// CHECK-SAME:    (%[[Z:.*]]: memref<3xf64>)
// CHECK:         loop.block "random" (%[[K:.*]] = %{{.*}}) [spatial] {
// CHECK-COUNT-2:   arith.constant 1.1102230246251565e-16 : f64
// CHECK:           math.log
// CHECK:           math.sqrt
// CHECK:           arith.constant 6.2831853071795862 : f64
// CHECK:           math.cos
// CHECK:           %[[R:.*]] = arith.mulf %{{.*}}, %{{.*}} : f64
// CHECK-NEXT:      %[[TWO:.*]] = arith.constant 2.000000e+00 : f64
// CHECK-NEXT:      %[[V:.*]] = arith.mulf %[[TWO]], %[[R]] : f64
// CHECK-NEXT:      mem.store %[[V]], %[[Z]][%[[K]]] : f64, memref<3xf64>
// CHECK-NOT:     math.
func.func @normal() -> tensor<3xf64> {
  %z = graph.random "normal"(0.0, 2.0) seed -7 : tensor<3xf64>
  func.return %z : tensor<3xf64>
}

// graph.random is elementwise for graph-fuse (its element depends on its own index only): a
// dropout mask and its select are one primitive function, the draws never stored.

// FUSE-LABEL: func.func private @fused_random_ge_where
// FUSE-SAME:    (%[[X:.*]]: tensor<?x8xf32>, %[[R:.*]]: tensor<f32>, %[[Z:.*]]: tensor<f32>)
// FUSE-NEXT:    %[[N:.*]] = graph.dim %[[X]], 0
// FUSE-NEXT:    %[[U:.*]] = graph.random "uniform"(0.000000e+00, 1.000000e+00) seed 3 dims(%[[N]])
// FUSE-NEXT:    %[[K:.*]] = graph.ge %[[U]], %[[R]]
// FUSE-NEXT:    %[[Y:.*]] = graph.where %[[K]], %[[X]], %[[Z]]
// FUSE-NEXT:    func.return %[[Y]]
// FUSE-LABEL: func.func @keep
// FUSE:         func.call @fused_random_ge_where
func.func @keep(%x: tensor<?x8xf32>, %r: tensor<f32>) -> tensor<?x8xf32> {
  %n = graph.dim %x, 0 : tensor<?x8xf32>
  %u = graph.random "uniform"(0.0, 1.0) seed 3 dims(%n) : tensor<?x8xf32>
  %k = graph.ge %u, %r : (tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xi1>
  %z = graph.constant dense<0.0> : tensor<f32>
  %y = graph.where %k, %x, %z : (tensor<?x8xi1>, tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xf32>
  func.return %y : tensor<?x8xf32>
}

// RUN: mini-opt %s -p graph-legalize | filecheck %s

// Graph level: each op becomes a graph.call_kernel; result `?` dims are computed before it.
// Kernels are appended to the module after the graph functions (checked at the bottom).

// CHECK-LABEL: func.func @add_static
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3xf32>, %[[Y:.*]]: tensor<2x3xf32>)
// CHECK-NEXT:    %[[Z:.*]] = graph.call_kernel @add_0(%[[X]], %[[Y]]) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[Z]]
func.func @add_static(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %z = graph.add %x, %y : tensor<2x3xf32>
  func.return %z : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @mul_broadcast
// CHECK-SAME:    (%[[X:.*]]: tensor<?x3xf32>, %[[Y:.*]]: tensor<1x3xf32>)
// CHECK-NEXT:    %[[N:.*]] = graph.dim %[[X]], 0 : tensor<?x3xf32>
// CHECK-NEXT:    graph.call_kernel @mul_0(%[[X]], %[[Y]]) dims(%[[N]]) : (tensor<?x3xf32>, tensor<1x3xf32>) -> tensor<?x3xf32>
func.func @mul_broadcast(%x: tensor<?x3xf32>, %y: tensor<1x3xf32>) -> tensor<?x3xf32> {
  %z = graph.mul %x, %y : (tensor<?x3xf32>, tensor<1x3xf32>) -> tensor<?x3xf32>
  func.return %z : tensor<?x3xf32>
}

// `?` against `?`: the result dim is max(dims) (a side that is 1 broadcasts).
// CHECK-LABEL: func.func @sub_dynamic_dynamic
// CHECK-SAME:    (%[[X:.*]]: tensor<?xf32>, %[[Y:.*]]: tensor<?xf32>)
// CHECK-NEXT:    %[[NX:.*]] = graph.dim %[[X]], 0 : tensor<?xf32>
// CHECK-NEXT:    %[[NY:.*]] = graph.dim %[[Y]], 0 : tensor<?xf32>
// CHECK-NEXT:    %[[N:.*]] = arith.maxsi %[[NX]], %[[NY]] : index
// CHECK-NEXT:    graph.call_kernel @sub_0(%[[X]], %[[Y]]) dims(%[[N]])
func.func @sub_dynamic_dynamic(%x: tensor<?xf32>, %y: tensor<?xf32>) -> tensor<?xf32> {
  %z = graph.sub %x, %y : tensor<?xf32>
  func.return %z : tensor<?xf32>
}

// CHECK-LABEL: func.func @relu
// CHECK:         graph.call_kernel @relu_0
func.func @relu(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %y = graph.relu %x : tensor<?x4xf32>
  func.return %y : tensor<?x4xf32>
}

// CHECK-LABEL: func.func @lt
// CHECK-NEXT:    graph.call_kernel @lt_0({{.*}}) : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
func.func @lt(%x: tensor<4xi32>, %y: tensor<4xi32>) -> tensor<4xi1> {
  %z = graph.lt %x, %y : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
  func.return %z : tensor<4xi1>
}

// CHECK-LABEL: func.func @where
// CHECK-NEXT:    graph.call_kernel @where_0({{.*}}) : (tensor<4xi1>, tensor<4xf32>, tensor<1xf32>) -> tensor<4xf32>
func.func @where(%c: tensor<4xi1>, %x: tensor<4xf32>, %y: tensor<1xf32>) -> tensor<4xf32> {
  %z = graph.where %c, %x, %y : (tensor<4xi1>, tensor<4xf32>, tensor<1xf32>) -> tensor<4xf32>
  func.return %z : tensor<4xf32>
}

// CHECK-LABEL: func.func @cast
// CHECK-NEXT:    graph.call_kernel @cast_0({{.*}}) : (tensor<4xf32>) -> tensor<4xi64>
func.func @cast(%x: tensor<4xf32>) -> tensor<4xi64> {
  %y = graph.cast %x : tensor<4xf32> -> tensor<4xi64>
  func.return %y : tensor<4xi64>
}

// The same op on the same types reuses relu_0.
// CHECK-LABEL: func.func @shared
// CHECK:         graph.call_kernel @relu_0
func.func @shared(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %y = graph.relu %x : tensor<?x4xf32>
  func.return %y : tensor<?x4xf32>
}

// CHECK-LABEL: func.func private @add_0
// CHECK-SAME:    (%[[A:.*]]: memref<2x3xf32>, %[[B:.*]]: memref<2x3xf32>, %[[C:.*]]: memref<2x3xf32>) attributes {loop.kernel}
// CHECK:         loop.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:      loop.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:        loop.block "add" (%[[VI:.*]] = %[[I]], %[[VJ:.*]] = %[[J]]) [spatial, spatial] {
// CHECK-NEXT:          %[[L:.*]] = mem.load %[[A]][%[[VI]], %[[VJ]]] : memref<2x3xf32> -> f32
// CHECK-NEXT:          %[[R:.*]] = mem.load %[[B]][%[[VI]], %[[VJ]]] : memref<2x3xf32> -> f32
// CHECK-NEXT:          %[[S:.*]] = arith.addf %[[L]], %[[R]] : f32
// CHECK-NEXT:          mem.store %[[S]], %[[C]][%[[VI]], %[[VJ]]] : f32, memref<2x3xf32>
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return

// A static-1 operand dim is read at index 0; the result extent comes from mem.dim.
// CHECK-LABEL: func.func private @mul_0
// CHECK-SAME:    (%[[A:.*]]: memref<?x3xf32>, %[[B:.*]]: memref<1x3xf32>, %[[C:.*]]: memref<?x3xf32>)
// CHECK-NEXT:    %[[N:.*]] = mem.dim %[[C]], 0 : memref<?x3xf32>
// CHECK-NEXT:    %[[C0:.*]] = arith.constant 0 : index
// CHECK:         loop.for %[[I:.*]] = %[[C0]] to %[[N]] step
// CHECK:           loop.block "mul" (%[[VI:.*]] = %[[I]], %[[VJ:.*]] = %{{.*}}) [spatial, spatial] {
// CHECK-NEXT:        mem.load %[[A]][%[[VI]], %[[VJ]]]
// CHECK-NEXT:        mem.load %[[B]][%[[C0]], %[[VJ]]]
// CHECK-NEXT:        arith.mulf

// `?` against `?`: each side may be 1 at run time, read at i * select(dim == 1, 0, 1).
// CHECK-LABEL: func.func private @sub_0
// CHECK-SAME:    (%[[A:.*]]: memref<?xf32>, %[[B:.*]]: memref<?xf32>, %[[C:.*]]: memref<?xf32>)
// CHECK-NEXT:    %[[NA:.*]] = mem.dim %[[A]], 0
// CHECK-NEXT:    %[[C1:.*]] = arith.constant 1 : index
// CHECK-NEXT:    %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[NB:.*]] = mem.dim %[[B]], 0
// CHECK-NEXT:    %[[NC:.*]] = mem.dim %[[C]], 0
// CHECK-NEXT:    %[[ISA:.*]] = arith.cmpi eq, %[[NA]], %[[C1]] : index
// CHECK-NEXT:    %[[SA:.*]] = arith.select %[[ISA]], %[[C0]], %[[C1]] : index
// CHECK-NEXT:    %[[ISB:.*]] = arith.cmpi eq, %[[NB]], %[[C1]] : index
// CHECK-NEXT:    %[[SB:.*]] = arith.select %[[ISB]], %[[C0]], %[[C1]] : index
// CHECK-NEXT:    loop.for %[[I:.*]] = %[[C0]] to %[[NC]] step %[[C1]] {
// CHECK-NEXT:      loop.block "sub" (%[[VI:.*]] = %[[I]]) [spatial] {
// CHECK-NEXT:        %[[IA:.*]] = arith.muli %[[VI]], %[[SA]] : index
// CHECK-NEXT:        %[[LA:.*]] = mem.load %[[A]][%[[IA]]]
// CHECK-NEXT:        %[[IB:.*]] = arith.muli %[[VI]], %[[SB]] : index
// CHECK-NEXT:        %[[LB:.*]] = mem.load %[[B]][%[[IB]]]
// CHECK-NEXT:        arith.subf %[[LA]], %[[LB]] : f32

// CHECK-LABEL: func.func private @relu_0
// CHECK:           loop.block "relu"
// CHECK-NEXT:        %[[V:.*]] = mem.load
// CHECK-NEXT:        %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:        arith.maximumf %[[V]], %[[Z]] : f32

// CHECK-LABEL: func.func private @lt_0
// CHECK:           loop.block "lt"
// CHECK:             %[[R:.*]] = arith.cmpi slt, %{{.*}}, %{{.*}} : i32
// CHECK-NEXT:        mem.store %[[R]], %{{.*}}[%{{.*}}] : i1, memref<4xi1>

// CHECK-LABEL: func.func private @where_0
// CHECK:           loop.block "where"
// CHECK:             arith.select %{{.*}}, %{{.*}}, %{{.*}} : f32

// ONNX Cast: float -> int truncates toward zero (fptosi).
// CHECK-LABEL: func.func private @cast_0
// CHECK:           loop.block "cast"
// CHECK:             arith.fptosi %{{.*}} : f32 to i64

// CHECK-NOT: func.func private @relu_1

// RUN: mini-opt %s -p graph-fuse | filecheck %s

// Found by benchmarks/fuzz_graphs.py (Slice then Gather with run-time indices): the gather's
// index normalization adds dim(slice result) to the indices, through graph.from_dims, a graph op.
// graph.dim is not a data edge for fusion, so slice and gather were grouped with the add between
// them, and the call needed its own result's dim ("outlining created a cycle"). The slice now
// stays out; the group gets the dim-tensor as an argument.
// CHECK-LABEL: func.func private @fused_reshape_lt_add_where
// CHECK-SAME:    (%{{.*}}: tensor<1xi64>, %{{.*}}: tensor<5xi64>, %{{.*}}: tensor<i64>, %{{.*}}: tensor<?xf32>) -> tensor<5xf32> attributes {graph.primitive}
// CHECK-NOT:     graph.slice
// CHECK:         graph.gather
// CHECK-LABEL: func.func @slice_then_gather
// CHECK-NEXT:    %[[S:.*]] = graph.slice %{{.*}} starts [1] ends [9223372036854775807] steps [1]
// CHECK-NEXT:    %[[D:.*]] = graph.dim %[[S]], 0
// CHECK-NEXT:    %[[T:.*]] = graph.from_dims(%[[D]])
// CHECK:         func.call @fused_reshape_lt_add_where(%[[T]], %{{.*}}, %{{.*}}, %[[S]])
func.func @slice_then_gather(%x: tensor<?xf32>, %ids: tensor<5xi64>) -> tensor<5xf32> {
  %s = graph.slice %x starts [1] ends [9223372036854775807] steps [1] : tensor<?xf32> -> tensor<?xf32>
  %d = graph.dim %s, 0 : tensor<?xf32>
  %t = graph.from_dims(%d) : tensor<1xi64>
  %n = graph.reshape %t : tensor<1xi64> -> tensor<i64>
  %z = graph.constant dense<0> : tensor<i64>
  %neg = graph.lt %ids, %z : (tensor<5xi64>, tensor<i64>) -> tensor<5xi1>
  %w = graph.add %ids, %n : (tensor<5xi64>, tensor<i64>) -> tensor<5xi64>
  %i = graph.where %neg, %w, %ids : (tensor<5xi1>, tensor<5xi64>, tensor<5xi64>) -> tensor<5xi64>
  %g = graph.gather %s, %i axis 0 : (tensor<?xf32>, tensor<5xi64>) -> tensor<5xf32>
  func.return %g : tensor<5xf32>
}

// Shape arithmetic alone from a member to a member is no cycle (outlining recomputes the dim
// inside): relu and the reshape reading relu's dim still fuse.
// CHECK-LABEL: func.func private @fused_relu_reshape
// CHECK:         graph.dim
// CHECK:         graph.reshape
// CHECK-LABEL: func.func @dim_inside_group
// CHECK-NEXT:    func.call @fused_relu_reshape
func.func @dim_inside_group(%x: tensor<?x4xf32>) -> tensor<?xf32> {
  %r = graph.relu %x : tensor<?x4xf32>
  %d = graph.dim %r, 0 : tensor<?x4xf32>
  %c = arith.constant 4 : index
  %m = arith.muli %d, %c : index
  %y = graph.reshape %r dims(%m) : tensor<?x4xf32> -> tensor<?xf32>
  func.return %y : tensor<?xf32>
}

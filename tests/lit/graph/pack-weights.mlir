// RUN: mini-opt %s -p "graph-pack-weights{width=8},graph-lift-params" | filecheck %s

// A conv whose weight is a param reads it packed in 16-channel panels (two 8-lane vectors, the
// conv2d rule's default tile for 32 channels at width 8); the packing (a reshape and a transpose)
// moves to @main__params, which the runtime runs once, and @main reads its result as a param.
// CHECK-LABEL: func.func @main__params() -> (tensor<2x8x3x3x16xf32> {graph.name = "main:lifted0"})
// CHECK-SAME:      attributes {graph.params_of = "main"}
// CHECK-NEXT:    %[[W:.*]] = graph.param "w" : tensor<32x8x3x3xf32>
// CHECK-NEXT:    %[[R:.*]] = graph.reshape %[[W]] : tensor<32x8x3x3xf32> -> tensor<2x16x8x3x3xf32>
// CHECK-NEXT:    %[[P:.*]] = graph.transpose %[[R]] perm [0, 2, 3, 4, 1]
// CHECK-NEXT:    func.return %[[P]] : tensor<2x8x3x3x16xf32>
// CHECK-LABEL: func.func @main
// CHECK-NOT:     graph.param "w"
// CHECK:         %[[L:.*]] = graph.param "main:lifted0" : tensor<2x8x3x3x16xf32>
// CHECK-NEXT:    graph.conv2d %x, %[[L]], %b pads [1, 1, 1, 1] weight_tile 16
// The depthwise conv keeps its weight (the rows rule reads it as it is), as does a conv whose
// weight is an input (computed per call: nothing to lift).
// CHECK:         graph.conv2d %{{.*}}, %dw pads [1, 1, 1, 1] group 32 :
// CHECK:         graph.conv2d %{{.*}}, %win :
func.func @main(%x: tensor<1x8x6x6xf32>, %win: tensor<32x32x1x1xf32>) -> tensor<1x32x6x6xf32> {
  %w = graph.param "w" : tensor<32x8x3x3xf32>
  %b = graph.param "b" : tensor<32xf32>
  %dw = graph.param "dw" : tensor<32x1x3x3xf32>
  %y = graph.conv2d %x, %w, %b pads [1, 1, 1, 1] : (tensor<1x8x6x6xf32>, tensor<32x8x3x3xf32>, tensor<32xf32>) -> tensor<1x32x6x6xf32>
  %z = graph.conv2d %y, %dw pads [1, 1, 1, 1] group 32 : (tensor<1x32x6x6xf32>, tensor<32x1x3x3xf32>) -> tensor<1x32x6x6xf32>
  %u = graph.conv2d %z, %win : (tensor<1x32x6x6xf32>, tensor<32x32x1x1xf32>) -> tensor<1x32x6x6xf32>
  func.return %u : tensor<1x32x6x6xf32>
}

// Lifted: weight-only computations that involve a param and an op other than a reshape, used by
// an op that is not weight-only; not a bare reshape of a weight (a free view), not a value the
// function returns, not what constants alone compute.
// CHECK-LABEL: func.func @lift__params() -> (tensor<4x3xf32> {graph.name = "lift:lifted0"})
// CHECK:         graph.transpose
// CHECK-NEXT:    %[[S:.*]] = graph.mul
// CHECK-NEXT:    func.return %[[S]]
// CHECK-LABEL: func.func @lift(
// CHECK-DAG:     graph.param "lift:lifted0" : tensor<4x3xf32>
// CHECK-DAG:     graph.reshape %v : tensor<3x4xf32> -> tensor<12xf32>
// CHECK-DAG:     graph.add %c, %c
// CHECK-DAG:     %[[T2:.*]] = graph.transpose %v perm [1, 0]
// CHECK:         func.return %{{.*}}, %[[T2]]
func.func @lift(%x: tensor<4x3xf32>, %i: tensor<12xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  %v = graph.param "v" : tensor<3x4xf32>
  %c = graph.constant dense<2.0> : tensor<4x3xf32>
  %t = graph.transpose %v perm [1, 0] : tensor<3x4xf32> -> tensor<4x3xf32>
  %s = graph.mul %t, %c : tensor<4x3xf32>
  %a = graph.add %x, %s : tensor<4x3xf32>
  %r = graph.reshape %v : tensor<3x4xf32> -> tensor<12xf32>
  %ri = graph.add %r, %i : tensor<12xf32>
  %cc = graph.add %c, %c : tensor<4x3xf32>
  %a2 = graph.add %a, %cc : tensor<4x3xf32>
  %t2 = graph.transpose %v perm [1, 0] : tensor<3x4xf32> -> tensor<4x3xf32>
  func.return %a2, %t2 : tensor<4x3xf32>, tensor<4x3xf32>
}

// A grouped 1x1 conv with 68 channels per group (4-channel panels at width 8) over 14x14 pixels
// is a batched matmul [G, O/G, C/G] x [N, G, C/G, H*W], its weight a reshape (not lifted: a view).
// CHECK-LABEL: func.func @grouped_pointwise
// CHECK:         %[[N:.*]] = graph.dim %x, 0
// CHECK-NEXT:    %[[X:.*]] = graph.reshape %x dims(%[[N]]) : tensor<?x272x14x14xf32> -> tensor<?x4x68x196xf32>
// CHECK-NEXT:    %[[W:.*]] = graph.reshape %w : tensor<272x68x1x1xf32> -> tensor<4x68x68xf32>
// CHECK-NEXT:    %[[M:.*]] = graph.matmul %[[W]], %[[X]] : (tensor<4x68x68xf32>, tensor<?x4x68x196xf32>) -> tensor<?x4x68x196xf32>
// CHECK-NEXT:    %[[B:.*]] = graph.reshape %b : tensor<272xf32> -> tensor<4x68x1xf32>
// CHECK-NEXT:    %[[A:.*]] = graph.add %[[M]], %[[B]]
// CHECK-NEXT:    %[[Y:.*]] = graph.reshape %[[A]] dims(%[[N]]) : tensor<?x4x68x196xf32> -> tensor<?x272x14x14xf32>
// CHECK-NEXT:    func.return %[[Y]]
func.func @grouped_pointwise(%x: tensor<?x272x14x14xf32>) -> tensor<?x272x14x14xf32> {
  %w = graph.param "w" : tensor<272x68x1x1xf32>
  %b = graph.param "b" : tensor<272xf32>
  %y = graph.conv2d %x, %w, %b group 4 : (tensor<?x272x14x14xf32>, tensor<272x68x1x1xf32>, tensor<272xf32>) -> tensor<?x272x14x14xf32>
  func.return %y : tensor<?x272x14x14xf32>
}

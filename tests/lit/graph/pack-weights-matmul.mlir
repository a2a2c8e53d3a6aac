// RUN: mini-opt %s -p "graph-pack-weights{width=8},graph-lift-params" | filecheck %s

// A matmul whose B is a param (64 x 36, M = 32 rows: the matmul rule packs B's panels) reads it
// packed in 16-column panels (two 8-lane vectors), the last panel zero-padded (36 -> 48 columns):
// B[k, n] at [n floordiv 16, k, n mod 16]. The pad, reshape and transpose move to @main__params,
// run once when the weights are bound.
// CHECK-LABEL: func.func @main__params() -> (tensor<3x64x16xf32> {graph.name = "main:lifted0"})
// CHECK-NEXT:    %[[W:.*]] = graph.param "w" : tensor<64x36xf32>
// CHECK-NEXT:    %[[P:.*]] = graph.pad %[[W]] pads [0, 0, 0, 12] : tensor<64x36xf32> -> tensor<64x48xf32>
// CHECK-NEXT:    %[[R:.*]] = graph.reshape %[[P]] : tensor<64x48xf32> -> tensor<64x3x16xf32>
// CHECK-NEXT:    %[[T:.*]] = graph.transpose %[[R]] perm [1, 0, 2] : tensor<64x3x16xf32> -> tensor<3x64x16xf32>
// CHECK-NEXT:    func.return %[[T]] : tensor<3x64x16xf32>
// CHECK-LABEL: func.func @main(
// CHECK:         %[[L:.*]] = graph.param "main:lifted0" : tensor<3x64x16xf32>
// CHECK-NEXT:    graph.matmul %x, %[[L]] weight_tile 16 : (tensor<1x32x64xf32>, tensor<3x64x16xf32>) -> tensor<1x32x36xf32>
// A B computed per call (an input) and a one-row matmul (the rule reads B as it is) keep theirs.
// CHECK:         graph.matmul %{{.*}}, %win : (tensor<1x32x36xf32>, tensor<36x36xf32>) -> tensor<1x32x36xf32>
// CHECK:         graph.matmul %v, %w : (tensor<1x64xf32>, tensor<64x36xf32>) -> tensor<1x36xf32>
func.func @main(%x: tensor<1x32x64xf32>, %win: tensor<36x36xf32>, %v: tensor<1x64xf32>) -> (tensor<1x32x36xf32>, tensor<1x36xf32>) {
  %w = graph.param "w" : tensor<64x36xf32>
  %y = graph.matmul %x, %w : (tensor<1x32x64xf32>, tensor<64x36xf32>) -> tensor<1x32x36xf32>
  %z = graph.matmul %y, %win : (tensor<1x32x36xf32>, tensor<36x36xf32>) -> tensor<1x32x36xf32>
  %u = graph.matmul %v, %w : (tensor<1x64xf32>, tensor<64x36xf32>) -> tensor<1x36xf32>
  func.return %z, %u : tensor<1x32x36xf32>, tensor<1x36xf32>
}

// The packed form round-trips.
// CHECK-LABEL: func.func @packed(
// CHECK:         graph.matmul %a, %b weight_tile 24 : (tensor<4x512xf32>, tensor<86x512x24xf32>) -> tensor<4x2048xf32>
func.func @packed(%a: tensor<4x512xf32>, %b: tensor<86x512x24xf32>) -> tensor<4x2048xf32> {
  %y = graph.matmul %a, %b weight_tile 24 : (tensor<4x512xf32>, tensor<86x512x24xf32>) -> tensor<4x2048xf32>
  func.return %y : tensor<4x2048xf32>
}

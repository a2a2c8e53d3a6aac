// RUN: mini-opt %s -p graph-winograd --split-input-file | filecheck %s
// RUN: not mini-opt %s -p 'graph-winograd{tuning-db=%t.missing.jsonl}' 2>&1 | filecheck %s --check-prefix=NODB

// A conv's `graph.algorithm` (mini-tune's measured choice, tuning/algorithms.py) overrides
// graph-winograd's heuristic: this 8-channel conv is below its thresholds, yet it runs as F(4x4).
// CHECK-LABEL: func.func @small_but_chosen
// CHECK:         graph.winograd_input %x pads [1, 1] tiles [2, 2] tile 4
// CHECK-NOT:     graph.conv2d
// CHECK-NOT:     graph.algorithm
func.func @small_but_chosen(%x: tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32> {
  %w = graph.param "w" : tensor<8x8x3x3xf32>
  %y = graph.conv2d %x, %w pads [1, 1, 1, 1] {graph.algorithm = "winograd4"} : (tensor<1x8x8x8xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x8x8xf32>
  func.return %y : tensor<1x8x8x8xf32>
}

// -----

// "direct" keeps a conv the heuristic would rewrite (64 channels at 28x28 takes F(4x4) by default);
// the attribute is consumed.
// CHECK-LABEL: func.func @wide_but_direct
// CHECK:         graph.conv2d %x, %w pads [1, 1, 1, 1] :
// CHECK-NOT:     graph.winograd_input
func.func @wide_but_direct(%x: tensor<1x64x28x28xf32>) -> tensor<1x64x28x28xf32> {
  %w = graph.param "w" : tensor<64x64x3x3xf32>
  %y = graph.conv2d %x, %w pads [1, 1, 1, 1] {graph.algorithm = "direct"} : (tensor<1x64x28x28xf32>, tensor<64x64x3x3xf32>) -> tensor<1x64x28x28xf32>
  func.return %y : tensor<1x64x28x28xf32>
}

// -----

// A choice Winograd cannot honour (a strided conv) leaves the conv direct.
// CHECK-LABEL: func.func @strided
// CHECK:         graph.conv2d %x, %w strides [2, 2] pads [1, 1, 1, 1] :
func.func @strided(%x: tensor<1x64x28x28xf32>) -> tensor<1x64x14x14xf32> {
  %w = graph.param "w" : tensor<64x64x3x3xf32>
  %y = graph.conv2d %x, %w strides [2, 2] pads [1, 1, 1, 1] {graph.algorithm = "winograd2"} : (tensor<1x64x28x28xf32>, tensor<64x64x3x3xf32>) -> tensor<1x64x14x14xf32>
  func.return %y : tensor<1x64x14x14xf32>
}

// NODB: error: graph-winograd: tuning database '{{.*}}.missing.jsonl': no such file

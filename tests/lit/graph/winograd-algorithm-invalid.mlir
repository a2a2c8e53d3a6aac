// RUN: mini-opt %s -p graph-winograd --verify-diagnostics

// graph.algorithm names one of graph-winograd's algorithms.
func.func @bad(%x: tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32> {
  %w = graph.param "w" : tensor<8x8x3x3xf32>
  // expected-error @+1 {{graph-winograd: graph.algorithm must be one of direct, winograd2, winograd4, got 'winograd3'}}
  %y = graph.conv2d %x, %w pads [1, 1, 1, 1] {graph.algorithm = "winograd3"} : (tensor<1x8x8x8xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x8x8xf32>
  func.return %y : tensor<1x8x8x8xf32>
}

// RUN: mini-opt %s --split-input-file --verify-diagnostics

func.func @wrong_result(%x: tensor<1x8x6x6xf32>) -> tensor<16x9x4xf32> {
  // expected-error @+1 {{result shape 16x9x4 does not match the inferred shape 16x9x8}}
  %v = graph.winograd_input %x pads [1, 1] tiles [3, 3] : tensor<1x8x6x6xf32> -> tensor<16x9x4xf32>
  func.return %v : tensor<16x9x4xf32>
}

// -----

func.func @dynamic(%x: tensor<?x8x6x6xf32>) -> tensor<16x9x8xf32> {
  // expected-error @+1 {{input shape ?x8x6x6 must be static}}
  %v = graph.winograd_input %x pads [1, 1] tiles [3, 3] : tensor<?x8x6x6xf32> -> tensor<16x9x8xf32>
  func.return %v : tensor<16x9x8xf32>
}

// -----

func.func @pads(%x: tensor<1x8x6x6xf32>) -> tensor<16x9x8xf32> {
  // expected-error @+1 {{pads must be two non-negative counts (top, left), got [1, 1, 1, 1]}}
  %v = graph.winograd_input %x pads [1, 1, 1, 1] tiles [3, 3] : tensor<1x8x6x6xf32> -> tensor<16x9x8xf32>
  func.return %v : tensor<16x9x8xf32>
}

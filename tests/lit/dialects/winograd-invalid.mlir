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

// -----

func.func @output_tiles(%m: tensor<16x9x8xf32>) -> tensor<1x8x7x7xf32> {
  // expected-error @+1 {{size [7, 7] is not covered by exactly [3, 3] tiles of 2}}
  %y = graph.winograd_output %m tiles [3, 3] size [7, 7] : tensor<16x9x8xf32> -> tensor<1x8x7x7xf32>
  func.return %y : tensor<1x8x7x7xf32>
}

// -----

func.func @output_block(%m: tensor<16x9x12xf32>) -> tensor<1x1x6x6x8xf32> {
  // expected-error @+1 {{block 8 does not divide the 12 channels}}
  %y = graph.winograd_output %m tiles [3, 3] size [6, 6] block 8 : tensor<16x9x12xf32> -> tensor<1x1x6x6x8xf32>
  func.return %y : tensor<1x1x6x6x8xf32>
}

// -----

func.func @output_elements(%m: tensor<16x9x8xf32>) -> tensor<1x8x6x6xf32> {
  // expected-error @+1 {{input 16x9x8 does not hold 36 tile elements of a multiple of 9 tiles}}
  %y = graph.winograd_output %m tiles [3, 3] size [6, 6] tile 4 : tensor<16x9x8xf32> -> tensor<1x8x6x6xf32>
  func.return %y : tensor<1x8x6x6xf32>
}

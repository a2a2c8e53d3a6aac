// RUN: mini-opt %s -p 'graph-winograd{min-channels=8 min-pixels=1}' --split-input-file | filecheck %s
// RUN: mini-opt %s -p 'graph-winograd{min-channels=8 min-pixels=1},graph-lift-params' --split-input-file | filecheck %s --check-prefix=LIFT
// RUN: mini-opt %s -p graph-winograd --split-input-file | filecheck %s --check-prefix=DEFAULT
// RUN: mini-opt %s -p 'graph-winograd{min-channels=8 min-pixels=1 tile=4}' --split-input-file | filecheck %s --check-prefix=F4
// RUN: not mini-opt %s -p 'graph-winograd{tile=3}' --split-input-file 2>&1 | filecheck %s --check-prefix=BAD

// A 3x3 stride-1 conv becomes F(2x2, 3x3): the filter transform G w G^T (weight-only), the input
// transform (one op), a batched matmul over the 16 tile elements, the output transform A^T M A
// with the tiles interleaved back into rows and the odd last row dropped (one op), the bias.
// CHECK-LABEL: func.func @odd_rows
// CHECK:         %[[G:.*]] = graph.matmul %{{.*}}, %{{.*}} : (tensor<4x3xf32>, tensor<64x3x3xf32>) -> tensor<64x4x3xf32>
// CHECK:         %[[GG:.*]] = graph.matmul %[[G]], %{{.*}} : (tensor<64x4x3xf32>, tensor<3x4xf32>) -> tensor<64x4x4xf32>
// CHECK:         %[[U:.*]] = graph.transpose %{{.*}} perm [2, 1, 0] : tensor<8x8x16xf32> -> tensor<16x8x8xf32>
// CHECK:         %[[V:.*]] = graph.winograd_input %x pads [1, 1] tiles [4, 3] : tensor<1x8x7x6xf32> -> tensor<16x12x8xf32>
// CHECK:         %[[M:.*]] = graph.matmul %[[V]], %[[U]] : (tensor<16x12x8xf32>, tensor<16x8x8xf32>) -> tensor<16x12x8xf32>
// CHECK-NEXT:    %[[C:.*]] = graph.winograd_output %[[M]] tiles [4, 3] size [7, 6] : tensor<16x12x8xf32> -> tensor<1x8x7x6xf32>
// CHECK-NEXT:    %[[B:.*]] = graph.reshape %b : tensor<8xf32> -> tensor<1x8x1x1xf32>
// CHECK:         %y = graph.add %[[C]], %[[B]]
// CHECK-NOT:     graph.conv2d
// CHECK:         graph.relu %y
// The filter transform runs once, at load time.
// LIFT-LABEL: func.func @odd_rows__params
// LIFT:         graph.transpose %{{.*}} perm [2, 1, 0] : tensor<8x8x16xf32> -> tensor<16x8x8xf32>
// LIFT-LABEL: func.func @odd_rows(
// LIFT:         graph.winograd_input
// F(4x4, 3x3): 6x6 windows, 36 tile elements, 4x4 output tiles (the 8x8 result cropped to 7x6).
// F4-LABEL: func.func @odd_rows
// F4:         graph.matmul %{{.*}}, %{{.*}} : (tensor<6x3xf32>, tensor<64x3x3xf32>) -> tensor<64x6x3xf32>
// F4:         graph.winograd_input %x pads [1, 1] tiles [2, 2] tile 4 : tensor<1x8x7x6xf32> -> tensor<36x4x8xf32>
// F4:         graph.matmul %{{.*}}, %{{.*}} : (tensor<36x4x8xf32>, tensor<36x8x8xf32>) -> tensor<36x4x8xf32>
// F4:         graph.winograd_output %{{.*}} tiles [2, 2] size [7, 6] tile 4 : tensor<36x4x8xf32> -> tensor<1x8x7x6xf32>
// BAD: error: graph-winograd: tile must be 0 (auto) or one of [2, 4], got 3
// By default only convs with at least 64 channels and 14x14 output pixels.
// DEFAULT-LABEL: func.func @odd_rows
// DEFAULT:         graph.conv2d
func.func @odd_rows(%x: tensor<1x8x7x6xf32>) -> tensor<1x8x7x6xf32> {
  %w = graph.param "w" : tensor<8x8x3x3xf32>
  %b = graph.param "b" : tensor<8xf32>
  %y = graph.conv2d %x, %w, %b pads [1, 1, 1, 1] : (tensor<1x8x7x6xf32>, tensor<8x8x3x3xf32>, tensor<8xf32>) -> tensor<1x8x7x6xf32>
  %r = graph.relu %y : tensor<1x8x7x6xf32>
  func.return %r : tensor<1x8x7x6xf32>
}

// -----

// Channel-blocked in and out (graph-layout's NCHW{8}c): the input transform reads the blocks,
// the output interleaves the tiles into a blocked result; no bias.
// CHECK-LABEL: func.func @blocked
// CHECK:         graph.winograd_input %x pads [0, 0] tiles [3, 3] : tensor<2x2x8x8x8xf32> -> tensor<16x18x16xf32>
// CHECK:         %[[Y:.*]] = graph.winograd_output %{{.*}} tiles [3, 3] size [6, 6] block 8 : tensor<16x18x8xf32> -> tensor<2x1x6x6x8xf32>
// CHECK-NEXT:    func.return %[[Y]]
func.func @blocked(%x: tensor<2x2x8x8x8xf32>) -> tensor<2x1x6x6x8xf32> {
  %w = graph.param "w" : tensor<8x16x3x3xf32>
  %y = graph.conv2d %x, %w block 8 : (tensor<2x2x8x8x8xf32>, tensor<8x16x3x3xf32>) -> tensor<2x1x6x6x8xf32>
  func.return %y : tensor<2x1x6x6x8xf32>
}

// -----

// Left as they are: a strided conv, a 1x1 conv, a grouped conv, a dilated one, a weight computed
// per call (an input), a dynamic batch.
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-5: graph.conv2d
// CHECK-NOT:     graph.winograd_input
func.func @kept(%x: tensor<1x8x8x8xf32>, %win: tensor<8x8x3x3xf32>) -> tensor<1x8x4x4xf32> {
  %w = graph.param "w" : tensor<8x8x3x3xf32>
  %w1 = graph.param "w1" : tensor<8x8x1x1xf32>
  %wg = graph.param "wg" : tensor<8x4x3x3xf32>
  %a = graph.conv2d %x, %w1 : (tensor<1x8x8x8xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x8x8xf32>
  %b = graph.conv2d %a, %wg pads [1, 1, 1, 1] group 2 : (tensor<1x8x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x8x8xf32>
  %c = graph.conv2d %b, %w pads [2, 2, 2, 2] dilations [2, 2] : (tensor<1x8x8x8xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x8x8xf32>
  %d = graph.conv2d %c, %win pads [1, 1, 1, 1] : (tensor<1x8x8x8xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x8x8xf32>
  %e = graph.conv2d %d, %w strides [2, 2] pads [1, 1, 1, 1] : (tensor<1x8x8x8xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x4x4xf32>
  func.return %e : tensor<1x8x4x4xf32>
}

// -----

// CHECK-LABEL: func.func @dynamic_batch
// CHECK:         graph.conv2d
func.func @dynamic_batch(%x: tensor<?x8x8x8xf32>) -> tensor<?x8x8x8xf32> {
  %w = graph.param "w" : tensor<8x8x3x3xf32>
  %y = graph.conv2d %x, %w pads [1, 1, 1, 1] : (tensor<?x8x8x8xf32>, tensor<8x8x3x3xf32>) -> tensor<?x8x8x8xf32>
  func.return %y : tensor<?x8x8x8xf32>
}

// RUN: mini-opt %s -p 'graph-fuse{explain=true max-depth=7}' --verify-diagnostics --split-input-file | filecheck %s
// RUN: mini-opt %s -p 'graph-fuse{max-depth=3}' --split-input-file | filecheck %s --check-prefix=DEPTH3

// CHECK-LABEL: func.func private @fused_matmul_exp
// CHECK-LABEL: func.func @matmul_softmax
// CHECK:         graph.softmax
func.func @matmul_softmax(%x: tensor<2x8xf32>, %w: tensor<8x16xf32>) -> tensor<2x16xf32> {
  %m = graph.matmul %x, %w : (tensor<2x8xf32>, tensor<8x16xf32>) -> tensor<2x16xf32>
  // expected-remark @below {{not fused into 'graph.softmax': reduction cannot absorb a matmul producer}}
  %e = graph.exp %m : tensor<2x16xf32>
  %s = graph.softmax %e axis 1 : tensor<2x16xf32>
  func.return %s : tensor<2x16xf32>
}

// -----

// Nine elementwise ops in a chain: max-depth 7 splits it into 7 + 2.
// CHECK-LABEL: func.func private @fused_neg_exp_tanh_abs
// CHECK-COUNT-7: = graph.
// CHECK-NEXT:    func.return
// CHECK-LABEL: func.func private @fused_sigmoid_abs
// CHECK-NEXT:    graph.sigmoid
// CHECK-NEXT:    graph.abs
// CHECK-NEXT:    func.return
// CHECK-LABEL: func.func @long_chain
// CHECK-NEXT:    %[[A:.*]] = func.call @fused_neg_exp_tanh_abs(
// CHECK-NEXT:    %[[B:.*]] = func.call @fused_sigmoid_abs(%[[A]])
// CHECK-NEXT:    func.return %[[B]]
// DEPTH3-LABEL: func.func @long_chain
// DEPTH3-COUNT-3: func.call
// DEPTH3-NEXT:    func.return
func.func @long_chain(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.neg %x : tensor<4xf32>
  %1 = graph.exp %0 : tensor<4xf32>
  %2 = graph.tanh %1 : tensor<4xf32>
  %3 = graph.abs %2 : tensor<4xf32>
  %4 = graph.relu %3 : tensor<4xf32>
  %5 = graph.neg %4 : tensor<4xf32>
  // expected-remark @below {{not fused into 'graph.sigmoid': group reached max-depth 7}}
  %6 = graph.exp %5 : tensor<4xf32>
  %7 = graph.sigmoid %6 : tensor<4xf32>
  %8 = graph.abs %7 : tensor<4xf32>
  func.return %8 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @also_returned
func.func @also_returned(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  // expected-remark @below {{not fused into 'graph.exp': its result is also returned from the function}}
  %t = graph.relu %x : tensor<4xf32>
  %e = graph.exp %t : tensor<4xf32>
  func.return %t, %e : tensor<4xf32>, tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @into_conv
func.func @into_conv(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  // expected-remark @below {{not fused into 'graph.conv2d': 'graph.conv2d' cannot absorb a producer (out-elementwise-fusable)}}
  %e = graph.relu %x : tensor<1x3x8x8xf32>
  %c = graph.conv2d %e, %w : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %c : tensor<1x4x6x6xf32>
}

// -----

// CHECK-LABEL: func.func @reduce_then_elementwise
func.func @reduce_then_elementwise(%x: tensor<4x5xf32>) -> tensor<4x1xf32> {
  // expected-remark @below {{not fused into 'graph.exp': a reduction ('graph.reduce_max') does not fuse into its consumers}}
  %m = graph.reduce_max %x axes [1] : tensor<4x5xf32> -> tensor<4x1xf32>
  %e = graph.exp %m : tensor<4x1xf32>
  func.return %e : tensor<4x1xf32>
}

// -----

// A channel concat at batch 1 (its parts are contiguous runs of the output) stays in no group: its
// producers write into it (mem-concat-in-place). At batch 2 it fuses with its producer and consumer.
// CHECK-LABEL: func.func @concat_in_place
// CHECK-NEXT:    graph.relu
// CHECK-NEXT:    graph.concat
// CHECK-NEXT:    graph.neg
func.func @concat_in_place(%x: tensor<1x2x4xf32>, %y: tensor<1x3x4xf32>) -> tensor<1x5x4xf32> {
  // expected-remark @below {{not fused into 'graph.concat': 'graph.concat' stays apart: its parts are contiguous, its producers write into it}}
  %a = graph.relu %x : tensor<1x2x4xf32>
  // expected-remark @below {{not fused into 'graph.neg': a concat whose parts are contiguous: its producers write into it (mem-concat-in-place)}}
  %c = graph.concat %a, %y axis 1 : (tensor<1x2x4xf32>, tensor<1x3x4xf32>) -> tensor<1x5x4xf32>
  %r = graph.neg %c : tensor<1x5x4xf32>
  func.return %r : tensor<1x5x4xf32>
}

// -----

// CHECK-LABEL: func.func private @fused_relu_concat_neg
// CHECK-LABEL: func.func @concat_copies
// CHECK-NEXT:    func.call @fused_relu_concat_neg
func.func @concat_copies(%x: tensor<2x2x4xf32>, %y: tensor<2x3x4xf32>) -> tensor<2x5x4xf32> {
  %a = graph.relu %x : tensor<2x2x4xf32>
  %c = graph.concat %a, %y axis 1 : (tensor<2x2x4xf32>, tensor<2x3x4xf32>) -> tensor<2x5x4xf32>
  %r = graph.neg %c : tensor<2x5x4xf32>
  func.return %r : tensor<2x5x4xf32>
}

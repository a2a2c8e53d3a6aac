// RUN: mini-opt %s -p loop-fuse --verify-diagnostics

// A primitive function that was not legalized: loop-fuse says what it expected.
func.func private @fused_relu_exp(%x: tensor<4xf32>) -> tensor<4xf32> attributes {graph.primitive} {
  // expected-error @below {{loop-fuse: cannot fuse 'graph.relu' in primitive function @fused_relu_exp (expected graph.call_kernel, graph.dim, graph.reshape and index arithmetic; run graph-legalize first)}}
  %r = graph.relu %x : tensor<4xf32>
  %e = graph.exp %r : tensor<4xf32>
  func.return %e : tensor<4xf32>
}

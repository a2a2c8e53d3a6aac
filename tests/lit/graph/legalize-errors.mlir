// RUN: mini-opt %s --split-input-file --verify-diagnostics --allow-unregistered-dialect -p graph-legalize

// Arithmetic on booleans is rejected (as in ONNX) at the op's location; the pass fails cleanly.
func.func @bool_add(%x: tensor<4xi1>, %y: tensor<4xi1>) -> tensor<4xi1> {
  // expected-error @+1 {{failed to legalize operation 'graph.add': arithmetic on i1 (bool) tensors is not defined; use graph.and / graph.or / graph.xor}}
  %z = graph.add %x, %y : tensor<4xi1>
  func.return %z : tensor<4xi1>
}

// -----

func.func @bool_sum(%x: tensor<2x4xi1>) -> tensor<2x1xi1> {
  // expected-error @+1 {{failed to legalize operation 'graph.reduce_sum': sum / mean of an i1 (bool) tensor: cast it first}}
  %y = graph.reduce_sum %x axes [1] : tensor<2x4xi1> -> tensor<2x1xi1>
  func.return %y : tensor<2x1xi1>
}

// -----

// An op of the graph namespace that no dialect defines (parsed generically) is reported too.
func.func @unknown_graph_op(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{failed to legalize operation 'graph.foo'}}
  %y = "graph.foo"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

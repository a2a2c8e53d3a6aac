// RUN: mini-opt %s -p graph-bufferize --split-input-file --verify-diagnostics

// A graph op that graph-legalize should have turned into a kernel call.
func.func @not_legalized(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{failed to bufferize operation 'graph.relu' (run graph-legalize first)}}
  %r = graph.relu %x : tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----

func.func @resource_constant() -> tensor<2xf32> {
  // expected-error @+1 {{failed to bufferize operation 'graph.constant': its dense_resource value cannot be read at compile time; make it a graph.param}}
  %c = graph.constant dense_resource<blob> : tensor<2xf32>
  func.return %c : tensor<2xf32>
}

// -----

func.func @missing_kernel(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{failed to bufferize operation 'graph.call_kernel': no function @nowhere}}
  %r = graph.call_kernel @nowhere(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----

func.func private @k(%a: memref<?xf32>, %b: memref<?xf32>) attributes {loop.kernel} {
  func.return
}
func.func @kernel_type_mismatch(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{failed to bufferize operation 'graph.call_kernel': buffer #0 of @k has type memref<?xf32>, the call passes memref<4xf32>}}
  %r = graph.call_kernel @k(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----

func.func private @k(%a: memref<4xf32>, %b: memref<4xf32>) attributes {loop.kernel} {
  func.return
}
func.func @kernel_arity(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{failed to bufferize operation 'graph.call_kernel': @k takes 2 buffers, the call passes 3 (inputs then outputs)}}
  %r = graph.call_kernel @k(%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----

func.func private @other(%x: tensor<4xf32>) -> tensor<4xf32>
func.func @tensor_call(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{failed to bufferize operation 'func.call': it uses tensor values}}
  %r = func.call @other(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----

func.func @param_two_types() -> (tensor<4xf32>, tensor<2x2xf32>) {
  %a = graph.param "w" : tensor<4xf32>
  // expected-error @+1 {{graph.param "w" is used with two types in @param_two_types: memref<4xf32> and memref<2x2xf32>}}
  %b = graph.param "w" : tensor<2x2xf32>
  func.return %a, %b : tensor<4xf32>, tensor<2x2xf32>
}

// RUN: mini-opt %s --split-input-file --verify-diagnostics

%x, %i, %u = "test.op"() : () -> (tensor<4x5xf32>, tensor<2x3xi64>, tensor<2x3xf32>)
// expected-error @+1 {{reduction must be one of none, add, mul, max, min, got sub}}
%y = "graph.scatter_elements"(%x, %i, %u) <{axis = 0 : i64, reduction = "sub"}> : (tensor<4x5xf32>, tensor<2x3xi64>, tensor<2x3xf32>) -> tensor<4x5xf32>

// -----

%x, %i, %u = "test.op"() : () -> (tensor<4x5xf32>, tensor<2x3xi64>, tensor<2x2xf32>)
// expected-error @+1 {{must have one shape}}
%y = "graph.scatter_elements"(%x, %i, %u) <{axis = 0 : i64}> : (tensor<4x5xf32>, tensor<2x3xi64>, tensor<2x2xf32>) -> tensor<4x5xf32>

// -----

%x, %i, %u = "test.op"() : () -> (tensor<4x5xf32>, tensor<2x1xi64>, tensor<2x4xf32>)
// expected-error @+1 {{updates 2x4 must have shape 2x5}}
%y = "graph.scatter_nd"(%x, %i, %u) : (tensor<4x5xf32>, tensor<2x1xi64>, tensor<2x4xf32>) -> tensor<4x5xf32>

// -----

%x, %i, %u = "test.op"() : () -> (tensor<4x5xf32>, tensor<2x3xi64>, tensor<2xf32>)
// expected-error @+1 {{index depth 3 exceeds the data rank 2}}
%y = "graph.scatter_nd"(%x, %i, %u) : (tensor<4x5xf32>, tensor<2x3xi64>, tensor<2xf32>) -> tensor<4x5xf32>

// -----

%x = "test.op"() : () -> (tensor<4x3xf32>)
// expected-error @+1 {{k 4 must be in [0, 3] (the axis size)}}
%v, %i = "graph.topk"(%x) <{k = 4 : i64, axis = 1 : i64}> : (tensor<4x3xf32>) -> (tensor<4x4xf32>, tensor<4x4xi64>)

// -----

%x, %c = "test.op"() : () -> (tensor<3x4xf32>, tensor<1xi64>)
// expected-error @+1 {{count must be a 0-d i64 tensor}}
%y = "graph.nonzero"(%x, %c) : (tensor<3x4xf32>, tensor<1xi64>) -> tensor<2x?xi64>

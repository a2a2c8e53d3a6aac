// RUN: mini-opt %s --split-input-file --verify-diagnostics

// One verifier error per case, in generic form (custom syntax would fail while parsing).
%0, %1 = "test.op"() : () -> (tensor<2x3xf32>, tensor<4xf32>)
// expected-error @+1 {{shapes 2x3 and 4 are not broadcast-compatible: dim 1 of lhs (3) vs dim 0 of rhs (4)}}
%r = "graph.add"(%0, %1) : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>

// -----

%0, %1 = "test.op"() : () -> (tensor<?x3xf32>, tensor<2x?x4xf32>)
// expected-error @+1 {{shapes ?x3 and 2x?x4 are not broadcast-compatible: dim 1 of lhs (3) vs dim 2 of rhs (4)}}
%r = "graph.mul"(%0, %1) : (tensor<?x3xf32>, tensor<2x?x4xf32>) -> tensor<2x?x4xf32>

// -----

%0, %1 = "test.op"() : () -> (tensor<4xf32>, tensor<4xf16>)
// expected-error @+1 {{element type of rhs (f16) does not match lhs (f32)}}
%r = "graph.sub"(%0, %1) : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>

// -----

%0, %1 = "test.op"() : () -> (tensor<4xf32>, tensor<4xf32>)
// expected-error @+1 {{operand element type must be an integer type, got f32}}
%r = "graph.and"(%0, %1) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>

// -----

%0, %1 = "test.op"() : () -> (tensor<4xf32>, tensor<4xf32>)
// expected-error @+1 {{result element type f16 must be f32}}
%r = "graph.add"(%0, %1) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf16>

// -----

%0, %1 = "test.op"() : () -> (tensor<4xf32>, tensor<4xf32>)
// expected-error @+1 {{result element type f32 must be i1}}
%r = "graph.lt"(%0, %1) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>

// -----

%0, %1 = "test.op"() : () -> (tensor<?x4xf32>, tensor<4xf32>)
// expected-error @+1 {{result shape ?x5 does not match the inferred shape ?x4}}
%r = "graph.add"(%0, %1) : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x5xf32>

// -----

%0, %1 = "test.op"() : () -> (tensor<4xf32>, tensor<4xf32>)
// expected-error @+1 {{float mod requires fmod = true}}
%r = "graph.mod"(%0, %1) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>

// -----

%0 = "test.op"() : () -> (tensor<4xi32>)
// expected-error @+1 {{input element type must be a float type, got i32}}
%r = "graph.exp"(%0) : (tensor<4xi32>) -> tensor<4xi32>

// -----

%0 = "test.op"() : () -> (tensor<4xf32>)
// expected-error @+1 {{input element type must be i1 type, got f32}}
%r = "graph.not"(%0) : (tensor<4xf32>) -> tensor<4xf32>

// -----

%0 = "test.op"() : () -> (tensor<4xf32>)
// expected-error @+1 {{attribute tensor<4xf32> expected from variable 'T', but got tensor<5xf32>}}
%r = "graph.relu"(%0) : (tensor<4xf32>) -> tensor<5xf32>

// -----

%0 = "test.op"() : () -> (tensor<4xf32>)
// expected-error @+1 {{approximate must be "none" or "tanh", got "fast"}}
%r = "graph.gelu"(%0) <{approximate = "fast"}> : (tensor<4xf32>) -> tensor<4xf32>

// -----

%0 = "test.op"() : () -> (tensor<4xf32>)
// expected-error @+1 {{min (6.0) must not be greater than max (0.0)}}
%r = "graph.clip"(%0) <{min = 6.0 : f64, max = 0.0 : f64}> : (tensor<4xf32>) -> tensor<4xf32>

// -----

%0, %1 = "test.op"() : () -> (tensor<2x3xf32>, tensor<4x5xf32>)
// expected-error @+1 {{matmul contraction dims clash: lhs dim 1 (3) vs rhs dim 0 (4)}}
%r = "graph.matmul"(%0, %1) : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>

// -----

%0, %1 = "test.op"() : () -> (tensor<2x3x4xf32>, tensor<5x4x6xf32>)
// expected-error @+1 {{shapes 2 and 5 are not broadcast-compatible: dim 0 of lhs (2) vs dim 0 of rhs (5)}}
%r = "graph.matmul"(%0, %1) : (tensor<2x3x4xf32>, tensor<5x4x6xf32>) -> tensor<2x3x6xf32>

// -----

%0, %1 = "test.op"() : () -> (tensor<f32>, tensor<4xf32>)
// expected-error @+1 {{matmul operands must have rank >= 1}}
%r = "graph.matmul"(%0, %1) : (tensor<f32>, tensor<4xf32>) -> tensor<f32>

// -----

%0, %1 = "test.op"() : () -> (tensor<?x4xf32>, tensor<4x8xf32>)
// expected-error @+1 {{result shape ?x7 does not match the inferred shape ?x8}}
%r = "graph.matmul"(%0, %1) : (tensor<?x4xf32>, tensor<4x8xf32>) -> tensor<?x7xf32>

// -----

%0, %1 = "test.op"() : () -> (tensor<?x4xf32>, tensor<4x8xf16>)
// expected-error @+1 {{element type of rhs (f16) does not match lhs (f32)}}
%r = "graph.matmul"(%0, %1) : (tensor<?x4xf32>, tensor<4x8xf16>) -> tensor<?x8xf32>

// -----

%0, %1 = "test.op"() : () -> (tensor<1x3x8xf32>, tensor<4x3x3x3xf32>)
// expected-error @+1 {{input must have rank 4 (NCHW), got 1x3x8}}
%r = "graph.conv2d"(%0, %1) <{strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64}> : (tensor<1x3x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>

// -----

%0, %1 = "test.op"() : () -> (tensor<1x3x8x8xf32>, tensor<4x3x3xf32>)
// expected-error @+1 {{weight must have rank 4 (O, C/group, KH, KW), got 4x3x3}}
%r = "graph.conv2d"(%0, %1) <{strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64}> : (tensor<1x3x8x8xf32>, tensor<4x3x3xf32>) -> tensor<1x4x6x6xf32>

// -----

%0, %1 = "test.op"() : () -> (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>)
// expected-error @+1 {{strides must have 2 entries, got 1}}
%r = "graph.conv2d"(%0, %1) <{strides = array<i64: 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64}> : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>

// -----

%0, %1 = "test.op"() : () -> (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>)
// expected-error @+1 {{pads must have 4 entries, got 2}}
%r = "graph.conv2d"(%0, %1) <{strides = array<i64: 1, 1>, pads = array<i64: 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64}> : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>

// -----

%0, %1 = "test.op"() : () -> (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>)
// expected-error @+1 {{dilations must have 2 entries, got 3}}
%r = "graph.conv2d"(%0, %1) <{strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1, 1>, group = 1 : i64}> : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>

// -----

%0, %1 = "test.op"() : () -> (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>)
// expected-error @+1 {{strides must be >= 1, got [0, 1]}}
%r = "graph.conv2d"(%0, %1) <{strides = array<i64: 0, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64}> : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>

// -----

%0, %1 = "test.op"() : () -> (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>)
// expected-error @+1 {{pads must be >= 0, got [0, -1, 0, 0]}}
%r = "graph.conv2d"(%0, %1) <{strides = array<i64: 1, 1>, pads = array<i64: 0, -1, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64}> : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>

// -----

%0, %1 = "test.op"() : () -> (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>)
// expected-error @+1 {{dilations must be >= 1, got [0, 1]}}
%r = "graph.conv2d"(%0, %1) <{strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 0, 1>, group = 1 : i64}> : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>

// -----

%0, %1 = "test.op"() : () -> (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>)
// expected-error @+1 {{group must be >= 1, got 0}}
%r = "graph.conv2d"(%0, %1) <{strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 0 : i64}> : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>

// -----

%0, %1 = "test.op"() : () -> (tensor<1x6x8x8xf32>, tensor<4x3x3x3xf32>)
// expected-error @+1 {{input channels (6) must equal weight dim 1 (3) * group (1)}}
%r = "graph.conv2d"(%0, %1) <{strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64}> : (tensor<1x6x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>

// -----

%0, %1 = "test.op"() : () -> (tensor<1x6x8x8xf32>, tensor<3x3x3x3xf32>)
// expected-error @+1 {{output channels (3) must be divisible by group (2)}}
%r = "graph.conv2d"(%0, %1) <{strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 2 : i64}> : (tensor<1x6x8x8xf32>, tensor<3x3x3x3xf32>) -> tensor<1x3x6x6xf32>

// -----

%0, %1, %2 = "test.op"() : () -> (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<5xf32>)
// expected-error @+1 {{bias shape 5 must be (4), one per output channel}}
%r = "graph.conv2d"(%0, %1, %2) <{strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64}> : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<5xf32>) -> tensor<1x4x6x6xf32>

// -----

%0, %1 = "test.op"() : () -> (tensor<1x3x2x2xf32>, tensor<4x3x3x3xf32>)
// expected-error @+1 {{window extent 3 is larger than the padded input 2}}
%r = "graph.conv2d"(%0, %1) <{strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64}> : (tensor<1x3x2x2xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x1x1xf32>

// -----

%0, %1 = "test.op"() : () -> (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>)
// expected-error @+1 {{result shape 1x4x8x8 does not match the inferred shape 1x4x4x4}}
%r = "graph.conv2d"(%0, %1) <{strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64}> : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>

// -----

%0, %1 = "test.op"() : () -> (tensor<1x3x8x8xi32>, tensor<4x3x3x3xi32>)
// expected-error @+1 {{input element type must be a float type, got i32}}
%r = "graph.conv2d"(%0, %1) <{strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64}> : (tensor<1x3x8x8xi32>, tensor<4x3x3x3xi32>) -> tensor<1x4x6x6xi32>

// -----

%0 = "test.op"() : () -> (tensor<1x3x8xf32>)
// expected-error @+1 {{input must have rank 4 (NCHW), got 1x3x8}}
%r = "graph.max_pool2d"(%0) <{kernel = array<i64: 2, 2>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = false}> : (tensor<1x3x8xf32>) -> tensor<1x3x7xf32>

// -----

%0 = "test.op"() : () -> (tensor<1x3x8x8xf32>)
// expected-error @+1 {{kernel must have 2 entries, got 1}}
%r = "graph.max_pool2d"(%0) <{kernel = array<i64: 2>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = false}> : (tensor<1x3x8x8xf32>) -> tensor<1x3x7x7xf32>

// -----

%0 = "test.op"() : () -> (tensor<1x3x8x8xf32>)
// expected-error @+1 {{kernel sizes must be >= 1, got [0, 2]}}
%r = "graph.avg_pool2d"(%0) <{kernel = array<i64: 0, 2>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = false, count_include_pad = false}> : (tensor<1x3x8x8xf32>) -> tensor<1x3x7x7xf32>

// -----

%0 = "test.op"() : () -> (tensor<1x3x7x7xf32>)
// expected-error @+1 {{result shape 1x3x4x4 does not match the inferred shape 1x3x3x3}}
%r = "graph.max_pool2d"(%0) <{kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = false}> : (tensor<1x3x7x7xf32>) -> tensor<1x3x4x4xf32>

// -----

%0 = "test.op"() : () -> (tensor<1x3x7x7xf32>)
// expected-error @+1 {{result shape 1x3x3x3 does not match the inferred shape 1x3x4x4}}
%r = "graph.avg_pool2d"(%0) <{kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = true, count_include_pad = false}> : (tensor<1x3x7x7xf32>) -> tensor<1x3x3x3xf32>

// -----

%0 = "test.op"() : () -> (tensor<2x3xf32>)
// expected-error @+1 {{input must have rank >= 3 (N, C, spatial...), got 2x3}}
%r = "graph.global_avg_pool"(%0) : (tensor<2x3xf32>) -> tensor<2x3xf32>

// -----

%0 = "test.op"() : () -> (tensor<2x3x4x4xf32>)
// expected-error @+1 {{result shape 2x3x1 does not match the inferred shape 2x3x1x1}}
%r = "graph.global_max_pool"(%0) : (tensor<2x3x4x4xf32>) -> tensor<2x3x1xf32>

// -----

%0 = "test.op"() : () -> (tensor<2x3xf32>)
// expected-error @+1 {{axis 2 is out of range for rank 2 (expected 0..1)}}
%r = "graph.softmax"(%0) <{axis = 2 : i64}> : (tensor<2x3xf32>) -> tensor<2x3xf32>

// -----

%0 = "test.op"() : () -> (tensor<2x3xf32>)
// expected-error @+1 {{axis -1 is out of range for rank 2 (expected 0..1)}}
%r = "graph.log_softmax"(%0) <{axis = -1 : i64}> : (tensor<2x3xf32>) -> tensor<2x3xf32>

// -----

%0 = "test.op"() : () -> (tensor<2x3xi32>)
// expected-error @+1 {{input element type must be a float type, got i32}}
%r = "graph.softmax"(%0) <{axis = 1 : i64}> : (tensor<2x3xi32>) -> tensor<2x3xi32>

// -----

%0, %1 = "test.op"() : () -> (tensor<2x3x8xf32>, tensor<4xf32>)
// expected-error @+1 {{scale shape 4 does not broadcast to the normalized shape 8}}
%r = "graph.layer_norm"(%0, %1) <{axis = 2 : i64, epsilon = 1.0e-05 : f64}> : (tensor<2x3x8xf32>, tensor<4xf32>) -> tensor<2x3x8xf32>

// -----

%0, %1 = "test.op"() : () -> (tensor<2x3x8xf32>, tensor<8xf32>)
// expected-error @+1 {{axis 3 is out of range for rank 3 (expected 0..2)}}
%r = "graph.layer_norm"(%0, %1) <{axis = 3 : i64, epsilon = 1.0e-05 : f64}> : (tensor<2x3x8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32>

// -----

%0, %1, %2 = "test.op"() : () -> (tensor<2x3x8xf32>, tensor<3x8xf32>, tensor<9xf32>)
// expected-error @+1 {{bias shape 9 does not broadcast to the normalized shape 3x8}}
%r = "graph.layer_norm"(%0, %1, %2) <{axis = 1 : i64, epsilon = 1.0e-05 : f64}> : (tensor<2x3x8xf32>, tensor<3x8xf32>, tensor<9xf32>) -> tensor<2x3x8xf32>

// -----

%0, %1 = "test.op"() : () -> (tensor<2x4x5x5xf32>, tensor<3xf32>)
// expected-error @+1 {{scale shape 3 must be (C) with C = input dim 1 (4)}}
%r = "graph.batch_norm"(%0, %1, %1, %1, %1) <{epsilon = 1.0e-05 : f64}> : (tensor<2x4x5x5xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x4x5x5xf32>

// -----

%0, %1 = "test.op"() : () -> (tensor<4xf32>, tensor<4xf32>)
// expected-error @+1 {{input must have rank >= 2 (N, C, ...), got 4}}
%r = "graph.batch_norm"(%0, %1, %1, %1, %1) <{epsilon = 1.0e-05 : f64}> : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>

// -----

%0 = "test.op"() : () -> (tensor<1x4x5x5xf32>)
// expected-error @+1 {{size must be >= 1, got 0}}
%r = "graph.lrn"(%0) <{size = 0 : i64, alpha = 1.0e-04 : f64, beta = 0.75 : f64, bias = 1.0 : f64}> : (tensor<1x4x5x5xf32>) -> tensor<1x4x5x5xf32>

// -----

%0 = "test.op"() : () -> (tensor<2x3xf32>)
// expected-error @+1 {{reduction axis 2 is out of range for rank 2 (expected 0..1)}}
%r = "graph.reduce_sum"(%0) <{axes = array<i64: 2>, keepdims = true}> : (tensor<2x3xf32>) -> tensor<2x3xf32>

// -----

%0 = "test.op"() : () -> (tensor<2x3xf32>)
// expected-error @+1 {{axes [1, 0] must be sorted and unique}}
%r = "graph.reduce_mean"(%0) <{axes = array<i64: 1, 0>, keepdims = true}> : (tensor<2x3xf32>) -> tensor<1x1xf32>

// -----

%0 = "test.op"() : () -> (tensor<2x3xf32>)
// expected-error @+1 {{result shape 2 does not match the inferred shape 2x1}}
%r = "graph.reduce_max"(%0) <{axes = array<i64: 1>, keepdims = true}> : (tensor<2x3xf32>) -> tensor<2xf32>

// -----

%0 = "test.op"() : () -> (tensor<2x3xf32>)
// expected-error @+1 {{result element type must be i64, got i32}}
%r = "graph.argmax"(%0) <{axis = 1 : i64, keepdims = false, select_last_index = false}> : (tensor<2x3xf32>) -> tensor<2xi32>

// -----

%0 = "test.op"() : () -> (tensor<2x3xf32>)
// expected-error @+1 {{axis 5 is out of range for rank 2 (expected 0..1)}}
%r = "graph.argmax"(%0) <{axis = 5 : i64, keepdims = false, select_last_index = false}> : (tensor<2x3xf32>) -> tensor<2xi64>

// -----

%0 = "test.op"() : () -> (tensor<2x6xf32>)
// expected-error @+1 {{element count mismatch: input 2x6 has 12 elements, result 5x2 has 10}}
%r = "graph.reshape"(%0) : (tensor<2x6xf32>) -> tensor<5x2xf32>

// -----

%0 = "test.op"() : () -> (tensor<2x6xf32>)
// expected-error @+1 {{expected 1 dims operand(s), one per `?` in the result type(s), got 0}}
%r = "graph.reshape"(%0) : (tensor<2x6xf32>) -> tensor<?x5xf32>

// -----

%0, %1 = "test.op"() : () -> (tensor<2x6xf32>, index)
// expected-error @+1 {{element count mismatch: input has 12 elements, not a multiple of the static part (5) of result ?x5}}
%r = "graph.reshape"(%0, %1) : (tensor<2x6xf32>, index) -> tensor<?x5xf32>

// -----

%0 = "test.op"() : () -> (tensor<2x6xf32>)
// expected-error @+1 {{element type of result (i32) does not match input (f32)}}
%r = "graph.reshape"(%0) : (tensor<2x6xf32>) -> tensor<12xi32>

// -----

%0 = "test.op"() : () -> (tensor<2x3xf32>)
// expected-error @+1 {{perm [0, 0] is not a permutation of 0..1}}
%r = "graph.transpose"(%0) <{perm = array<i64: 0, 0>}> : (tensor<2x3xf32>) -> tensor<2x2xf32>

// -----

%0 = "test.op"() : () -> (tensor<2x3xf32>)
// expected-error @+1 {{result shape 2x3 does not match the inferred shape 3x2}}
%r = "graph.transpose"(%0) <{perm = array<i64: 1, 0>}> : (tensor<2x3xf32>) -> tensor<2x3xf32>

// -----

%0, %1 = "test.op"() : () -> (tensor<2x3xf32>, tensor<2x4xf32>)
// expected-error @+1 {{input 1 dim 1 (4) does not match the other inputs (3); only the concat axis 0 may differ}}
%r = "graph.concat"(%0, %1) <{axis = 0 : i64}> : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<4x3xf32>

// -----

%0, %1 = "test.op"() : () -> (tensor<2x3xf32>, tensor<3xf32>)
// expected-error @+1 {{input 1 has rank 1, input 0 has rank 2}}
%r = "graph.concat"(%0, %1) <{axis = 0 : i64}> : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<5x3xf32>

// -----

%0 = "test.op"() : () -> (tensor<2x3xf32>)
// expected-error @+1 {{axis 2 is out of range for rank 2 (expected 0..1)}}
%r = "graph.concat"(%0, %0) <{axis = 2 : i64}> : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>

// -----

%0 = "test.op"() : () -> (tensor<2x3xf32>)
// expected-error @+1 {{result shape 2x5 does not match the inferred shape 2x6}}
%r = "graph.concat"(%0, %0) <{axis = 1 : i64}> : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x5xf32>

// -----

// expected-error @+1 {{expected at least one input}}
%r = "graph.concat"() <{axis = 0 : i64}> : () -> tensor<2xf32>

// -----

%0 = "test.op"() : () -> (tensor<4x4xf32>)
// expected-error @+1 {{starts must have 2 entries, got 1}}
%r = "graph.slice"(%0) <{starts = array<i64: 0>, ends = array<i64: 4>, steps = array<i64: 1>}> : (tensor<4x4xf32>) -> tensor<4xf32>

// -----

%0 = "test.op"() : () -> (tensor<4xf32>)
// expected-error @+1 {{step of dim 0 must be non-zero}}
%r = "graph.slice"(%0) <{starts = array<i64: 0>, ends = array<i64: 4>, steps = array<i64: 0>}> : (tensor<4xf32>) -> tensor<4xf32>

// -----

%0 = "test.op"() : () -> (tensor<4xf32>)
// expected-error @+1 {{dim 0 (size 4): start 0 / end 9223372036854775807 are not normalized for step 1 (expected start in [0, 4], end in [0, 4])}}
%r = "graph.slice"(%0) <{starts = array<i64: 0>, ends = array<i64: 9223372036854775807>, steps = array<i64: 1>}> : (tensor<4xf32>) -> tensor<4xf32>

// -----

%0 = "test.op"() : () -> (tensor<4xf32>)
// expected-error @+1 {{dim 0 (size 4): start 4 / end -1 are not normalized for step -1 (expected start in [0, 3], end in [-1, 3])}}
%r = "graph.slice"(%0) <{starts = array<i64: 4>, ends = array<i64: -1>, steps = array<i64: -1>}> : (tensor<4xf32>) -> tensor<4xf32>

// -----

%0 = "test.op"() : () -> (tensor<8xf32>)
// expected-error @+1 {{result shape 2 does not match the inferred shape 3}}
%r = "graph.slice"(%0) <{starts = array<i64: 1>, ends = array<i64: 8>, steps = array<i64: 3>}> : (tensor<8xf32>) -> tensor<2xf32>

// -----

%0, %n = "test.op"() : () -> (tensor<4x8xf32>, index)
// expected-error @+1 {{expected 2 bounds operand(s), one per dyn_starts / dyn_ends entry, got 1}}
%r = "graph.slice"(%0, %n) <{starts = array<i64: 0, 0>, ends = array<i64: 4, 0>, steps = array<i64: 1, 1>, dyn_starts = array<i64: 1>, dyn_ends = array<i64: 1>}> : (tensor<4x8xf32>, index) -> tensor<4x?xf32>

// -----

%0, %n = "test.op"() : () -> (tensor<4x8xf32>, index)
// expected-error @+1 {{end of dim 1 comes from an operand: its static entry must be 0, got 8}}
%r = "graph.slice"(%0, %n) <{starts = array<i64: 0, 0>, ends = array<i64: 4, 8>, steps = array<i64: 1, 1>, dyn_ends = array<i64: 1>}> : (tensor<4x8xf32>, index) -> tensor<4x?xf32>

// -----

%0, %n = "test.op"() : () -> (tensor<4x8xf32>, index)
// expected-error @+1 {{dyn_ends must be increasing dims in [0, 2), got [2]}}
%r = "graph.slice"(%0, %n) <{starts = array<i64: 0, 0>, ends = array<i64: 4, 8>, steps = array<i64: 1, 1>, dyn_ends = array<i64: 2>}> : (tensor<4x8xf32>, index) -> tensor<4x?xf32>

// -----

%0, %n = "test.op"() : () -> (tensor<4x8xf32>, index)
// expected-error @+1 {{result dim 1 has a run-time bound: it must be `?`}}
%r = "graph.slice"(%0, %n) <{starts = array<i64: 0, 0>, ends = array<i64: 4, 0>, steps = array<i64: 1, 1>, dyn_ends = array<i64: 1>}> : (tensor<4x8xf32>, index) -> tensor<4x3xf32>

// -----

%0 = "test.op"() : () -> (tensor<8xf32>)
// expected-error @+1 {{sizes [3, 4] (sum 7) do not split dim 0 of size 8}}
%r:2 = "graph.split"(%0) <{axis = 0 : i64, sizes = array<i64: 3, 4>}> : (tensor<8xf32>) -> (tensor<3xf32>, tensor<4xf32>)

// -----

%0 = "test.op"() : () -> (tensor<8xf32>)
// expected-error @+1 {{expected 2 results (one per size), got 1}}
%r = "graph.split"(%0) <{axis = 0 : i64, sizes = array<i64: 4, 4>}> : (tensor<8xf32>) -> tensor<4xf32>

// -----

%0 = "test.op"() : () -> (tensor<8xf32>)
// expected-error @+1 {{sizes must be >= 0 or -1 (dynamic), got [4, -2]}}
%r:2 = "graph.split"(%0) <{axis = 0 : i64, sizes = array<i64: 4, -2>}> : (tensor<8xf32>) -> (tensor<4xf32>, tensor<4xf32>)

// -----

%0 = "test.op"() : () -> (tensor<8xf32>)
// expected-error @+1 {{result 1 shape 3 does not match the inferred shape 4}}
%r:2 = "graph.split"(%0) <{axis = 0 : i64, sizes = array<i64: 4, 4>}> : (tensor<8xf32>) -> (tensor<4xf32>, tensor<3xf32>)

// -----

%0, %1 = "test.op"() : () -> (tensor<5x4xf32>, tensor<3xf32>)
// expected-error @+1 {{indices element type must be i64 or i32, got f32}}
%r = "graph.gather"(%0, %1) <{axis = 0 : i64}> : (tensor<5x4xf32>, tensor<3xf32>) -> tensor<3x4xf32>

// -----

%0, %1 = "test.op"() : () -> (tensor<5x4xf32>, tensor<3xi64>)
// expected-error @+1 {{axis 2 is out of range for rank 2 (expected 0..1)}}
%r = "graph.gather"(%0, %1) <{axis = 2 : i64}> : (tensor<5x4xf32>, tensor<3xi64>) -> tensor<5x3xf32>

// -----

%0, %1 = "test.op"() : () -> (tensor<5x4xf32>, tensor<3xi64>)
// expected-error @+1 {{result shape 3x4 does not match the inferred shape 5x3}}
%r = "graph.gather"(%0, %1) <{axis = 1 : i64}> : (tensor<5x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>

// -----

%0, %1 = "test.op"() : () -> (tensor<4xf32>, tensor<4xf32>)
// expected-error @+1 {{cond element type must be i1, got f32}}
%r = "graph.where"(%0, %1, %1) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>

// -----

%0, %1 = "test.op"() : () -> (tensor<3xi1>, tensor<4xf32>)
// expected-error @+1 {{shapes 3 and 4 and 4 are not broadcast-compatible: dim 0 of cond (3) vs dim 0 of lhs (4)}}
%r = "graph.where"(%0, %1, %1) : (tensor<3xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>

// -----

%0 = "test.op"() : () -> (tensor<2x3xf32>)
// expected-error @+1 {{result shape 3x2 does not match the inferred shape 2x3}}
%r = "graph.cast"(%0) : (tensor<2x3xf32>) -> tensor<3x2xi64>

// -----

%0 = "test.op"() : () -> (tensor<2x3xf32>)
// expected-error @+1 {{pads must have 4 entries, got 2}}
%r = "graph.pad"(%0) <{pads = array<i64: 1, 1>, mode = "constant", value = 0.0 : f64}> : (tensor<2x3xf32>) -> tensor<3x4xf32>

// -----

%0 = "test.op"() : () -> (tensor<2x3xf32>)
// expected-error @+1 {{mode must be "constant", "reflect" or "edge", got "wrap"}}
%r = "graph.pad"(%0) <{pads = array<i64: 0, 0, 0, 0>, mode = "wrap", value = 0.0 : f64}> : (tensor<2x3xf32>) -> tensor<2x3xf32>

// -----

%0 = "test.op"() : () -> (tensor<2x3xf32>)
// expected-error @+1 {{pads [0, -2, 0, -2] make dim 1 negative (-1)}}
%r = "graph.pad"(%0) <{pads = array<i64: 0, -2, 0, -2>, mode = "constant", value = 0.0 : f64}> : (tensor<2x3xf32>) -> tensor<2x0xf32>

// -----

%0 = "test.op"() : () -> (tensor<2x3xf32>)
// expected-error @+1 {{reflect pads of dim 1 must be smaller than its size 3}}
%r = "graph.pad"(%0) <{pads = array<i64: 0, 3, 0, 0>, mode = "reflect", value = 0.0 : f64}> : (tensor<2x3xf32>) -> tensor<2x6xf32>

// -----

%0 = "test.op"() : () -> (tensor<2x3xf32>)
// expected-error @+1 {{result shape 2x4 does not match the inferred shape 2x5}}
%r = "graph.pad"(%0) <{pads = array<i64: 0, 1, 0, 1>, mode = "constant", value = 0.0 : f64}> : (tensor<2x3xf32>) -> tensor<2x4xf32>

// -----

%0 = "test.op"() : () -> (tensor<2x4xf32>)
// expected-error @+1 {{input shape 2x4 does not broadcast to 3x4}}
%r = "graph.broadcast_to"(%0) : (tensor<2x4xf32>) -> tensor<3x4xf32>

// -----

%0 = "test.op"() : () -> (tensor<1x4xf32>)
// expected-error @+1 {{expected 1 dims operand(s), one per `?` in the result type(s), got 0}}
%r = "graph.broadcast_to"(%0) : (tensor<1x4xf32>) -> tensor<?x4xf32>

// -----

%0 = "test.op"() : () -> (tensor<2x3xf32>)
// expected-error @+1 {{repeats must have 2 entries, got 1}}
%r = "graph.tile"(%0) <{repeats = array<i64: 2>}> : (tensor<2x3xf32>) -> tensor<4x3xf32>

// -----

%0 = "test.op"() : () -> (tensor<2x3xf32>)
// expected-error @+1 {{repeats must be >= 0, got [2, -1]}}
%r = "graph.tile"(%0) <{repeats = array<i64: 2, -1>}> : (tensor<2x3xf32>) -> tensor<4x3xf32>

// -----

%0 = "test.op"() : () -> (tensor<2x3xf32>)
// expected-error @+1 {{result shape 4x3 does not match the inferred shape 4x6}}
%r = "graph.tile"(%0) <{repeats = array<i64: 2, 2>}> : (tensor<2x3xf32>) -> tensor<4x3xf32>

// -----

%0 = "test.op"() : () -> (tensor<3xf32>)
// expected-error @+1 {{input must have rank >= 2, got 3}}
%r = "graph.trilu"(%0) <{upper = true, k = 0 : i64}> : (tensor<3xf32>) -> tensor<3xf32>

// -----

%0, %1 = "test.op"() : () -> (tensor<1xi64>, tensor<i64>)
// expected-error @+1 {{start must be a 0-d tensor, got tensor<1xi64>}}
%r = "graph.range"(%0, %1, %1) : (tensor<1xi64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>

// -----

%0 = "test.op"() : () -> (tensor<i64>)
// expected-error @+1 {{result must be 1-D, got tensor<?x?xi64>}}
%r = "graph.range"(%0, %0, %0) : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?x?xi64>

// -----

%0, %1 = "test.op"() : () -> (tensor<i64>, tensor<f32>)
// expected-error @+1 {{element type of limit (f32) does not match start (i64)}}
%r = "graph.range"(%0, %1, %0) : (tensor<i64>, tensor<f32>, tensor<i64>) -> tensor<?xi64>

// -----

%0 = "test.op"() : () -> (tensor<?x4xf32>)
// expected-error @+1 {{dim index 2 is out of range for rank 2 (expected 0..1)}}
%r = "graph.dim"(%0) <{index = 2 : i64}> : (tensor<?x4xf32>) -> index

// -----

%0 = "test.op"() : () -> (tensor<?x4xf32>)
// expected-error @+1 {{result type must be tensor<2xi64>, got tensor<3xi64>}}
%r = "graph.shape"(%0) : (tensor<?x4xf32>) -> tensor<3xi64>

// -----

%0 = "test.op"() : () -> (index)
// expected-error @+1 {{result type must be tensor<2xi64>, got tensor<2xi32>}}
%r = "graph.from_dims"(%0, %0) : (index, index) -> tensor<2xi32>

// -----

%0 = "test.op"() : () -> (tensor<2xf32>)
// expected-error @+1 {{input must be a 0-d tensor, got tensor<2xf32>}}
%r = "graph.extract"(%0) : (tensor<2xf32>) -> f32

// -----

%0 = "test.op"() : () -> (tensor<f32>)
// expected-error @+1 {{result type i64 must be the element type f32}}
%r = "graph.extract"(%0) : (tensor<f32>) -> i64

// -----

%0, %1 = "test.op"() : () -> (tensor<?x4xf32>, index)
// expected-error @+1 {{expected 2 dims operand(s), one per `?` in the result type(s), got 1}}
%r:2 = "graph.call_kernel"(%0, %1) <{callee = @k, operandSegmentSizes = array<i32: 1, 1>}> : (tensor<?x4xf32>, index) -> (tensor<?x4xf32>, tensor<?xf32>)

// -----

// expected-error @+1 {{param_name must not be empty}}
%r = "graph.param"() <{param_name = ""}> : () -> tensor<4xf32>

// -----

%x, %i = "test.op"() : () -> (tensor<4x5xf32>, tensor<3xi64>)
// expected-error @+1 {{indices rank 1 must equal data rank 2}}
%y = "graph.gather_elements"(%x, %i) <{axis = 0 : i64}> : (tensor<4x5xf32>, tensor<3xi64>) -> tensor<3xf32>

// -----

%x, %i = "test.op"() : () -> (tensor<4x5xf32>, tensor<3x?xi64>)
// expected-error @+1 {{the last dim of indices must be static}}
%y = "graph.gather_nd"(%x, %i) <{batch_dims = 0 : i64}> : (tensor<4x5xf32>, tensor<3x?xi64>) -> tensor<3xf32>

// -----

// expected-error @+1 {{distribution must be "uniform" or "normal", got "poisson"}}
%r = "graph.random"() <{distribution = "poisson", a = 0.0 : f64, b = 1.0 : f64, seed = 1 : i64}> : () -> tensor<4xf32>

// -----

// expected-error @+1 {{result element type must be f16, f32 or f64, got i32}}
%r = "graph.random"() <{distribution = "uniform", a = 0.0 : f64, b = 1.0 : f64, seed = 1 : i64}> : () -> tensor<4xi32>

// -----

// expected-error @+1 {{expected 1 dims operand(s), one per `?` in the result type(s), got 0}}
%r = "graph.random"() <{distribution = "normal", a = 0.0 : f64, b = 1.0 : f64, seed = 1 : i64}> : () -> tensor<?x4xf32>

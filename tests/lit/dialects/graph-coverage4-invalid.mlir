// RUN: mini-opt %s --split-input-file --verify-diagnostics

%s, %o, %v, %m = "test.op"() : () -> (tensor<1x6x5xi1>, tensor<1x2x6xi64>, tensor<1x2x6xi1>, tensor<i64>)
// expected-error @+1 {{suppress must be i1 of shape [B, N, N], got tensor<1x6x5xi1>}}
%k = "graph.nms_select"(%s, %o, %v, %m) : (tensor<1x6x5xi1>, tensor<1x2x6xi64>, tensor<1x2x6xi1>, tensor<i64>) -> tensor<1x2x6xi1>

// -----

%s, %o, %v, %m = "test.op"() : () -> (tensor<1x6x6xi1>, tensor<1x2x6xi64>, tensor<1x2x6xi1>, tensor<1xi64>)
// expected-error @+1 {{max_per_class must be a 0-d i64 tensor, got tensor<1xi64>}}
%k = "graph.nms_select"(%s, %o, %v, %m) : (tensor<1x6x6xi1>, tensor<1x2x6xi64>, tensor<1x2x6xi1>, tensor<1xi64>) -> tensor<1x2x6xi1>

// -----

%s, %o, %v, %m = "test.op"() : () -> (tensor<1x6x6xi1>, tensor<1x2x5xi64>, tensor<1x2x6xi1>, tensor<i64>)
// expected-error @+1 {{order tensor<1x2x5xi64> does not match suppress tensor<1x6x6xi1>}}
%k = "graph.nms_select"(%s, %o, %v, %m) : (tensor<1x6x6xi1>, tensor<1x2x5xi64>, tensor<1x2x6xi1>, tensor<i64>) -> tensor<1x2x5xi1>

// -----

%x = "test.op"() : () -> (tensor<3xf32>)
// expected-error @+1 {{bitcast needs element types of the same width (not i1), got f32 and i16}}
%y = "graph.bitcast"(%x) : (tensor<3xf32>) -> tensor<3xi16>

// RUN: mini-opt %s -p graph-legalize | filecheck %s

// Reductions: reduced dims are innermost `reduce` block variables; the init region writes the
// identity (0, -inf, +inf) at the output point. Kernels follow the graph functions.

// CHECK-LABEL: func.func @reduce_sum
// CHECK-SAME:    (%[[X:.*]]: tensor<?x5xf32>)
// CHECK-NEXT:    %[[N:.*]] = graph.dim %[[X]], 0 : tensor<?x5xf32>
// CHECK-NEXT:    graph.call_kernel @reduce_sum_0(%[[X]]) dims(%[[N]]) : (tensor<?x5xf32>) -> tensor<?xf32>
func.func @reduce_sum(%x: tensor<?x5xf32>) -> tensor<?xf32> {
  %y = graph.reduce_sum %x axes [1] {keepdims = false} : tensor<?x5xf32> -> tensor<?xf32>
  func.return %y : tensor<?xf32>
}

// CHECK-LABEL: func.func @reduce_mean
// CHECK-NEXT:    graph.call_kernel @reduce_mean_0
func.func @reduce_mean(%x: tensor<2x5xf32>) -> tensor<2x1xf32> {
  %y = graph.reduce_mean %x axes [1] : tensor<2x5xf32> -> tensor<2x1xf32>
  func.return %y : tensor<2x1xf32>
}

// CHECK-LABEL: func.func @reduce_max
// CHECK-NEXT:    graph.call_kernel @reduce_max_0
func.func @reduce_max(%x: tensor<3xf32>) -> tensor<1xf32> {
  %y = graph.reduce_max %x axes [0] : tensor<3xf32> -> tensor<1xf32>
  func.return %y : tensor<1xf32>
}

// CHECK-LABEL: func.func @argmax
// CHECK-NEXT:    graph.call_kernel @argmax_0({{.*}}) : (tensor<2x5xi32>) -> tensor<2xi64>
func.func @argmax(%x: tensor<2x5xi32>) -> tensor<2xi64> {
  %y = graph.argmax %x axis 1 {keepdims = false} : tensor<2x5xi32> -> tensor<2xi64>
  func.return %y : tensor<2xi64>
}

// CHECK-LABEL: func.func @softmax
// CHECK-SAME:    (%[[X:.*]]: tensor<?x5xf32>)
// CHECK-NEXT:    %[[N:.*]] = graph.dim %[[X]], 0
// CHECK-NEXT:    graph.call_kernel @softmax_0(%[[X]]) dims(%[[N]])
func.func @softmax(%x: tensor<?x5xf32>) -> tensor<?x5xf32> {
  %y = graph.softmax %x axis 1 : tensor<?x5xf32>
  func.return %y : tensor<?x5xf32>
}

// CHECK-LABEL: func.func @layer_norm
// CHECK-NEXT:    graph.call_kernel @layer_norm_0
func.func @layer_norm(%x: tensor<2x5xf32>, %g: tensor<5xf32>) -> tensor<2x5xf32> {
  %y = graph.layer_norm %x, %g axis 1 epsilon 1.0e-05 : (tensor<2x5xf32>, tensor<5xf32>) -> tensor<2x5xf32>
  func.return %y : tensor<2x5xf32>
}

// The result `?` is the input's dim 0 (never the per-channel parameters' dims).
// CHECK-LABEL: func.func @batch_norm
// CHECK-SAME:    (%[[X:.*]]: tensor<?x3xf32>, %[[C:.*]]: tensor<3xf32>)
// CHECK-NEXT:    %[[N:.*]] = graph.dim %[[X]], 0
// CHECK-NEXT:    graph.call_kernel @batch_norm_0(%[[X]], %[[C]], %[[C]], %[[C]], %[[C]]) dims(%[[N]])
func.func @batch_norm(%x: tensor<?x3xf32>, %c: tensor<3xf32>) -> tensor<?x3xf32> {
  %y = graph.batch_norm %x, %c, %c, %c, %c epsilon 1.0e-05 : (tensor<?x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<?x3xf32>
  func.return %y : tensor<?x3xf32>
}

// CHECK-LABEL: func.func @lrn
// CHECK-NEXT:    graph.call_kernel @lrn_0
func.func @lrn(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
  %y = graph.lrn %x size 3 alpha 1.0e-04 beta 0.75 bias 1.0 : tensor<1x4xf32>
  func.return %y : tensor<1x4xf32>
}

// CHECK-LABEL: func.func private @reduce_sum_0
// CHECK-SAME:    (%[[X:.*]]: memref<?x5xf32>, %[[Y:.*]]: memref<?xf32>) attributes {loop.kernel}
// CHECK-NEXT:    %[[N:.*]] = mem.dim %[[X]], 0 : memref<?x5xf32>
// CHECK:         loop.for %[[I:.*]] = %{{.*}} to %[[N]] step %{{.*}} {
// CHECK-NEXT:      loop.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:        loop.block "reduce_sum" (%[[VI:.*]] = %[[I]], %[[VK:.*]] = %[[K]]) [spatial, reduce] {
// CHECK-NEXT:          %[[ACC:.*]] = mem.load %[[Y]][%[[VI]]] : memref<?xf32> -> f32
// CHECK-NEXT:          %[[V:.*]] = mem.load %[[X]][%[[VI]], %[[VK]]] : memref<?x5xf32> -> f32
// CHECK-NEXT:          %[[S:.*]] = arith.addf %[[ACC]], %[[V]] : f32
// CHECK-NEXT:          mem.store %[[S]], %[[Y]][%[[VI]]] : f32, memref<?xf32>
// CHECK-NEXT:        } init {
// CHECK-NEXT:          %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:          mem.store %[[Z]], %[[Y]][%[[VI]]] : f32, memref<?xf32>
// CHECK-NEXT:        }

// reduce_mean: the sum block, then a spatial block divides by the count.
// CHECK-LABEL: func.func private @reduce_mean_0
// CHECK:           loop.block "reduce_mean" (%{{.*}}, %{{.*}}) [spatial, reduce] {
// CHECK:           } init {
// CHECK:         %[[CNT:.*]] = arith.constant 5.000000e+00 : f32
// CHECK:             loop.block "reduce_mean_div" (%{{.*}}, %{{.*}}) [spatial, spatial] {
// CHECK-NEXT:          %[[V:.*]] = mem.load
// CHECK-NEXT:          arith.divf %[[V]], %[[CNT]] : f32

// CHECK-LABEL: func.func private @reduce_max_0
// CHECK:         loop.block "reduce_max" (%{{.*}}) [reduce] {
// CHECK:           arith.maximumf
// CHECK:         } init {
// CHECK-NEXT:      arith.constant 0xff800000 : f32

// argmax: the running max lives in a small static scratch (alloca); ties keep the first index.
// CHECK-LABEL: func.func private @argmax_0
// CHECK-SAME:    (%[[X:.*]]: memref<2x5xi32>, %[[Y:.*]]: memref<2xi64>)
// CHECK:         %[[BEST:.*]] = mem.alloca() : memref<2x1xi32>
// CHECK:             loop.block "argmax" (%[[VI:.*]] = %{{.*}}, %[[VK:.*]] = %{{.*}}) [spatial, reduce] {
// CHECK-NEXT:          %[[V:.*]] = mem.load %[[X]][%[[VI]], %[[VK]]]
// CHECK-NEXT:          %[[B:.*]] = mem.load %[[BEST]]
// CHECK-NEXT:          %[[GT:.*]] = arith.cmpi sgt, %[[V]], %[[B]] : i32
// CHECK:               %[[K:.*]] = arith.index_cast %[[VK]] : index to i64
// CHECK:               arith.select %[[GT]], %[[K]], %{{.*}} : i64
// CHECK:             } init {
// CHECK-NEXT:          arith.constant -2147483648 : i32
// CHECK:               arith.constant 0 : i64
// CHECK-NOT:     mem.dealloc
// CHECK:         func.return

// softmax: max, exp, sum, the sum's reciprocal (one division a row), normalize by a multiply;
// dynamic scratch rows are heap buffers freed at the end of the kernel.
// CHECK-LABEL: func.func private @softmax_0
// CHECK-SAME:    (%[[X:.*]]: memref<?x5xf32>, %[[Y:.*]]: memref<?x5xf32>)
// CHECK-NEXT:    %[[N:.*]] = mem.dim %[[X]], 0
// CHECK:         %[[M:.*]] = mem.alloc(%[[N]]) {{.*}}: memref<?x1xf32>
// CHECK-NEXT:    %[[S:.*]] = mem.alloc(%[[N]]) {{.*}}: memref<?x1xf32>
// CHECK:             loop.block "softmax_max" ({{.*}}) [spatial, reduce] {
// CHECK:             } init {
// CHECK-NEXT:          %[[NINF:.*]] = arith.constant 0xff800000 : f32
// CHECK-NEXT:          mem.store %[[NINF]], %[[M]]
// CHECK:             loop.block "softmax_exp" ({{.*}}) [spatial, spatial] {
// CHECK:               math.exp
// CHECK:             loop.block "softmax_sum" ({{.*}}) [spatial, reduce] {
// CHECK:             loop.block "softmax_rcp" ({{.*}}) [spatial, spatial] {
// CHECK:               arith.divf
// CHECK:             loop.block "softmax_norm" ({{.*}}) [spatial, spatial] {
// CHECK-NOT:           arith.divf
// CHECK:               arith.mulf
// CHECK:         mem.dealloc %[[M]] : memref<?x1xf32>
// CHECK-NEXT:    mem.dealloc %[[S]] : memref<?x1xf32>
// CHECK-NEXT:    func.return

// layer_norm: mean, then the two-pass variance around it, then normalize; the statistics of f32
// data accumulate in f64, and (x - mean) * rstd is rounded to f32 once.
// CHECK-LABEL: func.func private @layer_norm_0
// CHECK:         mem.alloca() : memref<2x1xf64>
// CHECK:         mem.alloca() : memref<2x1xf64>
// CHECK:         loop.block "layer_norm_mean" ({{.*}}) [spatial, reduce] {
// CHECK:           arith.extf %{{.*}} : f32 to f64
// CHECK:         loop.block "layer_norm_mean_div" ({{.*}}) [spatial] {
// CHECK:         loop.block "layer_norm_var" ({{.*}}) [spatial, reduce] {
// CHECK:         loop.block "layer_norm_rstd" ({{.*}}) [spatial] {
// CHECK:           math.sqrt
// CHECK:         loop.block "layer_norm_norm" ({{.*}}) [spatial, spatial] {
// CHECK:           arith.truncf %{{.*}} : f64 to f32

// CHECK-LABEL: func.func private @batch_norm_0
// CHECK:         loop.block "batch_norm" (%{{.*}}, %[[C:.*]] = %{{.*}}) [spatial, spatial] {
// CHECK-NEXT:      mem.load %{{.*}}[%[[C]]] : memref<3xf32> -> f32

// lrn: squares go to a channel-padded scratch (4 + 3 - 1 = 6 channels); the window sum reads
// it at the affine c + k.
// CHECK-LABEL: func.func private @lrn_0
// CHECK:         %[[SQ:.*]] = mem.alloca() : memref<1x6xf32>
// CHECK:         loop.block "lrn_pad"
// CHECK:         loop.block "lrn_square"
// CHECK:         loop.block "lrn_sum" (%{{.*}}, %[[C:.*]] = %{{.*}}, %[[K:.*]] = %{{.*}}) [spatial, spatial, reduce] {
// CHECK-NEXT:      %[[CK:.*]] = arith.addi %[[C]], %[[K]] : index
// CHECK-NEXT:      mem.load %[[SQ]][%{{.*}}, %[[CK]]]
// CHECK:         loop.block "lrn"
// CHECK:           math.powf

// RUN: mini-opt %s --split-input-file -p graph-legalize | filecheck %s

// matmul: loops (i, j, k), block "matmul" [spatial, spatial, reduce], init writes 0; the
// dynamic row count is a graph.dim at the graph level and a mem.dim of the output in the kernel.

// CHECK-LABEL: func.func @matmul
// CHECK-SAME:    (%[[A:.*]]: tensor<?x3xf32>, %[[B:.*]]: tensor<3x4xf32>)
// CHECK-NEXT:    %[[M:.*]] = graph.dim %[[A]], 0 : tensor<?x3xf32>
// CHECK-NEXT:    %[[R:.*]] = graph.call_kernel @matmul_0(%[[A]], %[[B]]) dims(%[[M]]) : (tensor<?x3xf32>, tensor<3x4xf32>) -> tensor<?x4xf32>
// CHECK-NEXT:    func.return %[[R]]
// CHECK-LABEL: func.func private @matmul_0
// CHECK-SAME:    (%[[KA:.*]]: memref<?x3xf32>, %[[KB:.*]]: memref<3x4xf32>, %[[KC:.*]]: memref<?x4xf32>) attributes {loop.kernel} {
// CHECK-NEXT:    %[[KM:.*]] = mem.dim %[[KC]], 0
// CHECK-NEXT:    %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[C1:.*]] = arith.constant 1 : index
// CHECK-NEXT:    %[[C4:.*]] = arith.constant 4 : index
// CHECK-NEXT:    %[[C3:.*]] = arith.constant 3 : index
// CHECK-NEXT:    loop.for %[[I:.*]] = %[[C0]] to %[[KM]] step %[[C1]] {
// CHECK-NEXT:      loop.for %[[J:.*]] = %[[C0]] to %[[C4]] step %[[C1]] {
// CHECK-NEXT:        loop.for %[[K:.*]] = %[[C0]] to %[[C3]] step %[[C1]] {
// CHECK-NEXT:          loop.block "matmul" (%[[VI:.*]] = %[[I]], %[[VJ:.*]] = %[[J]], %[[VK:.*]] = %[[K]]) [spatial, spatial, reduce] {
// CHECK-NEXT:            %[[X:.*]] = mem.load %[[KA]][%[[VI]], %[[VK]]]
// CHECK-NEXT:            %[[Y:.*]] = mem.load %[[KB]][%[[VK]], %[[VJ]]]
// CHECK-NEXT:            %[[ACC:.*]] = mem.load %[[KC]][%[[VI]], %[[VJ]]]
// CHECK-NEXT:            %[[P:.*]] = arith.mulf %[[X]], %[[Y]] : f32
// CHECK-NEXT:            %[[S:.*]] = arith.addf %[[ACC]], %[[P]] : f32
// CHECK-NEXT:            mem.store %[[S]], %[[KC]][%[[VI]], %[[VJ]]]
// CHECK-NEXT:          } init {
// CHECK-NEXT:            %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:            mem.store %[[Z]], %[[KC]][%[[VI]], %[[VJ]]]
// CHECK-NEXT:          }
func.func @matmul(%a: tensor<?x3xf32>, %b: tensor<3x4xf32>) -> tensor<?x4xf32> {
  %0 = graph.matmul %a, %b : (tensor<?x3xf32>, tensor<3x4xf32>) -> tensor<?x4xf32>
  func.return %0 : tensor<?x4xf32>
}

// -----

// A 1-D lhs is promoted (no i loop); the rhs batch dim becomes the outer loop.

// CHECK-LABEL: func.func private @matmul_0
// CHECK-SAME:    (%[[A:.*]]: memref<3xf32>, %[[B:.*]]: memref<2x3x4xf32>, %[[C:.*]]: memref<2x4xf32>)
// CHECK:         loop.block "matmul" (%[[VB:.*]] = %{{.*}}, %[[VJ:.*]] = %{{.*}}, %[[VK:.*]] = %{{.*}}) [spatial, spatial, reduce] {
// CHECK-NEXT:      mem.load %[[A]][%[[VK]]]
// CHECK-NEXT:      mem.load %[[B]][%[[VB]], %[[VK]], %[[VJ]]]
// CHECK-NEXT:      mem.load %[[C]][%[[VB]], %[[VJ]]]
func.func @matmul_vector_lhs(%a: tensor<3xf32>, %b: tensor<2x3x4xf32>) -> tensor<2x4xf32> {
  %0 = graph.matmul %a, %b : (tensor<3xf32>, tensor<2x3x4xf32>) -> tensor<2x4xf32>
  func.return %0 : tensor<2x4xf32>
}

// -----

// conv2d: (n, co, oh, ow | ci, kh, kw); init = bias[co]. Only H has begin padding, so only the H
// tap is guarded: ih = oh - 1 + 2*kh (stride 1, dilation 2, pad_top 1) is checked >= 0, the load
// uses max(ih, 0) and a select substitutes 0. The W tap ow*2 + kw stays a plain affine index.

// CHECK-LABEL: func.func private @conv2d_0
// CHECK-SAME:    (%[[X:.*]]: memref<1x2x4x4xf32>, %[[W:.*]]: memref<3x2x2x2xf32>, %[[BIAS:.*]]: memref<3xf32>, %[[Y:.*]]: memref<1x3x3x2xf32>)
// CHECK:         %[[C0:.*]] = arith.constant 0 : index
// CHECK:         %[[C2:.*]] = arith.constant 2 : index
// CHECK-NEXT:    %[[CM1:.*]] = arith.constant -1 : index
// CHECK-NEXT:    loop.for %[[N:.*]] = {{.*}} {
// CHECK-NEXT:      loop.for %[[CO:.*]] = {{.*}} {
// CHECK-NEXT:        loop.for %[[OH:.*]] = {{.*}} {
// CHECK-NEXT:          loop.for %[[OW:.*]] = {{.*}} {
// CHECK-NEXT:            loop.for %[[CI:.*]] = {{.*}} {
// CHECK-NEXT:              loop.for %[[KH:.*]] = {{.*}} {
// CHECK-NEXT:                loop.for %[[KW:.*]] = {{.*}} {
// CHECK-NEXT:                  loop.block "conv2d" (%[[VN:.*]] = %[[N]], %[[VCO:.*]] = %[[CO]], %[[VOH:.*]] = %[[OH]], %[[VOW:.*]] = %[[OW]], %[[VCI:.*]] = %[[CI]], %[[VKH:.*]] = %[[KH]], %[[VKW:.*]] = %[[KW]]) [spatial, spatial, spatial, spatial, reduce, reduce, reduce] {
// CHECK-NEXT:                    %[[T0:.*]] = arith.addi %[[CM1]], %[[VOH]] : index
// CHECK-NEXT:                    %[[T1:.*]] = arith.muli %[[VKH]], %[[C2]] : index
// CHECK-NEXT:                    %[[IH:.*]] = arith.addi %[[T0]], %[[T1]] : index
// CHECK-NEXT:                    %[[T2:.*]] = arith.muli %[[VOW]], %[[C2]] : index
// CHECK-NEXT:                    %[[IW:.*]] = arith.addi %[[T2]], %[[VKW]] : index
// CHECK-NEXT:                    %[[IN:.*]] = arith.cmpi sge, %[[IH]], %[[C0]] : index
// CHECK-NEXT:                    %[[IHC:.*]] = arith.maxsi %[[IH]], %[[C0]] : index
// CHECK-NEXT:                    %[[XV:.*]] = mem.load %[[X]][%[[VN]], %[[VCI]], %[[IHC]], %[[IW]]]
// CHECK-NEXT:                    %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:                    %[[XS:.*]] = arith.select %[[IN]], %[[XV]], %[[ZERO]] : f32
// CHECK-NEXT:                    %[[WV:.*]] = mem.load %[[W]][%[[VCO]], %[[VCI]], %[[VKH]], %[[VKW]]]
// CHECK-NEXT:                    %[[ACC:.*]] = mem.load %[[Y]][%[[VN]], %[[VCO]], %[[VOH]], %[[VOW]]]
// CHECK-NEXT:                    %[[P:.*]] = arith.mulf %[[XS]], %[[WV]] : f32
// CHECK-NEXT:                    %[[S:.*]] = arith.addf %[[ACC]], %[[P]] : f32
// CHECK-NEXT:                    mem.store %[[S]], %[[Y]][%[[VN]], %[[VCO]], %[[VOH]], %[[VOW]]]
// CHECK-NEXT:                  } init {
// CHECK-NEXT:                    %[[BV:.*]] = mem.load %[[BIAS]][%[[VCO]]]
// CHECK-NEXT:                    mem.store %[[BV]], %[[Y]][%[[VN]], %[[VCO]], %[[VOH]], %[[VOW]]]
// CHECK-NEXT:                  }
func.func @conv2d(%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x2x2xf32>, %b: tensor<3xf32>) -> tensor<1x3x3x2xf32> {
  %0 = graph.conv2d %x, %w, %b strides [1, 2] pads [1, 0, 0, 0] dilations [2, 1] : (tensor<1x2x4x4xf32>, tensor<3x2x2x2xf32>, tensor<3xf32>) -> tensor<1x3x3x2xf32>
  func.return %0 : tensor<1x3x3x2xf32>
}

// -----

// Depthwise (group = channels): (n, g, oh, ow | kh, kw): the unit oc and ci variables are dropped,
// the input and output channel are both g, the weight's dim 1 is 0. No padding: no guard.

// CHECK-LABEL: func.func private @conv2d_0
// CHECK-SAME:    (%[[X:.*]]: memref<1x2x3x3xf32>, %[[W:.*]]: memref<2x1x2x2xf32>, %[[Y:.*]]: memref<1x2x2x2xf32>)
// CHECK:         %[[C0:.*]] = arith.constant 0 : index
// CHECK:         loop.block "conv2d" (%[[VN:.*]] = %{{.*}}, %[[VG:.*]] = %{{.*}}, %[[VOH:.*]] = %{{.*}}, %[[VOW:.*]] = %{{.*}}, %[[VKH:.*]] = %{{.*}}, %[[VKW:.*]] = %{{.*}}) [spatial, spatial, spatial, spatial, reduce, reduce] {
// CHECK-NEXT:      %[[IH:.*]] = arith.addi %[[VOH]], %[[VKH]] : index
// CHECK-NEXT:      %[[IW:.*]] = arith.addi %[[VOW]], %[[VKW]] : index
// CHECK-NEXT:      mem.load %[[X]][%[[VN]], %[[VG]], %[[IH]], %[[IW]]]
// CHECK-NEXT:      mem.load %[[W]][%[[VG]], %[[C0]], %[[VKH]], %[[VKW]]]
// CHECK-NOT:       arith.select
// CHECK:         } init {
// CHECK-NEXT:      %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      mem.store %[[Z]], %[[Y]][%[[VN]], %[[VG]], %[[VOH]], %[[VOW]]]
func.func @conv2d_depthwise(%x: tensor<1x2x3x3xf32>, %w: tensor<2x1x2x2xf32>) -> tensor<1x2x2x2xf32> {
  %0 = graph.conv2d %x, %w group 2 : (tensor<1x2x3x3xf32>, tensor<2x1x2x2xf32>) -> tensor<1x2x2x2xf32>
  func.return %0 : tensor<1x2x2x2xf32>
}

// -----

// max_pool2d on dynamic N and H: the output H is floor((H - 2) / 2) + 1 at the graph level;
// init -inf; unpadded, so the taps oh*2 + kh are plain affine loads.

// CHECK-LABEL: func.func @max_pool2d
// CHECK-SAME:    (%[[X:.*]]: tensor<?x1x?x4xf32>)
// CHECK-NEXT:    %[[N:.*]] = graph.dim %[[X]], 0
// CHECK-NEXT:    %[[H:.*]] = graph.dim %[[X]], 2
// CHECK-NEXT:    %[[C2:.*]] = arith.constant 2 : index
// CHECK-NEXT:    %[[SPAN:.*]] = arith.subi %[[H]], %[[C2]] : index
// CHECK-NEXT:    %[[C2B:.*]] = arith.constant 2 : index
// CHECK-NEXT:    %[[Q:.*]] = arith.floordivsi %[[SPAN]], %[[C2B]] : index
// CHECK-NEXT:    %[[C1:.*]] = arith.constant 1 : index
// CHECK-NEXT:    %[[OH:.*]] = arith.addi %[[Q]], %[[C1]] : index
// CHECK-NEXT:    graph.call_kernel @max_pool2d_0(%[[X]]) dims(%[[N]], %[[OH]])
// CHECK-LABEL: func.func private @max_pool2d_0
// CHECK-SAME:    (%[[KX:.*]]: memref<?x1x?x4xf32>, %[[KY:.*]]: memref<?x1x?x2xf32>)
// CHECK:         loop.block "max_pool2d" (%[[VN:.*]] = %{{.*}}, %[[VC:.*]] = %{{.*}}, %[[VOH:.*]] = %{{.*}}, %[[VOW:.*]] = %{{.*}}, %[[VKH:.*]] = %{{.*}}, %[[VKW:.*]] = %{{.*}}) [spatial, spatial, spatial, spatial, reduce, reduce] {
// CHECK-NEXT:      %[[T0:.*]] = arith.muli %[[VOH]], %{{.*}} : index
// CHECK-NEXT:      %[[IH:.*]] = arith.addi %[[T0]], %[[VKH]] : index
// CHECK-NEXT:      %[[T1:.*]] = arith.muli %[[VOW]], %{{.*}} : index
// CHECK-NEXT:      %[[IW:.*]] = arith.addi %[[T1]], %[[VKW]] : index
// CHECK-NEXT:      %[[V:.*]] = mem.load %[[KX]][%[[VN]], %[[VC]], %[[IH]], %[[IW]]]
// CHECK-NEXT:      %[[ACC:.*]] = mem.load %[[KY]][%[[VN]], %[[VC]], %[[VOH]], %[[VOW]]]
// CHECK-NEXT:      %[[M:.*]] = arith.maximumf %[[ACC]], %[[V]] : f32
// CHECK-NEXT:      mem.store %[[M]], %[[KY]][%[[VN]], %[[VC]], %[[VOH]], %[[VOW]]]
// CHECK-NEXT:    } init {
// CHECK-NEXT:      %[[NINF:.*]] = arith.constant 0xff800000 : f32
// CHECK-NEXT:      mem.store %[[NINF]], %[[KY]][%[[VN]], %[[VC]], %[[VOH]], %[[VOW]]]
func.func @max_pool2d(%x: tensor<?x1x?x4xf32>) -> tensor<?x1x?x2xf32> {
  %0 = graph.max_pool2d %x kernel [2, 2] strides [2, 2] : tensor<?x1x?x4xf32> -> tensor<?x1x?x2xf32>
  func.return %0 : tensor<?x1x?x2xf32>
}

// -----

// avg_pool2d with end padding: block "avg_pool2d_sum" guards the end (tap < 3, load at min(tap, 2)),
// then block "avg_pool2d" divides by the in-bounds count (min(start + 2, 3) - max(start, 0)) per dim.

// CHECK-LABEL: func.func private @avg_pool2d_0
// CHECK-SAME:    (%[[X:.*]]: memref<1x1x3x3xf32>, %[[Y:.*]]: memref<1x1x2x2xf32>)
// CHECK:         loop.block "avg_pool2d_sum" ({{.*}}) [spatial, spatial, spatial, spatial, reduce, reduce] {
// CHECK:           arith.cmpi slt
// CHECK:           arith.minsi
// CHECK:           %[[SUMV:.*]] = arith.select
// CHECK:         } init {
// CHECK-NEXT:      arith.constant 0.000000e+00 : f32
// CHECK:         loop.block "avg_pool2d" (%[[VN:.*]] = %{{.*}}, %[[VC:.*]] = %{{.*}}, %[[VOH:.*]] = %{{.*}}, %[[VOW:.*]] = %{{.*}}) [spatial, spatial, spatial, spatial] {
// CHECK-NEXT:      %[[ST:.*]] = arith.muli %[[VOH]], %{{.*}} : index
// CHECK-NEXT:      %[[END:.*]] = arith.addi %[[ST]], %{{.*}} : index
// CHECK-NEXT:      %[[HI:.*]] = arith.minsi %[[END]], %{{.*}} : index
// CHECK-NEXT:      %[[LO:.*]] = arith.maxsi %[[ST]], %{{.*}} : index
// CHECK-NEXT:      %[[CH:.*]] = arith.subi %[[HI]], %[[LO]] : index
// CHECK:           %[[CNT:.*]] = arith.muli %[[CH]], %{{.*}} : index
// CHECK-NEXT:      %[[SUM:.*]] = mem.load %[[Y]][%[[VN]], %[[VC]], %[[VOH]], %[[VOW]]]
// CHECK-NEXT:      %[[CI:.*]] = arith.index_cast %[[CNT]] : index to i64
// CHECK-NEXT:      %[[CF:.*]] = arith.sitofp %[[CI]] : i64 to f32
// CHECK-NEXT:      %[[AVG:.*]] = arith.divf %[[SUM]], %[[CF]] : f32
// CHECK-NEXT:      mem.store %[[AVG]], %[[Y]][%[[VN]], %[[VC]], %[[VOH]], %[[VOW]]]
func.func @avg_pool2d(%x: tensor<1x1x3x3xf32>) -> tensor<1x1x2x2xf32> {
  %0 = graph.avg_pool2d %x kernel [2, 2] strides [2, 2] pads [0, 0, 1, 1] {ceil_mode = false, count_include_pad = false} : tensor<1x1x3x3xf32> -> tensor<1x1x2x2xf32>
  func.return %0 : tensor<1x1x2x2xf32>
}

// -----

// avg_pool2d with dilations: taps at oh + 2*kh (no guard: every tap is inside); the count per dim
// is the number of taps start + k*2 inside [0, 4): min(ceil((4 - start) / 2), 2) - max(ceil(-start / 2), 0).

// CHECK-LABEL: func.func private @avg_pool2d_0
// CHECK:         loop.block "avg_pool2d_sum" (%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %[[VOH:.*]] = %{{.*}}, %{{.*}} = %{{.*}}, %[[VKH:.*]] = %{{.*}}, %{{.*}} = %{{.*}}) [spatial, spatial, spatial, spatial, reduce, reduce] {
// CHECK-NEXT:      %[[DK:.*]] = arith.muli %[[VKH]], %[[C2:.*]] : index
// CHECK-NEXT:      arith.addi %[[VOH]], %[[DK]] : index
// CHECK-NOT:       arith.select
// CHECK:         loop.block "avg_pool2d" (%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %[[OH:.*]] = %{{.*}}, %{{.*}} = %{{.*}}) [spatial, spatial, spatial, spatial] {
// CHECK-NEXT:      %[[NLO:.*]] = arith.subi %{{.*}}, %[[OH]] : index
// CHECK-NEXT:      %[[KLO:.*]] = arith.ceildivsi %[[NLO]], %[[C2]] : index
// CHECK-NEXT:      %[[KLO0:.*]] = arith.maxsi %[[KLO]], %{{.*}} : index
// CHECK-NEXT:      %[[NHI:.*]] = arith.subi %{{.*}}, %[[OH]] : index
// CHECK-NEXT:      %[[KHI:.*]] = arith.ceildivsi %[[NHI]], %[[C2]] : index
// CHECK-NEXT:      %[[KHI0:.*]] = arith.minsi %[[KHI]], %[[C2]] : index
// CHECK-NEXT:      %[[N:.*]] = arith.subi %[[KHI0]], %[[KLO0]] : index
// CHECK-NEXT:      arith.maxsi %[[N]], %{{.*}} : index
func.func @avg_pool2d_dilated(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32> {
  %0 = graph.avg_pool2d %x kernel [2, 2] strides [1, 1] dilations [2, 2] {ceil_mode = true} : tensor<1x1x4x4xf32> -> tensor<1x1x2x2xf32>
  func.return %0 : tensor<1x1x2x2xf32>
}

// -----

// Global pools reduce every spatial dim into (n, c, 0…).

// CHECK-LABEL: func.func private @global_max_pool_0
// CHECK-SAME:    (%[[X:.*]]: memref<?x2x3xf32>, %[[Y:.*]]: memref<?x2x1xf32>)
// CHECK:         %[[C0:.*]] = arith.constant 0 : index
// CHECK:         loop.block "global_max_pool" (%[[VN:.*]] = %{{.*}}, %[[VC:.*]] = %{{.*}}, %[[VS:.*]] = %{{.*}}) [spatial, spatial, reduce] {
// CHECK-NEXT:      %[[ACC:.*]] = mem.load %[[Y]][%[[VN]], %[[VC]], %[[C0]]]
// CHECK-NEXT:      %[[V:.*]] = mem.load %[[X]][%[[VN]], %[[VC]], %[[VS]]]
// CHECK-NEXT:      arith.maximumf %[[ACC]], %[[V]] : f32
// CHECK:         } init {
// CHECK-NEXT:      arith.constant 0xff800000 : f32
func.func @global_max_pool(%x: tensor<?x2x3xf32>) -> tensor<?x2x1xf32> {
  %0 = graph.global_max_pool %x : tensor<?x2x3xf32> -> tensor<?x2x1xf32>
  func.return %0 : tensor<?x2x1xf32>
}

// -----

// CHECK-LABEL: func.func private @global_avg_pool_0
// CHECK:         loop.block "global_avg_pool_sum" ({{.*}}) [spatial, spatial, reduce, reduce] {
// CHECK:         loop.block "global_avg_pool" ({{.*}}) [spatial, spatial] {
// CHECK:           %[[CNT:.*]] = arith.constant 6.000000e+00 : f32
// CHECK-NEXT:      arith.divf %{{.*}}, %[[CNT]] : f32
func.func @global_avg_pool(%x: tensor<1x2x3x2xf32>) -> tensor<1x2x1x1xf32> {
  %0 = graph.global_avg_pool %x : tensor<1x2x3x2xf32> -> tensor<1x2x1x1xf32>
  func.return %0 : tensor<1x2x1x1xf32>
}

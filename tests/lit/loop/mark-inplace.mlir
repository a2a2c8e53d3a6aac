// RUN: mini-opt %s -p graph-legalize,loop-mark-inplace | filecheck %s
// RUN: mini-opt %s -p 'graph-legalize,loop-mark-inplace,loop-schedule{lower=false}' | filecheck %s --check-prefix=UNLOWERED

// A kernel output may take the buffer of an input of its type that the kernel only reads
// elementwise, at the point it writes (the first such input): add, the full-size side of a
// broadcast multiply. Not a transpose (it reads other points), not softmax (a reduction reads the
// row), not a reduction (another type).
func.func @f(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %b: tensor<1x8xf32>, %s: tensor<8x8xf32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x8xf32>, tensor<4x1xf32>, tensor<4x8xf32>) {
  %z = graph.add %x, %y : tensor<4x8xf32>
  %w = graph.mul %b, %x : (tensor<1x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %t = graph.transpose %s perm [1, 0] : tensor<8x8xf32> -> tensor<8x8xf32>
  %r = graph.reduce_sum %x axes [1] : tensor<4x8xf32> -> tensor<4x1xf32>
  %m = "graph.softmax"(%y) <{axis = 1 : i64}> : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %z, %w, %t, %r, %m : tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x8xf32>, tensor<4x1xf32>, tensor<4x8xf32>
}
// CHECK: func.func private @add_0(%{{.*}}: memref<4x8xf32>, %{{.*}}: memref<4x8xf32>, %{{.*}}: memref<4x8xf32>) attributes {loop.kernel, loop.inplace = {{\[}}[0 : i64, 2 : i64]]}
// CHECK: func.func private @mul_0(%{{.*}}: memref<1x8xf32>, %{{.*}}: memref<4x8xf32>, %{{.*}}: memref<4x8xf32>) attributes {loop.kernel, loop.inplace = {{\[}}[1 : i64, 2 : i64]]}
// CHECK: func.func private @transpose_0(%{{.*}}: memref<8x8xf32>, %{{.*}}: memref<8x8xf32>) attributes {loop.kernel} {
// CHECK: func.func private @reduce_sum_0(%{{.*}}: memref<4x8xf32>, %{{.*}}: memref<4x1xf32>) attributes {loop.kernel} {
// CHECK: func.func private @softmax_0(%{{.*}}: memref<4x8xf32>, %{{.*}}: memref<4x8xf32>) attributes {loop.kernel} {

// loop-schedule{lower=false} cannot check the schedule against the mark, so it withdraws it.
// UNLOWERED-NOT: loop.inplace

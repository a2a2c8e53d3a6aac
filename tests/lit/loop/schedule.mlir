// RUN: mini-opt %s -p 'loop-schedule{width=8 mr=4 nv=2 mc=4 kc=4 lower=false}' | filecheck %s
// RUN: mini-opt %s -p 'loop-schedule{width=8 mr=4 nv=2 mc=4 kc=4}' | filecheck %s --check-prefix=LOWER

// matmul: i -> (i0 parallel, i1, i2 = mr), j -> (j0, j1 = nv, j2 = W), k -> (k0, k1 = kc);
// init hoisted before k0; a mr x (nv*W) accumulator copied in / out around the k1 loop.
// CHECK-LABEL: func.func private @matmul
// CHECK:         %[[ACC:.*]] = mem.alloca() {loop.private} : memref<4x16xf32>
// CHECK:         loop.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} parallel {
// CHECK:           loop.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} vectorize {
// CHECK:             loop.block "matmul_init"
// CHECK:           loop.for %[[K0:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:             loop.for %[[I2:.*]] = %{{.*}} to %{{.*}} step %{{.*}} unroll {
// CHECK:               loop.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} unroll {
// CHECK:                 loop.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} vectorize {
// CHECK:                   loop.block "matmul_acc_in"
// CHECK:                     mem.store %{{.*}}, %[[ACC]][%[[I2]], %{{.*}}] : f32, memref<4x16xf32>
// CHECK:             loop.for %[[K1:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:                     loop.block "matmul"
// CHECK:                       %[[Z:.*]] = mem.load %[[ACC]]
// CHECK-NEXT:                  %[[S:.*]] = math.fma %{{.*}}, %{{.*}}, %[[Z]] : f32
// CHECK-NEXT:                  mem.store %[[S]], %[[ACC]]
// CHECK:                     loop.block "matmul_acc_out"
// CHECK:                       mem.store %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}] : f32, memref<12x32xf32>

// LOWER-LABEL: func.func private @matmul
// LOWER-NOT:     loop.block "matmul"
// LOWER:           mem.load %{{.*}}[%{{.*}}, %{{.*}}] : memref<12x8xf32> -> f32
// LOWER-NEXT:      mem.load %{{.*}}[%{{.*}}, %{{.*}}] : memref<8x32xf32> -> vector<8xf32>
// LOWER-NEXT:      mem.load %{{.*}}[%{{.*}}, %{{.*}}] : memref<4x16xf32> -> vector<8xf32>
// LOWER-NEXT:      vector.broadcast %{{.*}} : f32 to vector<8xf32>
// LOWER-NEXT:      math.fma %{{.*}}, %{{.*}}, %{{.*}} : vector<8xf32>
// LOWER-NOT:     unroll
// LOWER-NOT:     vectorize
// LOWER-LABEL: func.func private @relu
func.func private @matmul(%a: memref<12x8xf32>, %b: memref<8x32xf32>, %c: memref<12x32xf32>) attributes {loop.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c12 = arith.constant 12 : index
  %c32 = arith.constant 32 : index
  loop.for %i = %c0 to %c12 step %c1 {
    loop.for %j = %c0 to %c32 step %c1 {
      loop.for %k = %c0 to %c8 step %c1 {
        // kind = "matmul" (below): what graph-legalize stamps, and what the matmul rule matches
        loop.block "matmul" (%vi = %i, %vj = %j, %vk = %k) [spatial, spatial, reduce] {
          %x = mem.load %a[%vi, %vk] : memref<12x8xf32> -> f32
          %y = mem.load %b[%vk, %vj] : memref<8x32xf32> -> f32
          %z = mem.load %c[%vi, %vj] : memref<12x32xf32> -> f32
          %m = arith.mulf %x, %y : f32
          %s = arith.addf %z, %m : f32
          mem.store %s, %c[%vi, %vj] : f32, memref<12x32xf32>
        } init {
          %zero = arith.constant 0.0 : f32
          mem.store %zero, %c[%vi, %vj] : f32, memref<12x32xf32>
        } {kind = "matmul", batch = 0 : i64}
      }
    }
  }
  func.return
}


// Not recognised: the generic schedule parallelizes the outer loop and vectorizes the inner one.
// CHECK-LABEL: func.func private @relu
// CHECK:         loop.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} parallel {
// CHECK-NEXT:      loop.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} vectorize {
// CHECK-NEXT:        loop.block "relu" (%{{.*}} = %[[I]], %{{.*}} = %[[J]]) [spatial, spatial]
// LOWER:         loop.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} parallel {
// LOWER:           mem.load %{{.*}} : memref<?x40xf32> -> vector<8xf32>
func.func private @relu(%x: memref<?x40xf32>, %y: memref<?x40xf32>) attributes {loop.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c40 = arith.constant 40 : index
  %n = mem.dim %x, 0 : memref<?x40xf32>
  loop.for %i = %c0 to %n step %c1 {
    loop.for %j = %c0 to %c40 step %c1 {
      loop.block "relu" (%vi = %i, %vj = %j) [spatial, spatial] {
        %v = mem.load %x[%vi, %vj] : memref<?x40xf32> -> f32
        %zero = arith.constant 0.0 : f32
        %r = arith.maximumf %v, %zero : f32
        mem.store %r, %y[%vi, %vj] : f32, memref<?x40xf32>
      }
    }
  }
  func.return
}

// A reduction along the only loop: nothing is legal, the kernel is left as it is.
// CHECK-LABEL: func.func private @sum
// CHECK:         loop.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:      loop.block "sum"
func.func private @sum(%x: memref<64xf32>, %y: memref<f32>) attributes {loop.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  loop.for %k = %c0 to %c64 step %c1 {
    loop.block "sum" (%vk = %k) [reduce] {
      %v = mem.load %x[%vk] : memref<64xf32> -> f32
      %a = mem.load %y[] : memref<f32> -> f32
      %s = arith.addf %a, %v : f32
      mem.store %s, %y[] : f32, memref<f32>
    } init {
      %zero = arith.constant 0.0 : f32
      mem.store %zero, %y[] : f32, memref<f32>
    }
  }
  func.return
}

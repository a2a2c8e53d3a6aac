func.func @conv_add_relu(%x: memref<?x?x?x?xf32>, %w: memref<?x?x?x?xf32>, %bias: memref<?xf32>, %z: memref<?x?x?x?xf32>) attributes {loop.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = mem.dim %z, 0 : memref<?x?x?x?xf32>
  %o = mem.dim %z, 1 : memref<?x?x?x?xf32>
  %h = mem.dim %z, 2 : memref<?x?x?x?xf32>
  %wd = mem.dim %z, 3 : memref<?x?x?x?xf32>
  %c = mem.dim %x, 1 : memref<?x?x?x?xf32>
  %kh = mem.dim %w, 2 : memref<?x?x?x?xf32>
  %kw = mem.dim %w, 3 : memref<?x?x?x?xf32>
  %conv = mem.alloca(%n, %o, %h, %wd) : memref<?x?x?x?xf32>
  %sum = mem.alloca(%n, %o, %h, %wd) : memref<?x?x?x?xf32>
  loop.for %i0 = %c0 to %n step %c1 {
    loop.for %i1 = %c0 to %o step %c1 {
      loop.for %i2 = %c0 to %h step %c1 {
        loop.for %i3 = %c0 to %wd step %c1 {
          loop.for %i4 = %c0 to %c step %c1 {
            loop.for %i5 = %c0 to %kh step %c1 {
              loop.for %i6 = %c0 to %kw step %c1 {
                loop.block "conv2d" (%vn = %i0, %vo = %i1, %vh = %i2, %vw = %i3, %vc = %i4, %vkh = %i5, %vkw = %i6) [spatial, spatial, spatial, spatial, reduce, reduce, reduce] {
                  %ih = arith.addi %vh, %vkh : index
                  %iw = arith.addi %vw, %vkw : index
                  %a = mem.load %x[%vn, %vc, %ih, %iw] : memref<?x?x?x?xf32> -> f32
                  %b = mem.load %w[%vo, %vc, %vkh, %vkw] : memref<?x?x?x?xf32> -> f32
                  %acc = mem.load %conv[%vn, %vo, %vh, %vw] : memref<?x?x?x?xf32> -> f32
                  %p = arith.mulf %a, %b : f32
                  %s = arith.addf %acc, %p : f32
                  mem.store %s, %conv[%vn, %vo, %vh, %vw] : f32, memref<?x?x?x?xf32>
                } init {
                  %zero = arith.constant 0.0 : f32
                  mem.store %zero, %conv[%vn, %vo, %vh, %vw] : f32, memref<?x?x?x?xf32>
                }
              }
            }
          }
        }
      }
    }
  }
  loop.for %j0 = %c0 to %n step %c1 {
    loop.for %j1 = %c0 to %o step %c1 {
      loop.for %j2 = %c0 to %h step %c1 {
        loop.for %j3 = %c0 to %wd step %c1 {
          loop.block "add" (%an = %j0, %ao = %j1, %ah = %j2, %aw = %j3) [spatial, spatial, spatial, spatial] {
            %v = mem.load %conv[%an, %ao, %ah, %aw] : memref<?x?x?x?xf32> -> f32
            %bv = mem.load %bias[%ao] : memref<?xf32> -> f32
            %r = arith.addf %v, %bv : f32
            mem.store %r, %sum[%an, %ao, %ah, %aw] : f32, memref<?x?x?x?xf32>
          }
        }
      }
    }
  }
  loop.for %k0 = %c0 to %n step %c1 {
    loop.for %k1 = %c0 to %o step %c1 {
      loop.for %k2 = %c0 to %h step %c1 {
        loop.for %k3 = %c0 to %wd step %c1 {
          loop.block "relu" (%rn = %k0, %ro = %k1, %rh = %k2, %rw = %k3) [spatial, spatial, spatial, spatial] {
            %e = mem.load %sum[%rn, %ro, %rh, %rw] : memref<?x?x?x?xf32> -> f32
            %zero = arith.constant 0.0 : f32
            %m = arith.maximumf %e, %zero : f32
            mem.store %m, %z[%rn, %ro, %rh, %rw] : f32, memref<?x?x?x?xf32>
          }
        }
      }
    }
  }
  func.return
}

// RUN: mini-opt --show-dialects | filecheck %s
// CHECK: Available dialects:
// CHECK: arith: {{.*}}arith.addi
// CHECK: func: {{.*}}func.func

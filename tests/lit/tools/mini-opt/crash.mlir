// A crash inside a pass (any non-diagnostic exception) is a bug: one error line, a reproducer, exit 1,
// no traceback. The reproducer's input is the IR just before the crashing pass.
// RUN: not mini-opt %s --load-pass-plugin=%S/Inputs/test_passes.py -p 'cse,func.func(canonicalize,test-crash)' 2>&1 \
// RUN:   | filecheck %s
// CHECK:      error: pass 'test-crash' crashed: ZeroDivisionError: division by zero in test-crash
// CHECK-NEXT: note: reproduce with: mini-opt {{.*}}mini-opt-repro-{{.*}}.mlir -p 'func.func(test-crash)'
// CHECK-NOT:  Traceback

// RUN: not mini-opt %s --load-pass-plugin=%S/Inputs/test_passes.py -p 'func.func(test-crash)' --debug-crash 2>&1 \
// RUN:   | filecheck %s --check-prefix=TRACE
// RUN: env MINIMLIR_TRACEBACK=1 not mini-opt %s --load-pass-plugin=%S/Inputs/test_passes.py -p test-crash 2>&1 \
// RUN:   | filecheck %s --check-prefix=TRACE
// TRACE: Traceback (most recent call last):
// TRACE: ZeroDivisionError: division by zero in test-crash
// TRACE: error: pass 'test-crash' crashed

func.func @fine() {
  func.return
}

func.func @crash() {
  func.return
}

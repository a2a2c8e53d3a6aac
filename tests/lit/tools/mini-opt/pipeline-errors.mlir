// Every bad pipeline names what is valid, exits 1 and prints no traceback.
// RUN: not mini-opt %s -p 'cse,canonicalise' 2>&1 | filecheck %s --check-prefix=UNKNOWN
// UNKNOWN:      error: unknown pass 'canonicalise'; did you mean 'canonicalize'{{.*}}?
// UNKNOWN-NEXT:   cse,canonicalise
// UNKNOWN-NEXT:       ^
// UNKNOWN-NEXT: available passes: {{.*}}canonicalize{{.*}}cleanup{{.*}}cse
// UNKNOWN-NOT:  Traceback

// RUN: not mini-opt %s --load-pass-plugin=%S/Inputs/test_passes.py -p 'test-options{cuont=1}' 2>&1 \
// RUN:   | filecheck %s --check-prefix=OPTION
// OPTION: error: pass 'test-options' has no option 'cuont'; did you mean 'count'?; valid options: count, ratio, flag, sizes, label, mode, limit

// RUN: not mini-opt %s --load-pass-plugin=%S/Inputs/test_passes.py -p 'test-options{count=many}' 2>&1 \
// RUN:   | filecheck %s --check-prefix=TYPE
// TYPE: error: option 'count' of pass 'test-options' expects int, got 'many'

// RUN: not mini-opt %s --load-pass-plugin=%S/Inputs/test_passes.py -p 'test-options{sizes=1,x}' 2>&1 \
// RUN:   | filecheck %s --check-prefix=LIST
// LIST: error: option 'sizes' of pass 'test-options' expects tuple[int, ...], got '1,x'

// RUN: not mini-opt %s --load-pass-plugin=%S/Inputs/test_passes.py -p 'test-options{mode=medium}' 2>&1 \
// RUN:   | filecheck %s --check-prefix=CHOICE
// CHOICE: error: option 'mode' of pass 'test-options' expects 'fast' | 'slow', got 'medium'

// RUN: not mini-opt %s --pass-pipeline='builtin.module(func.func(cse)' 2>&1 | filecheck %s --check-prefix=PAREN
// PAREN: error: expected ')' to close the nested pipeline

// RUN: not mini-opt %s --pass-pipeline='cse' 2>&1 | filecheck %s --check-prefix=ANCHOR
// ANCHOR: error: --pass-pipeline must be anchored on the module: 'builtin.module(...)'
// ANCHOR: hint: use -p 'a,b' for a plain list of passes

// RUN: not mini-opt %s -p 'func.fun(cse)' 2>&1 | filecheck %s --check-prefix=OPNAME
// OPNAME: error: unknown operation 'func.fun' used as a pipeline anchor; did you mean 'func.func'?

// RUN: not mini-opt %s -p 'cleanup{x=1}' 2>&1 | filecheck %s --check-prefix=NAMED
// NAMED: error: named pipeline 'cleanup' takes no options

// RUN: not mini-opt %s -p 'cse{x="open' 2>&1 | filecheck %s --check-prefix=QUOTE
// QUOTE: error: unterminated string in pass options

// RUN: not mini-opt %s -p cse --pass-pipeline='builtin.module(cse)' 2>&1 | filecheck %s --check-prefix=BOTH
// BOTH: error: -p and --pass-pipeline cannot be combined

// RUN: not mini-opt %s --load-pass-plugin=%S/Inputs/missing.py 2>&1 | filecheck %s --check-prefix=PLUGIN
// PLUGIN: error: --load-pass-plugin: no such file '{{.*}}missing.py'

// RUN: not mini-opt %s --no-such-flag 2>&1 | filecheck %s --check-prefix=FLAG
// FLAG: mini-opt: error: unrecognized arguments: --no-such-flag

func.func @f() {
  func.return
}

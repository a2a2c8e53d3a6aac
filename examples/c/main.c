/* Run a minimlir artifact from C, with no Python: load it, fill its inputs, run it, print the outputs.

     mini-compile examples/mlp.onnx -o mlp.so --emit-header        # mlp.so + mlp.h
     cc -I. -DMML_HEADER='"mlp.h"' examples/c/main.c -ldl -o run_model
     ./run_model ./mlp.so batch=3                                   # dynamic dims by name (default 1)

   The artifact is opened with dlopen; its functions are looked up by name, so this program works
   for any model (the header gives the types and the error codes). Input element j of input i is
   ((7j + 3i) mod 13 - 6) / 8 (integer inputs: (7j + 3i) mod 13), so a caller can reproduce them.
   Each output is printed as `output NAME (d0, d1, ...)` and then one value per line. Exit code 0 on
   success, 1 with a message on stderr otherwise (a wrong CPU, missing or mismatched params, ...). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef MML_HEADER
#define MML_HEADER "model.h"
#endif
#include MML_HEADER

/* `fn` = the artifact's function `name`, typed from its prototype in the header */
#define LOOKUP(fn, name)                                                                     \
  __typeof__(&name) fn = (__typeof__(&name))dlsym(lib, #name);                               \
  if (!fn) {                                                                                 \
    fprintf(stderr, "run_model: %s: no symbol %s (not a minimlir artifact?)\n", path, #name); \
    return 1;                                                                                \
  }

static size_t elem_size(int dtype) {
  switch (dtype) {
    case MML_FLOAT64: case MML_INT64: return 8;
    case MML_FLOAT32: case MML_INT32: return 4;
    case MML_FLOAT16: case MML_INT16: return 2;
    default: return 1;
  }
}

static void fill(void *data, int dtype, size_t n, size_t input) {
  for (size_t j = 0; j < n; j++) {
    long v = (long)((7 * j + 3 * input) % 13);
    double f = (double)(v - 6) / 8.0;
    switch (dtype) {
      case MML_FLOAT32: ((float *)data)[j] = (float)f; break;
      case MML_FLOAT64: ((double *)data)[j] = f; break;
      case MML_INT64: ((long long *)data)[j] = v; break;
      case MML_INT32: ((int *)data)[j] = (int)v; break;
      case MML_INT16: ((short *)data)[j] = (short)v; break;
      case MML_INT8: ((signed char *)data)[j] = (signed char)v; break;
      default: ((unsigned char *)data)[j] = (unsigned char)(dtype == MML_BOOL ? v & 1 : v); break;
    }
  }
}

static void print_value(const void *data, int dtype, size_t j) {
  switch (dtype) {
    case MML_FLOAT32: printf("%.9g\n", (double)((const float *)data)[j]); break;
    case MML_FLOAT64: printf("%.17g\n", ((const double *)data)[j]); break;
    case MML_INT64: printf("%lld\n", ((const long long *)data)[j]); break;
    case MML_INT32: printf("%d\n", ((const int *)data)[j]); break;
    case MML_INT16: printf("%d\n", ((const short *)data)[j]); break;
    case MML_INT8: printf("%d\n", ((const signed char *)data)[j]); break;
    default: printf("%u\n", ((const unsigned char *)data)[j]); break;
  }
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s MODEL.so [DIM=VALUE ...]\n", argv[0]);
    return 1;
  }
  const char *path = argv[1];
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "run_model: %s\n", dlerror());
    return 1;
  }
  LOOKUP(m_abi_version, mml_abi_version)
  LOOKUP(m_open, mml_open)
  LOOKUP(m_run, mml_run)
  LOOKUP(m_close, mml_close)
  LOOKUP(m_free, mml_free)
  LOOKUP(m_num_inputs, mml_num_inputs)
  LOOKUP(m_num_outputs, mml_num_outputs)
  LOOKUP(m_input_info, mml_input_info)
  LOOKUP(m_output_info, mml_output_info)
  if (m_abi_version() != MML_ABI_VERSION) {
    fprintf(stderr, "run_model: %s: artifact ABI version %d, this program was built for %d\n", path,
            m_abi_version(), MML_ABI_VERSION);
    return 1;
  }

  char err[512];
  mml_model *model;
  if (m_open(NULL, &model, err, sizeof err) != MML_OK) {
    fprintf(stderr, "run_model: %s\n", err);
    return 1;
  }
  size_t n_in = m_num_inputs(), n_out = m_num_outputs();
  mml_tensor *in = calloc(n_in ? n_in : 1, sizeof *in);
  mml_tensor *out = calloc(n_out ? n_out : 1, sizeof *out);
  for (size_t i = 0; i < n_in; i++) {
    mml_tensor_info info;
    m_input_info(i, &info);
    size_t count = 1;
    in[i].dtype = info.dtype;
    in[i].ndim = info.ndim;
    for (int k = 0; k < info.ndim; k++) {
      long long d = info.shape[k];
      if (d < 0) {  /* a dynamic dim: NAME=VALUE from the command line, else 1 */
        d = 1;
        for (int a = 2; a < argc; a++) {
          size_t len = strlen(info.dim_names[k]);
          if (len && strncmp(argv[a], info.dim_names[k], len) == 0 && argv[a][len] == '=') d = atoll(argv[a] + len + 1);
        }
      }
      in[i].shape[k] = d;
      count *= (size_t)d;
    }
    in[i].data = malloc(count * elem_size(info.dtype) + 1);
    fill(in[i].data, info.dtype, count, i);
  }
  if (m_run(model, in, n_in, out, n_out, err, sizeof err) != MML_OK) {
    fprintf(stderr, "run_model: %s\n", err);
    return 1;
  }
  for (size_t i = 0; i < n_out; i++) {
    mml_tensor_info info;
    m_output_info(i, &info);
    size_t count = 1;
    printf("output %s (", info.name);
    for (int k = 0; k < out[i].ndim; k++) {
      printf(k ? ", %lld" : "%lld", (long long)out[i].shape[k]);
      count *= (size_t)out[i].shape[k];
    }
    printf(")\n");
    for (size_t j = 0; j < count; j++) print_value(out[i].data, out[i].dtype, j);
    m_free(out[i].data);
  }
  for (size_t i = 0; i < n_in; i++) free(in[i].data);
  free(in);
  free(out);
  m_close(model);
  return 0;
}

"""The compiler driver (minimlir.compiler). So far: `interpreter`, the reference interpreter of the
graph and loop levels that tests (and the tuner) check compiled code against."""

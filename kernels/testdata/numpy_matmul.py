#!/usr/bin/python3
"""Time x @ w.T with numpy (float32) on the Linear shapes of the glmbench
model presets, the same shapes as BenchmarkMatMulT in kernels/bench_test.go,
and print GFLOP/s in the same naming.

numpy calls whatever BLAS libblas.so.3 points at; on Debian install
libopenblas0-pthread to make that OpenBLAS. Limit its threads the way the Go
benchmark is limited (GOMAXPROCS), e.g.

    OPENBLAS_NUM_THREADS=1 /usr/bin/python3 kernels/testdata/numpy_matmul.py
    OPENBLAS_NUM_THREADS=2 /usr/bin/python3 kernels/testdata/numpy_matmul.py

Each timing is the best of a few repeats of a loop of at least --min-time
seconds, so it includes numpy's per-call overhead (printed first, from a
1x1x1 product), which dominates the smallest shapes.
"""
import argparse
import ctypes
import os
import time

import numpy as np

# (preset, layer, out, in): the Hugging Face Linear weights, out × in.
LINEARS = [
    ("nano", "q_a", 32, 64), ("nano", "q_b", 32, 32), ("nano", "kv_a", 20, 64),
    ("nano", "kv_b", 56, 16), ("nano", "o", 64, 32), ("nano", "mlp_up", 128, 64),
    ("nano", "mlp_down", 64, 128), ("nano", "router", 16, 64), ("nano", "expert_up", 16, 64),
    ("nano", "expert_down", 64, 16), ("nano", "lm_head", 320, 64),
    ("tiny", "q_a", 128, 256), ("tiny", "q_b", 256, 128), ("tiny", "kv_a", 80, 256),
    ("tiny", "kv_b", 448, 64), ("tiny", "o", 256, 256), ("tiny", "mlp_up", 512, 256),
    ("tiny", "mlp_down", 256, 512), ("tiny", "router", 256, 256), ("tiny", "expert_up", 32, 256),
    ("tiny", "expert_down", 256, 32), ("tiny", "lm_head", 512, 256),
]
BATCHES = [1, 64, 512]


def blas_name():
    try:
        lib = ctypes.CDLL("libopenblas.so.0")
        lib.openblas_get_config.restype = ctypes.c_char_p
        lib.openblas_get_corename.restype = ctypes.c_char_p
        return "%s, core %s" % (lib.openblas_get_config().decode(), lib.openblas_get_corename().decode())
    except OSError:
        return "not OpenBLAS (libopenblas.so.0 not found)"


def seconds_per_call(m, n, k, min_time, repeats=3):
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    w = rng.uniform(-1, 1, (n, k)).astype(np.float32)
    out = np.empty((m, n), dtype=np.float32)
    wt = w.T
    np.matmul(x, wt, out=out)
    best = float("inf")
    for _ in range(repeats):
        calls, start = 0, time.perf_counter()
        while True:
            for _ in range(20):
                np.matmul(x, wt, out=out)
            calls += 20
            elapsed = time.perf_counter() - start
            if elapsed >= min_time:
                break
        best = min(best, elapsed / calls)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--min-time", type=float, default=0.1, help="seconds per timing loop")
    args = ap.parse_args()
    print("numpy %s, BLAS: %s, OPENBLAS_NUM_THREADS=%s" % (
        np.__version__, blas_name(), os.environ.get("OPENBLAS_NUM_THREADS", "(unset)")))
    print("per-call overhead (1x1x1): %.0f ns" % (seconds_per_call(1, 1, 1, args.min_time) * 1e9))
    for preset, layer, n, k in LINEARS:
        for m in BATCHES:
            sec = seconds_per_call(m, n, k, args.min_time)
            print("%s/%s_%dx%d/m=%d\t%10.0f ns/op\t%8.2f GFLOP/s" % (
                preset, layer, n, k, m, sec * 1e9, 2.0 * m * n * k / sec / 1e9))


if __name__ == "__main__":
    main()

"""gemm_torch.py times PyTorch's fp32 GEMM on the GPU at the sizes glmbench's
device benchmarks use, for the line beside glmbench's kernels and cuBLAS.

TF32 is off (torch.backends.cuda.matmul.allow_tf32 = False): the model's
kernels compute in true fp32, so the comparison is fp32 against fp32. Each
size is x (M x K) times w (N x K) transposed, as kernels.Backend.MatMulT, and
2*M*N*K floating-point operations.

Usage: python3 gemm_torch.py [MxNxK ...] (default: the sizes below).
"""

import sys
import time

import torch

# M x N x K: those of BenchmarkDeviceMatMulT (engine/cudaexec), which times
# the model's own GEMM and cuBLAS's SGEMM: a square for the peak, and a
# decode batch of 64 rows against a 4096-wide weight.
DEFAULT_SIZES = ["4096x4096x4096", "64x4096x4096"]


def time_gemm(m, n, k, min_seconds=0.2):
    """Returns the mean seconds of one x @ w.T of these sizes, in fp32."""
    x = torch.randn(m, k, device="cuda", dtype=torch.float32)
    w = torch.randn(n, k, device="cuda", dtype=torch.float32)
    out = torch.empty(m, n, device="cuda", dtype=torch.float32)
    for _ in range(10):
        torch.matmul(x, w.t(), out=out)
    torch.cuda.synchronize()
    iters = 10
    while True:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            torch.matmul(x, w.t(), out=out)
        end.record()
        end.synchronize()
        seconds = start.elapsed_time(end) / 1e3
        if seconds >= min_seconds or iters >= 1 << 20:
            return seconds / iters
        iters *= 2


def main(argv):
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    if not torch.cuda.is_available():
        print("gemm_torch: no CUDA device", file=sys.stderr)
        return 1
    print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, {torch.cuda.get_device_name(0)}, tf32 off")
    began = time.time()
    for size in argv or DEFAULT_SIZES:
        m, n, k = (int(v) for v in size.split("x"))
        s = time_gemm(m, n, k)
        print(f"torch fp32 gemm {m}x{n}x{k}: {2 * m * n * k / s / 1e12:.3f} TFLOP/s ({s * 1e6:.1f} us)", flush=True)
    print(f"gemm_torch: {time.time() - began:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

// kernels.cu: the CUDA C kernels of the reference model's forward pass, one
// or more per op of cudaexec.Ops. NVRTC compiles this file with no headers;
// the emulator (engine/cudaexec/emu) compiles it as C++ on the CPU, so the
// code keeps to what both take: no #include, no warp intrinsics, static
// __shared__ arrays only, and a kernel that calls __syncthreads returns
// only after its last barrier (every thread of a block reaches every
// barrier, in the same order).
//
// Every kernel is deterministic and batch-invariant: each output is reduced
// by one thread or one block in a fixed order that depends on neither the
// batch size nor the grid (no split-K, no atomics). Matrices are passed as a
// pointer to their first element and a row stride in elements. Indices read
// from memory (tokens, slots, positions, experts) are bounds-checked: one
// out of range reads zeros or is skipped, never memory outside its table.

#define THREADS 256

// The GEMM tiles: a block of 256 threads computes a tile of outputs over K
// in steps: 128 × 128 (gemm_wide, 8 × 8 per thread) for tall x, SKINNY_BM ×
// SKINNY_BN (gemm_tile, 1 × 4 per thread) for few rows (decode) and the
// experts' gathered rows. Every tile reduces each output the same way, so
// their bits agree.
#define SKINNY_BM 16
#define SKINNY_BN 64

// ATTEND_MAX_SEL bounds the keys one attention row reads (Selection.TopK);
// ATTEND_MAX_DK the query width (kv_lora_rank + rope dim).
#define ATTEND_MAX_SEL 4096
#define ATTEND_MAX_DK 1024

// ROUTE_MAX_EXPERTS and ROUTE_MAX_GROUPS bound the router's width.
#define ROUTE_MAX_EXPERTS 1024
#define ROUTE_MAX_GROUPS 64

__device__ __forceinline__ int imin(int a, int b) { return a < b ? a : b; }

__device__ __forceinline__ float neg_inf() { return __int_as_float((int)0xff800000); }

// gemm computes the tile at rows m0…, columns n0… of dst (M×N) = x (M×K)
// · B, with B = wᵀ (w N×K) when wt, else w (K×N). With a row list, row m
// of the product reads row list[m] / xdiv of x and writes row list[m] of
// dst (the experts' gathered rows). Each output is one thread's fused
// multiply-add chain from 0 over k = 0, 1, …, K−1, whatever the tile or
// the rows around it; the zeros that pad a tile past K leave it as it is.
template <int BM, int BN, int BK, int TM, int TN>
__device__ __forceinline__ void gemm_tile(float* dst, int ds, const float* x, int xs, const float* w, int ws,
                                          int M, int N, int K, int wt, int m0, int n0, const int* list, int xdiv) {
    // Four columns of padding: the tiles' stores (8 k by 4 rows per warp)
    // fall in distinct banks.
    __shared__ float As[BK][BM + 4];
    __shared__ float Bs[BK][BN + 4];
    const int NX = BN / TN, NY = BM / TM; // NX · NY == THREADS
    int tid = threadIdx.x;
    int tx = tid % NX, ty = tid / NX;
    float acc[TM][TN];
    #pragma unroll
    for (int i = 0; i < TM; i++)
        #pragma unroll
        for (int j = 0; j < TN; j++) acc[i][j] = 0.0f;
    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int e = tid; e < BM * BK; e += THREADS) {
            int r = e / BK, c = e % BK;
            int gm = m0 + r, gk = k0 + c;
            long long xr = gm < M ? (list ? list[gm] / xdiv : gm) : 0;
            As[c][r] = (gm < M && gk < K) ? x[xr * xs + gk] : 0.0f;
        }
        if (wt) {
            for (int e = tid; e < BN * BK; e += THREADS) {
                int r = e / BK, c = e % BK;
                int gn = n0 + r, gk = k0 + c;
                Bs[c][r] = (gn < N && gk < K) ? w[(long long)gn * ws + gk] : 0.0f;
            }
        } else {
            for (int e = tid; e < BN * BK; e += THREADS) {
                int kk = e / BN, nn = e % BN;
                int gn = n0 + nn, gk = k0 + kk;
                Bs[kk][nn] = (gn < N && gk < K) ? w[(long long)gk * ws + gn] : 0.0f;
            }
        }
        __syncthreads();
        #pragma unroll
        for (int kk = 0; kk < BK; kk++) {
            float a[TM], b[TN];
            #pragma unroll
            for (int i = 0; i < TM; i++) a[i] = As[kk][ty + NY * i];
            #pragma unroll
            for (int j = 0; j < TN; j++) b[j] = Bs[kk][tx + NX * j];
            #pragma unroll
            for (int i = 0; i < TM; i++)
                #pragma unroll
                for (int j = 0; j < TN; j++) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
    #pragma unroll
    for (int i = 0; i < TM; i++) {
        int gm = m0 + ty + NY * i;
        if (gm >= M) continue;
        long long dr = list ? list[gm] : gm;
        #pragma unroll
        for (int j = 0; j < TN; j++) {
            int gn = n0 + tx + NX * j;
            if (gn < N) dst[dr * ds + gn] = acc[i][j];
        }
    }
}

// vec4f is four floats aligned to 16 bytes (CUDA's float4, defined here
// since NVRTC runs with no headers): a tile row read as vec4f is one
// 128-bit shared-memory load.
struct __attribute__((aligned(16))) vec4f {
    float x, y, z, w;
};

// gemm_wide is gemm_tile for the 128 × 128 tile, 8 × 8 outputs per thread
// at rows 4·ty + i and 64 + 4·ty + i, columns 4·tx + j and 64 + 4·tx + j,
// so that each thread reads its operands as four 128-bit loads per k. Its
// chains are gemm_tile's, bit for bit.
__device__ __forceinline__ void gemm_wide(float* dst, int ds, const float* x, int xs, const float* w, int ws, int M,
                                          int N, int K, int wt) {
    const int BM = 128, BN = 128, BK = 8, P = (128 + 4) / 4;
    __shared__ vec4f As4[BK][P];
    __shared__ vec4f Bs4[BK][P];
    float* As = &As4[0][0].x; // As[c·4P + r]: k row c, tile row r
    float* Bs = &Bs4[0][0].x;
    int tid = threadIdx.x;
    int tx = tid % 16, ty = tid / 16;
    int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    float acc[8][8];
    #pragma unroll
    for (int i = 0; i < 8; i++)
        #pragma unroll
        for (int j = 0; j < 8; j++) acc[i][j] = 0.0f;
    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int e = tid; e < BM * BK; e += THREADS) {
            int r = e / BK, c = e % BK;
            int gm = m0 + r, gk = k0 + c;
            As[c * 4 * P + r] = (gm < M && gk < K) ? x[(long long)gm * xs + gk] : 0.0f;
        }
        if (wt) {
            for (int e = tid; e < BN * BK; e += THREADS) {
                int r = e / BK, c = e % BK;
                int gn = n0 + r, gk = k0 + c;
                Bs[c * 4 * P + r] = (gn < N && gk < K) ? w[(long long)gn * ws + gk] : 0.0f;
            }
        } else {
            for (int e = tid; e < BN * BK; e += THREADS) {
                int kk = e / BN, nn = e % BN;
                int gn = n0 + nn, gk = k0 + kk;
                Bs[kk * 4 * P + nn] = (gn < N && gk < K) ? w[(long long)gk * ws + gn] : 0.0f;
            }
        }
        __syncthreads();
        #pragma unroll
        for (int kk = 0; kk < BK; kk++) {
            vec4f a0 = As4[kk][ty], a1 = As4[kk][ty + 16];
            vec4f b0 = Bs4[kk][tx], b1 = Bs4[kk][tx + 16];
            float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
            #pragma unroll
            for (int i = 0; i < 8; i++)
                #pragma unroll
                for (int j = 0; j < 8; j++) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
    #pragma unroll
    for (int i = 0; i < 8; i++) {
        int gm = m0 + 4 * ty + (i & 3) + 64 * (i >> 2);
        if (gm >= M) continue;
        #pragma unroll
        for (int j = 0; j < 8; j++) {
            int gn = n0 + 4 * tx + (j & 3) + 64 * (j >> 2);
            if (gn < N) dst[(long long)gm * ds + gn] = acc[i][j];
        }
    }
}

// gemm is the tile of this block (blockIdx.y, blockIdx.x) of dst = x · B.
template <int BM, int BN, int BK, int TM, int TN>
__device__ __forceinline__ void gemm(float* dst, int ds, const float* x, int xs, const float* w, int ws,
                                     int M, int N, int K, int wt) {
    gemm_tile<BM, BN, BK, TM, TN>(dst, ds, x, xs, w, ws, M, N, K, wt, blockIdx.y * BM, blockIdx.x * BN, 0, 1);
}

// matmul_t sets dst = x · wᵀ: grid (⌈N/128⌉, ⌈M/128⌉), block 256.
extern "C" __global__ void matmul_t(float* dst, int ds, const float* x, int xs, const float* w, int ws,
                                    int M, int N, int K) {
    gemm_wide(dst, ds, x, xs, w, ws, M, N, K, 1);
}

// matmul sets dst = x · w: grid (⌈N/128⌉, ⌈M/128⌉), block 256.
extern "C" __global__ void matmul(float* dst, int ds, const float* x, int xs, const float* w, int ws,
                                  int M, int N, int K) {
    gemm_wide(dst, ds, x, xs, w, ws, M, N, K, 0);
}

// matmul_t_skinny is matmul_t for few rows, the same bits: grid (⌈N/64⌉,
// ⌈M/16⌉), block 256.
extern "C" __global__ void matmul_t_skinny(float* dst, int ds, const float* x, int xs, const float* w, int ws,
                                           int M, int N, int K) {
    gemm<SKINNY_BM, SKINNY_BN, 32, 1, 4>(dst, ds, x, xs, w, ws, M, N, K, 1);
}

// matmul_skinny is matmul for few rows, the same bits: grid (⌈N/64⌉,
// ⌈M/16⌉), block 256.
extern "C" __global__ void matmul_skinny(float* dst, int ds, const float* x, int xs, const float* w, int ws,
                                         int M, int N, int K) {
    gemm<SKINNY_BM, SKINNY_BN, 32, 1, 4>(dst, ds, x, xs, w, ws, M, N, K, 0);
}

// embed sets row t of dst to row tokens[t] of table (zeros for a token
// outside the table, or when zero0 and pos[t] == 0): grid T, block 256.
extern "C" __global__ void embed(float* dst, int ds, const float* table, int ts, int trows,
                                 const int* tokens, const int* pos, int T, int H, int zero0) {
    int t = blockIdx.x;
    if (t >= T) return;
    int tok = tokens[t];
    int zero = tok < 0 || tok >= trows || (zero0 && pos[t] == 0);
    for (int j = threadIdx.x; j < H; j += blockDim.x)
        dst[(long long)t * ds + j] = zero ? 0.0f : table[(long long)tok * ts + j];
}

// block_sum returns, to every thread, the sum of the block's v (float or
// double), added in a fixed tree order over a power-of-two block (≤ THREADS
// threads).
template <typename T>
__device__ __forceinline__ T block_sum(T v, T* sh) {
    int tid = threadIdx.x;
    sh[tid] = v;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
        if (tid < s) sh[tid] = sh[tid] + sh[tid + s];
        __syncthreads();
    }
    T r = sh[0];
    __syncthreads();
    return r;
}

// block_max_f returns, to every thread, the largest of the block's v.
__device__ __forceinline__ float block_max_f(float v, float* sh) {
    int tid = threadIdx.x;
    sh[tid] = v;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
        if (tid < s) sh[tid] = fmaxf(sh[tid], sh[tid + s]);
        __syncthreads();
    }
    float r = sh[0];
    __syncthreads();
    return r;
}

// block_scan_i returns the exclusive prefix sum of the block's v in thread
// order (Hillis–Steele), and the total in *total.
__device__ __forceinline__ int block_scan_i(int v, int* sh, int* total) {
    int tid = threadIdx.x, n = blockDim.x;
    sh[tid] = v;
    __syncthreads();
    for (int s = 1; s < n; s *= 2) {
        int add = tid >= s ? sh[tid - s] : 0;
        __syncthreads();
        sh[tid] = sh[tid] + add;
        __syncthreads();
    }
    int incl = sh[tid];
    *total = sh[n - 1];
    __syncthreads();
    return incl - v;
}

// rmsnorm sets dst row t = x_t / sqrt(mean(x_t²) + eps) ⊙ w: grid T, block 256.
extern "C" __global__ void rmsnorm(float* dst, int ds, const float* x, int xs, const float* w,
                                   int T, int H, float eps) {
    __shared__ float sh[THREADS];
    int t = blockIdx.x;
    int ok = t < T;
    const float* xr = x + (long long)(ok ? t : 0) * xs;
    float part = 0.0f;
    if (ok)
        for (int j = threadIdx.x; j < H; j += blockDim.x) part = fmaf(xr[j], xr[j], part);
    float ss = block_sum(part, sh);
    if (!ok || H == 0) return;
    float ms = __fdiv_rn(ss, (float)H);
    float inv = (float)(1.0 / sqrt((double)(ms + eps)));
    for (int j = threadIdx.x; j < H; j += blockDim.x)
        dst[(long long)t * ds + j] = __fmul_rn(__fmul_rn(xr[j], inv), w[j]);
}

// layernorm sets dst row t = (x_t − mean) / sqrt(var + eps) ⊙ w + b, the
// mean and the biased variance in double: grid T, block 256.
extern "C" __global__ void layernorm(float* dst, int ds, const float* x, int xs, const float* w,
                                     const float* b, int T, int H, float eps) {
    __shared__ double sh[THREADS];
    int t = blockIdx.x;
    int ok = t < T && H > 0;
    const float* xr = x + (long long)(t < T ? t : 0) * xs;
    double part = 0.0;
    if (ok)
        for (int j = threadIdx.x; j < H; j += blockDim.x) part += (double)xr[j];
    double mean = block_sum(part, sh) / (double)(H > 0 ? H : 1);
    part = 0.0;
    if (ok)
        for (int j = threadIdx.x; j < H; j += blockDim.x) {
            double d = (double)xr[j] - mean;
            part += d * d;
        }
    double var = block_sum(part, sh) / (double)(H > 0 ? H : 1);
    if (!ok) return;
    double inv = 1.0 / sqrt(var + (double)eps);
    for (int j = threadIdx.x; j < H; j += blockDim.x)
        dst[(long long)t * ds + j] = __fadd_rn(__fmul_rn((float)(((double)xr[j] - mean) * inv), w[j]), b[j]);
}

// rope rotates row t of x (2·half features, pairs interleaved) by pos[t]
// with the tables cos, sin (maxpos × half): grid T, block 128. A position
// outside the table leaves the row as it is.
extern "C" __global__ void rope(float* x, int xs, const int* pos, const float* cosT, const float* sinT,
                                int T, int half, int maxpos) {
    int t = blockIdx.x;
    if (t >= T) return;
    int p = pos[t];
    if (p < 0 || p >= maxpos) return;
    float* row = x + (long long)t * xs;
    for (int j = threadIdx.x; j < half; j += blockDim.x) {
        float c = cosT[(long long)p * half + j], s = sinT[(long long)p * half + j];
        float a = row[2 * j], b = row[2 * j + 1];
        row[2 * j] = __fsub_rn(__fmul_rn(a, c), __fmul_rn(b, s));
        row[2 * j + 1] = __fadd_rn(__fmul_rn(a, s), __fmul_rn(b, c));
    }
}

// scale sets x *= alpha (T × C): grid T, block 256.
extern "C" __global__ void scale(float* x, int xs, int T, int C, float alpha) {
    int t = blockIdx.x;
    if (t >= T) return;
    for (int j = threadIdx.x; j < C; j += blockDim.x) x[(long long)t * xs + j] = __fmul_rn(x[(long long)t * xs + j], alpha);
}

// add sets dst = a + b (T × C; dst may be a): grid T, block 256.
extern "C" __global__ void add(float* dst, int ds, const float* a, int as, const float* b, int bs, int T, int C) {
    int t = blockIdx.x;
    if (t >= T) return;
    for (int j = threadIdx.x; j < C; j += blockDim.x)
        dst[(long long)t * ds + j] = __fadd_rn(a[(long long)t * as + j], b[(long long)t * bs + j]);
}

// copy sets dst = src (T × C): grid T, block 256.
extern "C" __global__ void copy(float* dst, int ds, const float* src, int ss, int T, int C) {
    int t = blockIdx.x;
    if (t >= T) return;
    for (int j = threadIdx.x; j < C; j += blockDim.x) dst[(long long)t * ds + j] = src[(long long)t * ss + j];
}

// gather_rows sets row t of dst to row rows[t] of src (srows rows; zeros
// outside): grid T, block 256.
extern "C" __global__ void gather_rows(float* dst, int ds, const float* src, int ss, int srows, const int* rows,
                                       int T, int C) {
    int t = blockIdx.x;
    if (t >= T) return;
    int r = rows[t];
    int ok = r >= 0 && r < srows;
    for (int j = threadIdx.x; j < C; j += blockDim.x)
        dst[(long long)t * ds + j] = ok ? src[(long long)r * ss + j] : 0.0f;
}

// write_kv writes batch row t into slot slots[t] (of nslots): MLA row
// [c_t (rank) | kpe_t (dr)] and ik_t (di) into column slots[t] of index
// (di × nslots, stride is): grid T, block 256.
extern "C" __global__ void write_kv(float* mla, int ms, float* index, int is, int nslots, const float* c, int cs,
                                    const float* kpe, int ks, const float* ik, int iks, const int* slots, int T,
                                    int rank, int dr, int di) {
    int t = blockIdx.x;
    if (t >= T) return;
    int s = slots[t];
    if (s < 0 || s >= nslots) return;
    for (int j = threadIdx.x; j < rank + dr; j += blockDim.x)
        mla[(long long)s * ms + j] = j < rank ? c[(long long)t * cs + j] : kpe[(long long)t * ks + j - rank];
    for (int d = threadIdx.x; d < di; d += blockDim.x) index[(long long)d * is + s] = ik[(long long)t * iks + d];
}

// seq_slot returns the slot of position j of row t's sequence, or −1 when
// any list is out of range.
__device__ __forceinline__ int seq_slot(const int* seq_slots, int nseqslots, const int* seq_off, const int* row_seq,
                                        int t, int j, int nslots) {
    int sq = row_seq[t];
    if (sq < 0) return -1;
    int i = seq_off[sq] + j;
    if (i < 0 || i >= nseqslots) return -1;
    int s = seq_slots[i];
    return (s >= 0 && s < nslots) ? s : -1;
}

// index_scores sets scores[t, j] (T × visible, stride ss) to the DSA
// indexer's score of the key at position j ≤ pos[t] of row t's sequence:
// Σ_h iw[t,h] · max(iq[t,h·dim : (h+1)·dim] · k_slot, 0), heads in order,
// each dot product in feature order, with k_slot column slot of index
// (dim × nslots, stride is). A key whose slot is out of range scores NaN.
// Rows with pos+1 ≤ topk (dense) are skipped. Grid (⌈visible/256⌉, T),
// block 256.
extern "C" __global__ void index_scores(float* scores, int ss, const float* iq, int qs, const float* iw, int ws,
                                        const float* index, int is, int nslots, const int* seq_slots,
                                        int nseqslots, const int* seq_off, const int* row_seq,
                                        const int* row_pos, int T, int heads, int dim, int topk) {
    int t = blockIdx.y;
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= T) return;
    int p = row_pos[t];
    if (p + 1 <= topk || j > p || j >= ss) return;
    int s = seq_slot(seq_slots, nseqslots, seq_off, row_seq, t, j, nslots);
    float out;
    if (s < 0) {
        out = __int_as_float(0x7fc00000);
    } else {
        out = 0.0f;
        const float* q = iq + (long long)t * qs;
        for (int h = 0; h < heads; h++) {
            float dot = 0.0f;
            for (int d = 0; d < dim; d++) dot = fmaf(q[h * dim + d], index[(long long)d * is + s], dot);
            out = __fadd_rn(out, __fmul_rn(iw[(long long)t * ws + h], fmaxf(dot, 0.0f)));
        }
    }
    scores[(long long)t * ss + j] = out;
}

// order_key maps a score to an unsigned key in the same order: larger
// numbers larger keys, −0 as +0, and NaN (key 0) below every number.
__device__ __forceinline__ unsigned order_key(float v) {
    if (v != v) return 0u;
    if (v == 0.0f) v = 0.0f;
    unsigned u = (unsigned)__float_as_int(v);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

// topk_select fills row t's selection: picked[t·topk …] and count[t]. A
// dense row (pos+1 ≤ topk) takes the slots of positions 0…pos; another
// the topk slots of highest score (scores row t, positions 0…pos), ties to
// the earlier position, NaN last, in position order. A radix select finds
// the k-th largest key θ four bits at a time (each pass one block
// histogram of 16 bins, summed in a fixed tree), and how many keys equal
// to θ make the cut; then one pass in chunks of the block takes every key
// above θ and the first ones equal to it, placed by block prefix scans.
// Grid T, block 256.
extern "C" __global__ void topk_select(int* picked, int* count, const float* scores, int ss, const int* seq_slots,
                                       int nseqslots, const int* seq_off, const int* row_seq, const int* row_pos,
                                       int nslots, int T, int topk) {
    __shared__ int sh[THREADS];
    __shared__ int hist[16][THREADS];
    int t = blockIdx.x;
    int tid = threadIdx.x, nt = blockDim.x;
    int ok = t < T;
    int p = ok ? row_pos[t] : 0;
    int n = p + 1;
    int dense = !ok || p + 1 <= topk;
    if (!dense && n > ss) n = ss; // never read past the scores row
    if (ok && dense) {
        for (int j = tid; j <= p && j < topk; j += nt)
            picked[(long long)t * topk + j] = seq_slot(seq_slots, nseqslots, seq_off, row_seq, t, j, nslots);
        if (tid == 0) count[t] = imin(p + 1, topk);
    }
    const float* sc = scores + (long long)(ok ? t : 0) * ss;
    unsigned theta = 0, mask = 0;
    int ties = topk; // of the keys with θ's leading digits, how many make the cut
    for (int shift = 28; shift >= 0 && !dense; shift -= 4) {
        // Each thread counts into its own column of hist (shared memory,
        // not a local array a digit would index dynamically).
        for (int b = 0; b < 16; b++) hist[b][tid] = 0;
        for (int j = tid; j < n; j += nt) {
            unsigned key = order_key(sc[j]);
            if ((key & mask) == theta) hist[(key >> shift) & 15][tid]++;
        }
        __syncthreads();
        for (int s = nt / 2; s > 0; s /= 2) {
            if (tid < s)
                for (int b = 0; b < 16; b++) hist[b][tid] = hist[b][tid] + hist[b][tid + s];
            __syncthreads();
        }
        int digit = 0;
        for (int b = 15; b >= 0; b--) {
            if (hist[b][0] >= ties) {
                digit = b;
                break;
            }
            ties -= hist[b][0];
        }
        __syncthreads();
        theta |= (unsigned)digit << shift;
        mask |= 15u << shift;
    }
    int eqbase = 0, outbase = 0;
    for (int c0 = 0; c0 < n && !dense; c0 += nt) {
        int j = c0 + tid;
        unsigned key = j < n ? order_key(sc[j]) : 0u;
        int eq = j < n && key == theta;
        int eqtot;
        int eqrank = eqbase + block_scan_i(eq, sh, &eqtot);
        int take = j < n && (key > theta || (eq && eqrank < ties));
        int taketot;
        int at = outbase + block_scan_i(take, sh, &taketot);
        if (take && at < topk)
            picked[(long long)t * topk + at] = seq_slot(seq_slots, nseqslots, seq_off, row_seq, t, j, nslots);
        eqbase += eqtot;
        outbase += taketot;
    }
    if (ok && !dense && tid == 0) count[t] = imin(outbase, topk);
}

// attend is absorbed MLA's attention for row t (blockIdx.y) and head h
// (blockIdx.x): over the count[t] selected slots, scores scale · (q · key)
// with q = qt[t, h·dk …] and key the slot's MLA row (dk columns), softmax
// with the maximum subtracted (its sum in double), and o[t, h·rank …] = Σ
// p_j · (first rank columns of the slot's row), j in order. A slot out of
// range weighs 0. Grid (heads, T), block 256.
extern "C" __global__ void attend(float* o, int os, const float* qt, int qs, const float* mla, int ms, int nslots,
                                  const int* picked, const int* count, int topk, int T, int heads, int dk, int rank,
                                  float scale) {
    __shared__ float q[ATTEND_MAX_DK];
    __shared__ float p[ATTEND_MAX_SEL];
    __shared__ float shf[THREADS];
    __shared__ double shd[THREADS];
    int h = blockIdx.x, t = blockIdx.y;
    int tid = threadIdx.x, nt = blockDim.x;
    int ok = t < T && h < heads && dk <= ATTEND_MAX_DK;
    int n = ok ? imin(imin(count[t], topk), ATTEND_MAX_SEL) : 0;
    if (n < 0) n = 0;
    const int* sel = picked + (long long)(ok ? t : 0) * topk;
    for (int d = tid; d < dk && ok; d += nt) q[d] = qt[(long long)t * qs + h * dk + d];
    __syncthreads();
    float m = neg_inf();
    for (int j = tid; j < n; j += nt) {
        int s = sel[j];
        float v = neg_inf();
        if (s >= 0 && s < nslots) {
            const float* key = mla + (long long)s * ms;
            float dot = 0.0f;
            for (int d = 0; d < dk; d++) dot = fmaf(q[d], key[d], dot);
            v = __fmul_rn(dot, scale);
        }
        p[j] = v;
        m = fmaxf(m, v);
    }
    m = block_max_f(m, shf);
    double part = 0.0;
    for (int j = tid; j < n; j += nt) {
        float e = expf(p[j] - m);
        p[j] = e;
        part += (double)e;
    }
    double sum = block_sum(part, shd);
    float inv = (float)(1.0 / sum);
    for (int j = tid; j < n; j += nt) p[j] = __fmul_rn(p[j], inv);
    __syncthreads();
    for (int c = tid; c < rank && ok; c += nt) {
        float acc = 0.0f;
        for (int j = 0; j < n; j++) {
            int s = sel[j];
            if (s >= 0 && s < nslots) acc = fmaf(p[j], mla[(long long)s * ms + c], acc);
        }
        o[(long long)t * os + h * rank + c] = acc;
    }
}

// silu_mul sets dst = g / (1 + e^−g) · u (T × C): grid T, block 256.
extern "C" __global__ void silu_mul(float* dst, int ds, const float* g, int gs, const float* u, int us, int T, int C) {
    int t = blockIdx.x;
    if (t >= T) return;
    for (int j = threadIdx.x; j < C; j += blockDim.x) {
        float x = g[(long long)t * gs + j];
        float s = __fdiv_rn(x, __fadd_rn(1.0f, expf(-x)));
        dst[(long long)t * ds + j] = __fmul_rn(s, u[(long long)t * us + j]);
    }
}

// sigmoid sets dst = 1 / (1 + e^−x) (T × C): grid T, block 256.
extern "C" __global__ void sigmoid(float* dst, int ds, const float* x, int xs, int T, int C) {
    int t = blockIdx.x;
    if (t >= T) return;
    for (int j = threadIdx.x; j < C; j += blockDim.x)
        dst[(long long)t * ds + j] = __fdiv_rn(1.0f, __fadd_rn(1.0f, expf(-x[(long long)t * xs + j])));
}

// before reports whether element a (value va) ranks ahead of element b in
// kernels.TopK's order: larger first, equal values by lower index, NaN last.
__device__ __forceinline__ int before(float va, int a, float vb, int b) {
    int an = va != va, bn = vb != vb;
    if (an || bn) {
        if (an && bn) return a < b;
        return bn;
    }
    if (va != vb) return va > vb;
    return a < b;
}

// topk_order writes the indices of the k best of x[0…n) into out, best
// first: each pick is the best element ranking after the previous one.
__device__ __forceinline__ void topk_order(const float* x, int n, int k, int* out) {
    int prev = -1;
    for (int i = 0; i < k; i++) {
        int best = -1;
        for (int j = 0; j < n; j++) {
            if (prev >= 0 && !before(x[prev], prev, x[j], j)) continue;
            if (best < 0 || before(x[j], j, x[best], best)) best = j;
        }
        out[i] = best;
        prev = best;
    }
}

// route is noaux_tc for row t (one thread per row): choice = scores + bias;
// with groups > 1 only the topk_group groups of highest sum of their two
// best choices compete (the others −Inf); the K best choices, in
// kernels.TopK's order, go to idx[t·K …], weighted by their unbiased
// scores, normalised to sum 1 when norm, times scaling. Grid ⌈T/64⌉, block 64.
extern "C" __global__ void route(int* idx, float* w, int wst, const float* scores, int ss, const float* bias, int T,
                                 int N, int groups, int topk_group, int K, float scaling, int norm) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= T || N > ROUTE_MAX_EXPERTS || K > N) return;
    const float* s = scores + (long long)t * ss;
    float choice[ROUTE_MAX_EXPERTS];
    for (int i = 0; i < N; i++) choice[i] = __fadd_rn(s[i], bias[i]);
    if (groups > 1 && groups <= ROUTE_MAX_GROUPS) {
        int per = N / groups;
        float gscore[ROUTE_MAX_GROUPS];
        int gidx[ROUTE_MAX_GROUPS];
        int top2[2];
        for (int g = 0; g < groups; g++) {
            topk_order(choice + g * per, per, 2, top2);
            gscore[g] = __fadd_rn(choice[g * per + top2[0]], choice[g * per + top2[1]]);
        }
        int kg = topk_group > 1 ? topk_group : 1;
        if (kg > groups) kg = groups;
        topk_order(gscore, groups, kg, gidx);
        for (int g = 0; g < groups; g++) {
            int keep = 0;
            for (int i = 0; i < kg; i++) keep |= gidx[i] == g;
            if (!keep)
                for (int i = g * per; i < (g + 1) * per; i++) choice[i] = neg_inf();
        }
    }
    int* out = idx + (long long)t * K;
    topk_order(choice, N, K, out);
    float* wr = w + (long long)t * wst;
    float sum = 0.0f;
    for (int i = 0; i < K; i++) {
        wr[i] = s[out[i]];
        sum = __fadd_rn(sum, wr[i]);
    }
    float f = scaling;
    if (norm) f = __fdiv_rn(f, __fadd_rn(sum, 1e-20f));
    for (int i = 0; i < K; i++) wr[i] = __fmul_rn(wr[i], f);
}

// expert_linear is one Linear of the routed experts, dst[r] = x[r / xdiv]
// · w_eᵀ for every (row, slot) pair r < TK routed to expert e = idx[r],
// with w_e rows e·nout … (e+1)·nout − 1 of w (nout × nin each). Block
// (n-tile, e) gathers, in order, the pairs routed to e and runs the skinny
// GEMM tile over them, so an expert's weights are read once per 16 pairs;
// each output is the same chain as matmul_t's, whatever the grouping.
// Block row e = nexp writes zeros for the pairs whose expert is out of
// range. Grid (⌈nout/64⌉, nexp + 1), block 256.
extern "C" __global__ void expert_linear(float* dst, int ds, const float* x, int xs, int xdiv, const float* w,
                                         int wst, const int* idx, int TK, int nout, int nin, int nexp) {
    __shared__ int list[THREADS];
    __shared__ int sh[THREADS];
    int e = blockIdx.y, n0 = blockIdx.x * SKINNY_BN;
    int tid = threadIdx.x, nt = blockDim.x;
    const float* we = w + (long long)(e < nexp ? e : 0) * nout * wst;
    for (int c0 = 0; c0 < TK; c0 += nt) {
        int r = c0 + tid;
        int ex = r < TK ? idx[r] : -2;
        int mine = r < TK && (e < nexp ? ex == e : (ex < 0 || ex >= nexp));
        int tot;
        int at = block_scan_i(mine, sh, &tot);
        if (mine) list[at] = r;
        __syncthreads();
        for (int m0 = 0; m0 < tot; m0 += SKINNY_BM) {
            if (e < nexp) {
                gemm_tile<SKINNY_BM, SKINNY_BN, 32, 1, 4>(dst, ds, x, xs, we, wst, tot, nout, nin, 1, m0, n0, list,
                                                          xdiv);
            } else {
                for (int q = tid; q < SKINNY_BM * SKINNY_BN; q += nt) {
                    int m = m0 + q / SKINNY_BN, n = n0 + q % SKINNY_BN;
                    if (m < tot && n < nout) dst[(long long)list[m] * ds + n] = 0.0f;
                }
            }
        }
        __syncthreads();
    }
}

// combine adds to row t of out Σ_i w[t,i] · res[t·K+i], i in order, each
// product rounded before its sum: grid T, block 256.
extern "C" __global__ void combine(float* out, int os, const float* res, int rs, const float* w, int wst, int T, int K,
                                   int H) {
    int t = blockIdx.x;
    if (t >= T) return;
    for (int j = threadIdx.x; j < H; j += blockDim.x) {
        float acc = out[(long long)t * os + j];
        for (int i = 0; i < K; i++)
            acc = __fadd_rn(acc, __fmul_rn(w[(long long)t * wst + i], res[((long long)t * K + i) * rs + j]));
        out[(long long)t * os + j] = acc;
    }
}

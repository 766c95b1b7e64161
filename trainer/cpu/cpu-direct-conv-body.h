/* cpu-direct-conv-body.h: the 3x3 convolution kernels of cpu-direct-conv.c
 * for one vector width. Included once per instruction set with SUFFIX,
 * TARGET (a function attribute), VW (floats per vector) and TILE_FLOATS
 * (accumulator floats kept in registers) defined.
 *
 * A tile of output pixels by all output channels stays in registers while
 * the 9 taps and every input channel stream past: one broadcast and K / VW
 * fused multiply-adds per input value, with no im2col copy in between. */

#define GT_CAT_(a, b) a##b
#define GT_CAT(a, b) GT_CAT_ (a, b)
#define VEC GT_CAT (gt_vec_, SUFFIX)
#define NAME(base, k) GT_CAT (GT_CAT (base, k), GT_CAT (_, SUFFIX))

typedef float VEC __attribute__ ((vector_size (VW * 4), aligned (4)));

/* y[h][w][K] = sum over taps and c of pad[y + ky][x + kx][c] *
 * weights[ky][kx][c][K], for one zero-padded image. */
#define DEFINE_FORWARD(K)                                                      \
  static TARGET void NAME (forward_, K) (const float *restrict pad, int h,     \
      int w, int c_in, const float *restrict weights, float *restrict y)       \
  {                                                                            \
    enum                                                                       \
    {                                                                          \
      V = K / VW,                                                              \
      T = TILE_FLOATS / K > 0 ? TILE_FLOATS / K : 1                            \
    };                                                                         \
    int padded_w = w + 2, oy, ox;                                              \
                                                                               \
    for (oy = 0; oy < h; oy++)                                                 \
      for (ox = 0; ox < w; ox += T) {                                          \
        VEC acc[T][V];                                                         \
        int t, j, tap, c, n = w - ox < T ? w - ox : T;                         \
                                                                               \
        memset (acc, 0, sizeof (acc));                                         \
        for (tap = 0; tap < 9; tap++) {                                        \
          const float *in =                                                    \
              pad + ((size_t)(oy + tap / 3) * padded_w + ox + tap % 3) * c_in; \
          const float *taps = weights + (size_t)tap * c_in * K;                \
                                                                               \
          for (c = 0; c < c_in; c++) {                                         \
            VEC wv[V];                                                         \
                                                                               \
            _Pragma ("GCC unroll 16") for (j = 0; j < V; j++) wv[j] =          \
                *(const VEC *)(taps + (size_t)c * K + j * VW);                 \
            _Pragma ("GCC unroll 16") for (t = 0; t < T; t++)                  \
            {                                                                  \
              float xs = in[t * c_in + c];                                     \
                                                                               \
              _Pragma ("GCC unroll 16") for (j = 0; j < V; j++) acc[t][j] +=   \
                  xs * wv[j];                                                  \
            }                                                                  \
          }                                                                    \
        }                                                                      \
        for (t = 0; t < n; t++)                                                \
          for (j = 0; j < V; j++)                                              \
            *(VEC *)(y + ((size_t)oy * w + ox + t) * K + j * VW) = acc[t][j];  \
      }                                                                        \
  }

/* grads[tap][c][K] += sum over pixels of pad[y + ky][x + kx][c] *
 * dy[y][x][K], for one zero-padded image. */
#define DEFINE_WEIGHT_GRAD(K)                                                  \
  static TARGET void NAME (weight_grad_, K) (const float *restrict pad, int h, \
      int w, int c_in, const float *restrict dy, float *restrict grads)        \
  {                                                                            \
    enum                                                                       \
    {                                                                          \
      V = K / VW,                                                              \
      CB = TILE_FLOATS / K > 0 ? TILE_FLOATS / K : 1                           \
    };                                                                         \
    int padded_w = w + 2, tap, c0;                                             \
                                                                               \
    for (tap = 0; tap < 9; tap++)                                              \
      for (c0 = 0; c0 < c_in; c0 += CB) {                                      \
        VEC acc[CB][V];                                                        \
        int oy, ox, cb, j, nc = c_in - c0 < CB ? c_in - c0 : CB;               \
                                                                               \
        memset (acc, 0, sizeof (acc));                                         \
        for (oy = 0; oy < h; oy++) {                                           \
          const float *in =                                                    \
              pad + ((size_t)(oy + tap / 3) * padded_w + tap % 3) * c_in + c0; \
          const float *d = dy + (size_t)oy * w * K;                            \
                                                                               \
          for (ox = 0; ox < w; ox++, in += c_in, d += K) {                     \
            VEC dv[V];                                                         \
                                                                               \
            _Pragma ("GCC unroll 16") for (j = 0; j < V; j++) dv[j] =          \
                *(const VEC *)(d + j * VW);                                    \
            _Pragma ("GCC unroll 16") for (cb = 0; cb < CB; cb++)              \
            {                                                                  \
              float xs = in[cb];                                               \
                                                                               \
              _Pragma ("GCC unroll 16") for (j = 0; j < V; j++) acc[cb][j] +=  \
                  xs * dv[j];                                                  \
            }                                                                  \
          }                                                                    \
        }                                                                      \
        for (cb = 0; cb < nc; cb++)                                            \
          for (j = 0; j < V; j++)                                              \
            *(VEC *)(grads + ((size_t)tap * c_in + c0 + cb) * K + j * VW) +=   \
                acc[cb][j];                                                    \
      }                                                                        \
  }

DEFINE_FORWARD (16)
DEFINE_FORWARD (32)
DEFINE_FORWARD (64)
DEFINE_WEIGHT_GRAD (16)
DEFINE_WEIGHT_GRAD (32)
DEFINE_WEIGHT_GRAD (64)

static const GtDirectKernels GT_CAT (kernels_, SUFFIX) = {
  { NAME (forward_, 16), NAME (forward_, 32), NAME (forward_, 64) },
  { NAME (weight_grad_, 16), NAME (weight_grad_, 32), NAME (weight_grad_, 64) },
};

#undef DEFINE_FORWARD
#undef DEFINE_WEIGHT_GRAD
#undef VEC
#undef NAME

/* SPDX-License-Identifier: LGPL-2.1-or-later */
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

/* y[h][w][K] = sum over taps and c of pad[S y + ky][S x + kx][c] *
 * weights[ky][kx][c][K], for one zero-padded image (padded_w pixels a row)
 * and an h x w output. S, the stride, and CIN, the number of input
 * channels, are constants of the variant (CIN 0: any, from c_in): with a
 * constant pixel stride the T inputs of a tile sit at fixed offsets of one
 * pointer, where a run-time stride needs T index registers that the
 * compiler cannot all keep (it spilled them). */
#define DEFINE_FORWARD_VARIANT(K, VARIANT, CIN, S)                             \
  static TARGET void NAME (GT_CAT (forward_, K), VARIANT) (                    \
      const float *restrict pad, int padded_w, int h, int w, int c_in_arg,     \
      const float *restrict weights, float *restrict y, const Prefetch *pf)    \
  {                                                                            \
    const int c_in = (CIN) > 0 ? (CIN) : c_in_arg;                             \
    enum                                                                       \
    {                                                                          \
      V = K / VW,                                                              \
      T = TILE_FLOATS / K > 0 ? TILE_FLOATS / K : 1                            \
    };                                                                         \
    int oy, ox;                                                                \
                                                                               \
    for (oy = 0; oy < h; oy++)                                                 \
      for (ox = 0; ox < w; ox += T) {                                          \
        VEC acc[T][V];                                                         \
        int t, j, tap, c, n = w - ox < T ? w - ox : T;                         \
                                                                               \
        if (ox == 0)                                                           \
          prefetch_part (pf, oy, h);                                           \
        _Pragma ("GCC unroll 16") for (t = 0; t < T; t++) _Pragma (            \
            "GCC unroll 16") for (j = 0; j < V; j++) acc[t][j] = (VEC){ 0 };   \
        for (tap = 0; tap < 9; tap++) {                                        \
          const float *in = pad                                                \
              + ((size_t)(S * oy + tap / 3) * padded_w + S * ox + tap % 3)     \
                  * c_in;                                                      \
          const float *taps = weights + (size_t)tap * c_in * K;                \
                                                                               \
          for (c = 0; c < c_in; c++) {                                         \
            VEC wv[V];                                                         \
                                                                               \
            _Pragma ("GCC unroll 16") for (j = 0; j < V; j++) wv[j] =          \
                *(const VEC *)(taps + (size_t)c * K + j * VW);                 \
            _Pragma ("GCC unroll 16") for (t = 0; t < T; t++)                  \
            {                                                                  \
              float xs = in[S * t * c_in + c];                                 \
                                                                               \
              _Pragma ("GCC unroll 16") for (j = 0; j < V; j++) acc[t][j] +=   \
                  xs * wv[j];                                                  \
            }                                                                  \
          }                                                                    \
        }                                                                      \
        _Pragma ("GCC unroll 16") for (t = 0; t < T; t++)                      \
        {                                                                      \
          if (t < n)                                                           \
            _Pragma ("GCC unroll 16") for (j = 0; j < V; j++)                  \
                * (VEC *)(y + ((size_t)oy * w + ox + t) * K + j * VW) =        \
                acc[t][j];                                                     \
        }                                                                      \
      }                                                                        \
  }

#define FORWARD_CALL(K, VARIANT)                                               \
  NAME (GT_CAT (forward_, K), VARIANT)                                         \
  (pad, padded_w, h, w, c_in, weights, y, pf)

/* The forward kernel for K outputs: the variant for the stride and c_in,
 * or the generic one for the stride. */
#define DEFINE_FORWARD(K)                                                      \
  DEFINE_FORWARD_VARIANT (K, _any_s1, 0, 1)                                    \
  DEFINE_FORWARD_VARIANT (K, _c16_s1, 16, 1)                                   \
  DEFINE_FORWARD_VARIANT (K, _c32_s1, 32, 1)                                   \
  DEFINE_FORWARD_VARIANT (K, _c64_s1, 64, 1)                                   \
  DEFINE_FORWARD_VARIANT (K, _any_s2, 0, 2)                                    \
  DEFINE_FORWARD_VARIANT (K, _c16_s2, 16, 2)                                   \
  DEFINE_FORWARD_VARIANT (K, _c32_s2, 32, 2)                                   \
  DEFINE_FORWARD_VARIANT (K, _c64_s2, 64, 2)                                   \
  static TARGET void NAME (forward_, K) (const float *restrict pad,            \
      int padded_w, int stride, int h, int w, int c_in,                        \
      const float *restrict weights, float *restrict y, const Prefetch *pf)    \
  {                                                                            \
    switch (c_in + 1000 * stride) {                                            \
      case 1016:                                                               \
        FORWARD_CALL (K, _c16_s1);                                             \
        break;                                                                 \
      case 1032:                                                               \
        FORWARD_CALL (K, _c32_s1);                                             \
        break;                                                                 \
      case 1064:                                                               \
        FORWARD_CALL (K, _c64_s1);                                             \
        break;                                                                 \
      case 2016:                                                               \
        FORWARD_CALL (K, _c16_s2);                                             \
        break;                                                                 \
      case 2032:                                                               \
        FORWARD_CALL (K, _c32_s2);                                             \
        break;                                                                 \
      case 2064:                                                               \
        FORWARD_CALL (K, _c64_s2);                                             \
        break;                                                                 \
      default:                                                                 \
        if (stride == 2)                                                       \
          FORWARD_CALL (K, _any_s2);                                           \
        else                                                                   \
          FORWARD_CALL (K, _any_s1);                                           \
    }                                                                          \
  }

/* grads[tap][c][K] += sum over output pixels of
 * pad[stride y + ky][stride x + kx][c] * dy[y][x][K], for one zero-padded
 * image (padded_w pixels a row) and an h x w output gradient. */
#define DEFINE_WEIGHT_GRAD(K)                                                  \
  static TARGET void NAME (weight_grad_, K) (const float *restrict pad,        \
      int padded_w, int stride, int h, int w, int c_in,                        \
      const float *restrict dy, float *restrict grads, const Prefetch *pf)     \
  {                                                                            \
    enum                                                                       \
    {                                                                          \
      V = K / VW,                                                              \
      CB = TILE_FLOATS / K > 0 ? TILE_FLOATS / K : 1                           \
    };                                                                         \
    size_t step = (size_t)stride * c_in;                                       \
    int tap, c0;                                                               \
                                                                               \
    for (tap = 0; tap < 9; tap++)                                              \
      for (c0 = 0; c0 < c_in; c0 += CB) {                                      \
        VEC acc[CB][V];                                                        \
        int oy, ox, cb, j, nc = c_in - c0 < CB ? c_in - c0 : CB;               \
                                                                               \
        _Pragma ("GCC unroll 16") for (cb = 0; cb < CB; cb++) _Pragma (        \
            "GCC unroll 16") for (j = 0; j < V; j++) acc[cb][j] = (VEC){ 0 };  \
        for (oy = 0; oy < h; oy++) {                                           \
          const float *in = pad                                                \
              + ((size_t)(stride * oy + tap / 3) * padded_w + tap % 3) * c_in  \
              + c0;                                                            \
          const float *d = dy + (size_t)oy * w * K;                            \
                                                                               \
          if (c0 == 0)                                                         \
            prefetch_part (pf, tap *h + oy, 9 * h);                            \
          for (ox = 0; ox < w; ox++, in += step, d += K) {                     \
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
        _Pragma ("GCC unroll 16") for (cb = 0; cb < CB; cb++) if (cb < nc)     \
                _Pragma ("GCC unroll 16") for (j = 0; j < V; j++)              \
            * (VEC *)(grads + ((size_t)tap * c_in + c0 + cb) * K + j * VW) +=  \
            acc[cb][j];                                                        \
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
#undef DEFINE_FORWARD_VARIANT
#undef FORWARD_CALL
#undef DEFINE_WEIGHT_GRAD
#undef VEC
#undef NAME

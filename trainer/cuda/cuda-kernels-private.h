/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cuda-kernels-private.h: what the kernel files (cuda-kernels.cu,
 * cuda-norm.cu) share: the block size, bf16, loads and stores of four
 * consecutive values in either dtype, and the grid for a number of items. */
#ifndef GT_CUDA_KERNELS_PRIVATE_H
#define GT_CUDA_KERNELS_PRIVATE_H

#include "cuda-kernels.h"

#include <cuda_bf16.h>

#define THREADS 256

typedef __nv_bfloat16 bf16;

/* ---- loads and stores of four consecutive values ---- */

static __device__ __forceinline__ void
load4 (const float *p, float v[4])
{
  float4 q = *(const float4 *)p;

  v[0] = q.x;
  v[1] = q.y;
  v[2] = q.z;
  v[3] = q.w;
}

static __device__ __forceinline__ void
load4 (const bf16 *p, float v[4])
{
  uint2 q = *(const uint2 *)p;
  float2 a = __bfloat1622float2 (*(const __nv_bfloat162 *)&q.x);
  float2 b = __bfloat1622float2 (*(const __nv_bfloat162 *)&q.y);

  v[0] = a.x;
  v[1] = a.y;
  v[2] = b.x;
  v[3] = b.y;
}

static __device__ __forceinline__ void
store4 (float *p, const float v[4])
{
  *(float4 *)p = make_float4 (v[0], v[1], v[2], v[3]);
}

static __device__ __forceinline__ void
store4 (bf16 *p, const float v[4])
{
  __nv_bfloat162 a = __floats2bfloat162_rn (v[0], v[1]);
  __nv_bfloat162 b = __floats2bfloat162_rn (v[2], v[3]);
  uint2 q;

  q.x = *(const unsigned int *)&a;
  q.y = *(const unsigned int *)&b;
  *(uint2 *)p = q;
}

static __device__ __forceinline__ float
to_float (float v)
{
  return v;
}

static __device__ __forceinline__ float
to_float (bf16 v)
{
  return __bfloat162float (v);
}

template <typename T> static __device__ __forceinline__ T from_float (float v);

template <>
__device__ __forceinline__ float
from_float<float> (float v)
{
  return v;
}

template <>
__device__ __forceinline__ bf16
from_float<bf16> (float v)
{
  return __float2bfloat16_rn (v);
}

static inline unsigned
grid_for (size_t items, unsigned threads)
{
  size_t blocks = (items + threads - 1) / threads;

  if (blocks > 65535u * 16u)
    blocks = 65535u * 16u; /* the kernels stride over the rest */
  return blocks > 0 ? (unsigned)blocks : 1u;
}

#endif /* GT_CUDA_KERNELS_PRIVATE_H */

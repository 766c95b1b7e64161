/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* gt-random.h: the random generator every part of gst-train draws from.
 *
 * xoshiro256** seeded through splitmix64, so that a (seed, stream) pair gives
 * the same numbers on every platform and GLib version; GRand's sequence is an
 * implementation detail we do not want our reproducibility to rest on.
 */
#ifndef GT_RANDOM_H
#define GT_RANDOM_H

#include <math.h>
#include <stdint.h>

typedef struct
{
  uint64_t s[4];
} GtRandom;

static inline uint64_t
gt_random_splitmix64 (uint64_t *state)
{
  uint64_t z = (*state += UINT64_C (0x9e3779b97f4a7c15));

  z = (z ^ (z >> 30)) * UINT64_C (0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C (0x94d049bb133111eb);
  return z ^ (z >> 31);
}

/* Seeds @rng from @seed and @stream: distinct streams (epochs, threads) of
 * one seed give independent sequences. */
static inline void
gt_random_init (GtRandom *rng, uint64_t seed, uint64_t stream)
{
  uint64_t state = seed ^ (stream * UINT64_C (0xd1342543de82ef95));
  int i;

  for (i = 0; i < 4; i++)
    rng->s[i] = gt_random_splitmix64 (&state);
}

static inline uint64_t
gt_random_rotl (uint64_t x, int k)
{
  return (x << k) | (x >> (64 - k));
}

static inline uint64_t
gt_random_next (GtRandom *rng)
{
  uint64_t *s = rng->s;
  uint64_t result = gt_random_rotl (s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;

  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = gt_random_rotl (s[3], 45);
  return result;
}

/* Uniform in [0, 1) with 53 random bits. */
static inline double
gt_random_double (GtRandom *rng)
{
  return (gt_random_next (rng) >> 11) * (1.0 / 9007199254740992.0);
}

/* Standard normal, by Box-Muller (one of the pair is dropped: clear rather
 * than fast; only weight initialisation draws from it). */
static inline double
gt_random_normal (GtRandom *rng)
{
  double u1 = 1.0 - gt_random_double (rng); /* (0, 1]: log stays finite */
  double u2 = gt_random_double (rng);

  return sqrt (-2.0 * log (u1)) * cos (6.283185307179586 * u2);
}

/* Uniform in [0, @bound) without modulo bias; @bound > 0. */
static inline uint64_t
gt_random_below (GtRandom *rng, uint64_t bound)
{
  uint64_t threshold = (-bound) % bound;

  for (;;) {
    uint64_t r = gt_random_next (rng);

    if (r >= threshold)
      return r % bound;
  }
}

/* Fisher-Yates shuffle of @n uint64_t values. */
static inline void
gt_random_shuffle (GtRandom *rng, uint64_t *values, uint64_t n)
{
  uint64_t i;

  for (i = n; i > 1; i--) {
    uint64_t j = gt_random_below (rng, i);
    uint64_t tmp = values[i - 1];

    values[i - 1] = values[j];
    values[j] = tmp;
  }
}

#endif /* GT_RANDOM_H */

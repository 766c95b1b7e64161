/* train-random.h: the random generator every gst-train element draws from.
 *
 * xoshiro256** seeded through splitmix64, so that a (seed, stream) pair gives
 * the same numbers on every platform and GLib version; GRand's sequence is an
 * implementation detail we do not want our reproducibility to rest on.
 */
#ifndef __GST_TRAIN_RANDOM_H__
#define __GST_TRAIN_RANDOM_H__

#include <glib.h>

typedef struct
{
  guint64 s[4];
} GstTrainRandom;

static inline guint64
gst_train_random_splitmix64 (guint64 *state)
{
  guint64 z = (*state += G_GUINT64_CONSTANT (0x9e3779b97f4a7c15));

  z = (z ^ (z >> 30)) * G_GUINT64_CONSTANT (0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * G_GUINT64_CONSTANT (0x94d049bb133111eb);
  return z ^ (z >> 31);
}

/* Seeds @rng from @seed and @stream: distinct streams (epochs, threads) of
 * one seed give independent sequences. */
static inline void
gst_train_random_init (GstTrainRandom *rng, guint64 seed, guint64 stream)
{
  guint64 state = seed ^ (stream * G_GUINT64_CONSTANT (0xd1342543de82ef95));
  int i;

  for (i = 0; i < 4; i++)
    rng->s[i] = gst_train_random_splitmix64 (&state);
}

static inline guint64
gst_train_random_rotl (guint64 x, int k)
{
  return (x << k) | (x >> (64 - k));
}

static inline guint64
gst_train_random_next (GstTrainRandom *rng)
{
  guint64 *s = rng->s;
  guint64 result = gst_train_random_rotl (s[1] * 5, 7) * 9;
  guint64 t = s[1] << 17;

  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = gst_train_random_rotl (s[3], 45);
  return result;
}

/* Uniform in [0, 1) with 53 random bits. */
static inline gdouble
gst_train_random_double (GstTrainRandom *rng)
{
  return (gst_train_random_next (rng) >> 11) * (1.0 / 9007199254740992.0);
}

/* Uniform in [0, @bound) without modulo bias; @bound > 0. */
static inline guint64
gst_train_random_below (GstTrainRandom *rng, guint64 bound)
{
  guint64 threshold = (-bound) % bound;

  for (;;) {
    guint64 r = gst_train_random_next (rng);

    if (r >= threshold)
      return r % bound;
  }
}

/* Fisher-Yates shuffle of @n guint64 values. */
static inline void
gst_train_random_shuffle (GstTrainRandom *rng, guint64 *values, guint64 n)
{
  guint64 i;

  for (i = n; i > 1; i--) {
    guint64 j = gst_train_random_below (rng, i);
    guint64 tmp = values[i - 1];

    values[i - 1] = values[j];
    values[j] = tmp;
  }
}

#endif /* __GST_TRAIN_RANDOM_H__ */

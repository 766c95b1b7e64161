/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cpu-loss-test.c: the CPU backend's loss and its top-1/top-5 counts,
 * with enough classes that top-5 can miss: the label ranked 1st, 5th,
 * 6th and last, and ties (a label tied with a higher-ranked logit counts
 * as correct: its rank is one plus the logits strictly above it). */
#include "check.h"
#include "cpu-layers.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define CLASSES 10

int
main (void)
{
  /* row i: logits 0..9 with the label placed at rank ranks[i] (1 = top) */
  static const int ranks[] = { 1, 5, 6, 10 };
  float logits[6 * CLASSES];
  int32_t labels[6];
  int top1, top5, i, k;
  double loss, expected = 0;

  for (i = 0; i < 4; i++) {
    for (k = 0; k < CLASSES; k++)
      logits[i * CLASSES + k] = (float)(CLASSES - k); /* class k ranks k+1 */
    labels[i] = ranks[i] - 1;
  }
  /* row 4: the label ties the top logit; row 5: the label ties the 5th
   * and 6th, four logits strictly above it */
  for (k = 0; k < CLASSES; k++)
    logits[4 * CLASSES + k] = logits[5 * CLASSES + k] = (float)k;
  logits[4 * CLASSES + 3] = 9.f;
  labels[4] = 3;
  logits[5 * CLASSES + 0] = 5.f;
  labels[5] = 0;

  loss = gt_cpu_cross_entropy (
      logits, labels, 6, CLASSES, 0.f, NULL, &top1, &top5);
  CHECK (
      top1 == 2, "top-1 %d, expected 2 (rank 1 and the tie at the top)", top1);
  CHECK (top5 == 4,
      "top-5 %d, expected 4 (ranks 1 and 5, the two ties), not ranks 6 and "
      "10",
      top5);
  /* the mean of -log softmax[label] in double, without smoothing */
  for (i = 0; i < 6; i++) {
    double max = -INFINITY, sum = 0;

    for (k = 0; k < CLASSES; k++)
      max = fmax (max, logits[i * CLASSES + k]);
    for (k = 0; k < CLASSES; k++)
      sum += exp (logits[i * CLASSES + k] - max);
    expected += max + log (sum) - logits[i * CLASSES + labels[i]];
  }
  CHECK (fabs (loss - expected) <= 1e-9 * expected, "loss sum %.12g vs %.12g",
      loss, expected);
  printf ("top-1 %d, top-5 %d of 6; loss sum %.9g\n", top1, top5, loss);
  return failures ? 1 : 0;
}

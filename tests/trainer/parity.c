/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* parity.c: checks a backend against PyTorch on the tensors that
 * torch_reference.py wrote (same weights, same batch): logits, loss, every
 * gradient, the losses of the following steps, and the weights and running
 * statistics after them. Then it saves a checkpoint for torchvision to load
 * (check-checkpoint) and checks that save, load and continue matches an
 * uninterrupted run bit for bit.
 *
 *   parity [--backend cpu|cuda] [--precision fp32|bf16]
 *          [--cpu-kernels fast|reference] [--cpu-isa auto|avx512|avx2|sse]
 *          REFERENCE.safetensors OUT_DIR
 *   parity [OPTIONS] --can-run
 *
 * --cpu-kernels and --cpu-isa pick the CPU backend's convolution path (the
 * trainer's cpu_kernels and cpu_isa), so that every path meets PyTorch.
 * --backend cuda trains on the GPU from the same torchvision weights, in
 * --precision (the reference should then be PyTorch on the GPU in the same
 * precision: torch_reference.py --device cuda --precision); the CPU backend
 * trains in fp32 whatever --precision says, so --backend cpu --precision
 * bf16 checks the bf16 harness, not a bf16 trainer. --can-run exits 0 when
 * the options' backend is usable here, else 77 (skipped) with the reason,
 * so that parity.sh asks before it runs PyTorch; the comparison itself
 * exits 77 the same way.
 *
 * Errors are measured per tensor as max|ours - torch| / max|torch|, the
 * relative error of the tensor as a whole (a per-element ratio is
 * meaningless for values near zero); in bf16 as relative L2 norms,
 * |ours - torch| / |torch| (see BF16_FORWARD for why). */
#define _GNU_SOURCE /* dl_iterate_phdr, in cuda-module-report.h */
#include "cuda-module-report.h"
#include "gpu-skip.h"
#include "parity-rule.h"
#include "reference.h"
#include "safetensors.h"
#include "trainer-tensors.h"
#include "trainer.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* TOLERANCE_*, YARDSTICK and CEILING: parity-rule.h. bf16 has no ceiling:
 * its own rounding makes PyTorch's bf16 gradients 0.2-0.6 off on some
 * tensors, which no data choice removes. */
/* bf16 floors, in the relative L2 sense. bf16 keeps 8 significant bits: a
 * rounding moves a value by up to 2^-9 (2e-3) of itself, 2^-9 / sqrt(3)
 * (1.1e-3) in the RMS sense, and every layer rounds its output and its
 * weights. Batch-norm renormalises after each convolution, so the errors
 * of ResNet-50's ~50 layers add up like independent ones rather than
 * compound: sqrt(2 * 50) * 1.1e-3 = 1.1e-2 in the logits, 2e-2 with room
 * (PyTorch's own bf16 logits measure 1e-2 on resnet50 64x64, batch 4).
 * Gradients go back through the same layers, rounded again, and
 * batch-norm's backward subtracts nearly equal terms: 5e-2. After three
 * steps the running statistics are moments of bf16 convolution outputs,
 * off as much as the forward pass: 2e-2 for everything compared then (the
 * fp32 master weights move by lr times bf16 gradients and stay far
 * closer). These are floors only: where PyTorch's own bf16 is further
 * from float64 (its gradients reach 0.2-0.6 on some tensors), YARDSTICK
 * times its error rules, as in fp32.
 *
 * Why L2 and not the maximum: every bf16 value carries its own rounding,
 * so the worst element of a tensor is an extreme value over thousands of
 * roundings, and two implementations that round in different places (ours
 * keeps other intermediates in bf16 than autocast does) get maxima that
 * vary far more than their bulk errors do; "ours within YARDSTICK times
 * PyTorch's" then compares two noisy extremes. The L2 norm measures the
 * bulk, which is what bf16 rounding explains (PyTorch's own bf16 gradients
 * on resnet50: L2 0.24, maximum 0.61). */
#define BF16_FORWARD 2e-2
#define BF16_GRADIENT 5e-2
#define BF16_WEIGHTS 2e-2
/* two GPU trainers after save, load and one step each: bit-identical in
 * fp32 while cuDNN's algorithms are deterministic; in bf16 (algorithms
 * measured anew by the resumed trainer) within bf16 rounding */
#define BF16_RESUME 5e-2
/* the same in fp32 where cuDNN had to take a non-deterministic algorithm:
 * a different summation order, ~1e-6 */
#define FP32_RESUME 1e-4

/* bit-exact checks not made (a non-deterministic algorithm was chosen) */
static int bit_exact_skipped;
static double worst_forward, worst_gradient, worst_weights;
/* the largest tolerance applied to each kind, YARDSTICK included */
static double applied_forward, applied_gradient, applied_weights;
static double tolerance_forward = TOLERANCE_FORWARD;
static double tolerance_gradient = TOLERANCE_GRADIENT;
static double tolerance_weights = TOLERANCE_WEIGHTS;
static GtCpuKernels cpu_kernels = GT_CPU_KERNELS_FAST;
static GtCpuIsa cpu_isa = GT_CPU_ISA_AUTO;
static GtBackend backend = GT_BACKEND_CPU;
static GtPrecision precision = GT_PRECISION_FP32;
/* errors as relative L2 norms (bf16) rather than maxima */
static int use_l2;

/* |a - exact| / |exact| in the L2 sense */
static double
relative_l2_exact (const float *a, const double *exact, size_t count)
{
  double diff = 0, scale = 0;
  size_t i;

  for (i = 0; i < count; i++) {
    double d = (double)a[i] - exact[i];

    diff += d * d;
    scale += exact[i] * exact[i];
  }
  if (!(diff == diff))
    return INFINITY; /* NaN */
  return scale > 0 ? sqrt (diff / scale) : sqrt (diff);
}

/* max|a - exact| / max|exact|, or the relative L2 norm in bf16 */
static double
relative_error (const float *a, const double *exact, size_t count)
{
  return use_l2 ? relative_l2_exact (a, exact, count)
                : parity_max_error (a, exact, count);
}

/* Compares @ours with tensor @name of the reference. Where the reference
 * has the float64 result ("f64." + name), both fp32 results are measured
 * against it and ours may be at most YARDSTICK times further off than
 * PyTorch's own fp32 or bf16 (but never needs to be closer than @floor);
 * else ours is compared with PyTorch's result at @floor. */
static double
compare (GtStFile *file, const char *name, const float *ours, size_t count,
    double floor, double *worst)
{
  const GtStTensor *tensor = need (file, name);
  const float *torch_values = gt_st_data (file, tensor);
  const GtStTensor *exact_tensor;
  double *exact = malloc (count * sizeof (double));
  double error, torch_error = 0, tolerance = floor;
  char exact_name[200];
  size_t i;

  if (gt_st_numel (tensor) != count) {
    fail ("%s: %zu values, the reference has %llu", name, count,
        (unsigned long long)gt_st_numel (tensor));
    free (exact);
    return INFINITY;
  }
  snprintf (exact_name, sizeof (exact_name), "f64.%s", name);
  exact_tensor = gt_st_find (file, exact_name);
  if (exact_tensor && gt_st_numel (exact_tensor) == count) {
    memcpy (exact, gt_st_data (file, exact_tensor), count * sizeof (double));
    torch_error = relative_error (torch_values, exact, count);
    if (use_l2) {
      if (YARDSTICK * torch_error > tolerance)
        tolerance = YARDSTICK * torch_error;
    } else {
      int ill_conditioned;

      torch_error = parity_with_spread (file, name, torch_error);
      tolerance = parity_fp32_tolerance (floor, torch_error, &ill_conditioned);
      if (ill_conditioned)
        fail ("%s: the reference is ill-conditioned: PyTorch's own fp32 is "
              "%.3g from float64, %g times which passes the ceiling %.3g "
              "(%g times the floor): the data search (--min-relu-margin, "
              "--perturbations) should not have chosen this batch",
            name, torch_error, YARDSTICK, tolerance, CEILING);
    }
  } else {
    for (i = 0; i < count; i++)
      exact[i] = torch_values[i];
  }
  error = relative_error (ours, exact, count);
  if (getenv ("GT_PARITY_VERBOSE"))
    printf ("%-50s ours %.3g, PyTorch %.3g, tolerance %.3g\n", name, error,
        torch_error, tolerance);
  if (!(error <= tolerance))
    fail ("%s: relative error %.3g > %.3g (PyTorch's own: %.3g)", name, error,
        tolerance, torch_error);
  if (!(error <= *worst))
    *worst = error;
  if (worst == &worst_forward && tolerance > applied_forward)
    applied_forward = tolerance;
  else if (worst == &worst_gradient && tolerance > applied_gradient)
    applied_gradient = tolerance;
  else if (worst == &worst_weights && tolerance > applied_weights)
    applied_weights = tolerance;
  free (exact);
  return error;
}

static GtTrainer *
make_trainer (GtStFile *file, const char *init_path)
{
  GtTrainerConfig config;
  GtTrainer *trainer;
  char why[512];
  int resumed = -1;

  reference_config (file, &config);
  config.backend = backend;
  config.precision = precision;
  config.cpu_kernels = cpu_kernels;
  config.cpu_isa = cpu_isa;
  if (getenv ("GT_PARITY_THREADS"))
    config.num_threads = atoi (getenv ("GT_PARITY_THREADS"));
  trainer = gt_trainer_new (&config, why, sizeof (why));
  if (trainer == NULL) {
    fprintf (stderr, "FAIL: %s\n", why);
    exit (1);
  }
  if (gt_trainer_load (trainer, init_path, &resumed) != GT_OK || resumed != 0) {
    fprintf (stderr, "FAIL: loading the torchvision weights: %s\n",
        gt_trainer_error (trainer));
    exit (1);
  }
  return trainer;
}

/* Every value and momentum of @a and @b bit-identical, or (@tolerance
 * above 0) within that relative L2 distance. */
static void
resume_differs (const GtTensorInfo *info, GtTensorPart part, double tolerance,
    double distance)
{
  const char *which = part == GT_TENSOR_MOMENTUM ? " (momentum)" : "";

  if (tolerance <= 0)
    fail ("%s%s differs after save, load and continue", info->name, which);
  else
    fail ("%s%s: relative L2 distance %.3g > %.3g after save, load and "
          "continue",
        info->name, which, distance, tolerance);
}

static int
same_state (GtTrainer *a, GtTrainer *b, double tolerance)
{
  return same_tensors (a, b,
      PART_BIT (GT_TENSOR_VALUE) | PART_BIT (GT_TENSOR_MOMENTUM), 1, tolerance,
      0, resume_differs);
}

/* How close the trainer and the one resumed from its checkpoint must be
 * after a step each: bit-identical, but for bf16 on the GPU (the resumed
 * trainer measures its own algorithms) and for fp32 on a GPU where cuDNN
 * took a non-deterministic algorithm since @choices_before. */
static double
resume_tolerance (int choices_before)
{
  char last[256] = "";
  int now;

  if (backend != GT_BACKEND_CUDA)
    return 0;
  if (precision == GT_PRECISION_BF16)
    return BF16_RESUME;
  now = gt_test_nondeterministic_choices (last, sizeof (last));
  if (choices_before < 0 || now <= choices_before)
    return 0;
  printf ("SKIP: resume, bit-exact: a non-deterministic algorithm was chosen "
          "(%s); checked within %.0e instead\n",
      last, FP32_RESUME);
  bit_exact_skipped++;
  return FP32_RESUME;
}

/* The CPU path this case asked for is the one that runs: the direct
 * kernels for the ISA named (the widest the CPU has for auto), or none on
 * the reference path. 0; 77 when the CPU lacks the ISA named; 1 when
 * another path runs. */
static int
check_cpu_kernels (void)
{
  static const char *const names[] = { "auto", "avx512", "avx2", "sse" };
  const char *want;
  char kernels[512], expect[64];
  int avx512, avx2;

  __builtin_cpu_init ();
  avx512 = __builtin_cpu_supports ("avx512f");
  avx2 = __builtin_cpu_supports ("avx2") && __builtin_cpu_supports ("fma");
  if ((cpu_isa == GT_CPU_ISA_AVX512 && !avx512)
      || (cpu_isa == GT_CPU_ISA_AVX2 && !avx2)) {
    printf ("SKIP: this CPU has no %s\n", names[cpu_isa]);
    return 77;
  }
  want = cpu_isa != GT_CPU_ISA_AUTO ? names[cpu_isa]
      : avx512                      ? "avx512"
      : avx2                        ? "avx2"
                                    : "sse";
  if (cpu_kernels == GT_CPU_KERNELS_REFERENCE)
    snprintf (expect, sizeof (expect), "no direct 3x3 kernels");
  else
    snprintf (expect, sizeof (expect), "direct 3x3 convolutions: %s", want);
  if (gt_cpu_describe (cpu_kernels, cpu_isa, kernels, sizeof (kernels)) < 0
      || strstr (kernels, expect) == NULL) {
    fprintf (stderr, "FAIL: the CPU runs \"%s\", the case asked for \"%s\"\n",
        kernels, expect);
    return 1;
  }
  printf ("CPU kernels: %s\n", kernels);
  return 0;
}

/* Takes the options off the front of argv; 0, or -1 on a bad one. */
static int
parse_options (int *argc, char ***argv)
{
  static const char *const isa_names[] = { "auto", "avx512", "avx2", "sse" };

  while (*argc >= 3 && strncmp ((*argv)[1], "--", 2) == 0
      && strcmp ((*argv)[1], "--can-run") != 0) {
    const char *option = (*argv)[1], *value = (*argv)[2];
    unsigned i;

    if (strcmp (option, "--cpu-kernels") == 0 && strcmp (value, "fast") == 0)
      cpu_kernels = GT_CPU_KERNELS_FAST;
    else if (strcmp (option, "--cpu-kernels") == 0
        && strcmp (value, "reference") == 0)
      cpu_kernels = GT_CPU_KERNELS_REFERENCE;
    else if (strcmp (option, "--cpu-isa") == 0) {
      for (i = 0; i < sizeof (isa_names) / sizeof (isa_names[0]); i++)
        if (strcmp (value, isa_names[i]) == 0)
          break;
      if (i == sizeof (isa_names) / sizeof (isa_names[0]))
        return -1;
      cpu_isa = (GtCpuIsa)i;
    } else if (strcmp (option, "--backend") == 0 && strcmp (value, "cpu") == 0)
      backend = GT_BACKEND_CPU;
    else if (strcmp (option, "--backend") == 0 && strcmp (value, "cuda") == 0)
      backend = GT_BACKEND_CUDA;
    else if (strcmp (option, "--precision") == 0 && strcmp (value, "fp32") == 0)
      precision = GT_PRECISION_FP32;
    else if (strcmp (option, "--precision") == 0 && strcmp (value, "bf16") == 0)
      precision = GT_PRECISION_BF16;
    else
      return -1;
    (*argv)[2] = (*argv)[0];
    *argv += 2;
    *argc -= 2;
  }
  return 0;
}

/* 0 when the chosen backend can train here, else 77 with the reason. */
static int
backend_usable (void)
{
  return backend == GT_BACKEND_CUDA ? gpu_skip () : 0;
}

int
main (int argc, char **argv)
{
  GtStFile *file;
  GtTrainer *trainer, *resumed_trainer;
  const GtStTensor *images, *labels;
  GtBatch batch = { 0 };
  GtStepResult result;
  GtEvalTotals totals = { 0 };
  char why[512], path[1024], init_path[1024], checkpoint_path[1024];
  int forward_only, steps, step, classes, n, resumed = -1, usable;
  int choices_before;
  float *logits, *losses;

  if (parse_options (&argc, &argv) < 0
      || !(argc == 3 || (argc == 2 && strcmp (argv[1], "--can-run") == 0))) {
    fprintf (stderr,
        "usage: %s [--backend cpu|cuda] [--precision fp32|bf16] "
        "[--cpu-kernels fast|reference] [--cpu-isa auto|avx512|avx2|sse] "
        "REFERENCE.safetensors OUT_DIR | --can-run\n",
        argv[0]);
    return 2;
  }
  usable = backend_usable ();
  if (argc == 2 || usable != 0)
    return usable;
  if (backend == GT_BACKEND_CUDA && precision == GT_PRECISION_FP32)
    setenv ("NVIDIA_TF32_OVERRIDE", "0", 1); /* fp32 stays fp32 */
  choices_before = gt_test_nondeterministic_choices (NULL, 0);
  if (precision == GT_PRECISION_BF16) {
    use_l2 = 1;
    tolerance_forward = BF16_FORWARD;
    tolerance_gradient = BF16_GRADIENT;
    tolerance_weights = BF16_WEIGHTS;
  }
  file = gt_st_open (argv[1], why, sizeof (why));
  if (file == NULL) {
    fprintf (stderr, "FAIL: %s\n", why);
    return 1;
  }
  forward_only = gt_st_metadata (file, "forward_only")
      && strcmp (gt_st_metadata (file, "forward_only"), "1") == 0;
  steps = forward_only ? 1 : (int)metadata_number (file, "steps");
  classes = (int)metadata_number (file, "classes");

  snprintf (init_path, sizeof (init_path), "%s/init.safetensors", argv[2]);
  write_initial_weights (file, init_path);
  if (backend == GT_BACKEND_CPU) {
    int status = check_cpu_kernels ();

    if (status != 0)
      return status;
  }
  trainer = make_trainer (file, init_path);
  printf ("%s, %d classes: %zu parameters\n", gt_st_metadata (file, "model"),
      classes, gt_trainer_num_parameters (trainer));

  images = need (file, "images");
  labels = need (file, "labels");
  batch.images = gt_st_data (file, images);
  batch.labels = gt_st_data (file, labels);
  batch.num_samples = n = (int)images->shape[0];
  batch.height = (int)images->shape[1];
  batch.width = (int)images->shape[2];
  batch.channels = (int)images->shape[3];

  /* Step 1: the forward pass and every gradient. */
  if (gt_trainer_step (trainer, &batch, &result) != GT_OK) {
    fprintf (stderr, "FAIL: step 1: %s\n", gt_trainer_error (trainer));
    return 1;
  }
  logits = malloc ((size_t)n * classes * sizeof (float));
  gt_trainer_read_logits (trainer, logits, (size_t)n * classes);
  compare (file, "step0.logits", logits, (size_t)n * classes, tolerance_forward,
      &worst_forward);
  compare (
      file, "step0.loss", &result.loss, 1, tolerance_forward, &worst_forward);
  if (forward_only)
    goto report;
  compare_state (trainer, file, "step0.grad.", GT_TENSOR_GRAD,
      REFERENCE_PARAMETERS, tolerance_gradient, &worst_gradient, compare);

  /* Steps 2..K on the same batch, then the weights and statistics. */
  losses = malloc (steps * sizeof (float));
  losses[0] = result.loss;
  for (step = 1; step < steps; step++) {
    if (gt_trainer_step (trainer, &batch, &result) != GT_OK) {
      fprintf (
          stderr, "FAIL: step %d: %s\n", step + 1, gt_trainer_error (trainer));
      return 1;
    }
    losses[step] = result.loss;
    printf ("step %d: loss %.6f\n", step + 1, result.loss);
  }
  compare (file, "losses", losses, steps, tolerance_weights, &worst_weights);
  free (losses);
  compare_state (trainer, file, "final.", GT_TENSOR_VALUE,
      REFERENCE_PARAMETERS | REFERENCE_STATISTICS, tolerance_weights,
      &worst_weights, compare);
  if (gt_trainer_eval (trainer, &batch, &totals) != GT_OK) {
    fprintf (stderr, "FAIL: eval: %s\n", gt_trainer_error (trainer));
    return 1;
  }
  gt_trainer_read_logits (trainer, logits, (size_t)n * classes);
  compare (file, "final.eval_logits", logits, (size_t)n * classes,
      tolerance_weights, &worst_weights);

  /* A checkpoint for torchvision (check-checkpoint loads it with
   * strict=True and compares its eval logits with ours). */
  snprintf (checkpoint_path, sizeof (checkpoint_path),
      "%s/checkpoint.safetensors", argv[2]);
  if (gt_trainer_set_metadata (trainer, "epoch", "7") != GT_OK
      || gt_trainer_save (trainer, checkpoint_path, 0) != GT_OK) {
    fprintf (stderr, "FAIL: saving: %s\n", gt_trainer_error (trainer));
    return 1;
  }
  {
    GtStWriter *writer = gt_st_writer_new ();
    int64_t shape[2] = { n, classes };

    snprintf (path, sizeof (path), "%s/expect.safetensors", argv[2]);
    gt_st_writer_add (
        writer, "images", GT_ST_U8, 4, images->shape, batch.images);
    gt_st_writer_add (writer, "eval_logits", GT_ST_F32, 2, shape, logits);
    if (gt_st_writer_write (writer, path, why, sizeof (why)) < 0)
      fail ("%s", why);
    gt_st_writer_free (writer);
  }

  /* Save, load and continue == uninterrupted. */
  resumed_trainer = make_trainer (file, init_path);
  if (gt_trainer_load (resumed_trainer, checkpoint_path, &resumed) != GT_OK
      || resumed != 1)
    fail ("resuming: %s", gt_trainer_error (resumed_trainer));
  if (gt_trainer_global_step (resumed_trainer) != steps)
    fail ("resumed at step %lld, expected %d",
        (long long)gt_trainer_global_step (resumed_trainer), steps);
  if (!gt_trainer_get_metadata (resumed_trainer, "epoch")
      || strcmp (gt_trainer_get_metadata (resumed_trainer, "epoch"), "7"))
    fail ("the metadata did not come back");
  same_state (trainer, resumed_trainer, 0);
  if (gt_trainer_step (trainer, &batch, &result) != GT_OK
      || gt_trainer_step (resumed_trainer, &batch, &result) != GT_OK)
    fail ("the step after resuming failed");
  same_state (trainer, resumed_trainer, resume_tolerance (choices_before));
  gt_trainer_free (resumed_trainer);

report:
  printf ("worst relative error: forward %.3g (floor %.0e, tolerance "
          "applied up to %.3g), gradients %.3g (floor %.0e, up to %.3g), "
          "after %d steps %.3g (floor %.0e, up to %.3g)\n",
      worst_forward, tolerance_forward, applied_forward, worst_gradient,
      tolerance_gradient, applied_gradient, steps, worst_weights,
      tolerance_weights, applied_weights);
  free (logits);
  gt_trainer_free (trainer);
  gt_st_close (file);
  /* a check not made is not a check passed: said at the end too */
  if (bit_exact_skipped)
    printf ("bit-exact checks skipped: %d\n", bit_exact_skipped);
  if (failures)
    printf ("%d failures\n", failures);
  return failures ? 1 : 0;
}

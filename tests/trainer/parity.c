/* parity.c: checks the CPU backend against PyTorch on the tensors that
 * torch_reference.py wrote (same weights, same batch): logits, loss, every
 * gradient, the losses of the following steps, and the weights and running
 * statistics after them. Then it saves a checkpoint for torchvision to load
 * (check-checkpoint) and checks that save, load and continue matches an
 * uninterrupted run bit for bit.
 *
 *   parity [--cpu-kernels fast|reference] [--cpu-isa auto|avx512|avx2|sse]
 *          REFERENCE.safetensors OUT_DIR
 *
 * The options pick the CPU backend's convolution path (the trainer's
 * cpu_kernels and cpu_isa), so that every path meets PyTorch.
 *
 * Errors are measured per tensor as max|ours - torch| / max|torch|, the
 * relative error of the tensor as a whole (a per-element ratio is
 * meaningless for values near zero). */
#include "safetensors.h"
#include "trainer.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Errors below these always pass: fp32 with different summation orders
 * (oneDNN against im2col + OpenBLAS) differs by about 1e-6 relative in the
 * outputs; gradients go through every layer backwards, the weights after
 * three steps through three of those. */
#define TOLERANCE_FORWARD 1e-5
#define TOLERANCE_GRADIENT 5e-5
#define TOLERANCE_WEIGHTS 5e-5
/* Deep nets without zero-init are badly conditioned (resnet50's logits
 * carry ~5e-5 relative error in PyTorch's own fp32): there, we must be no
 * further from the float64 result than this many times PyTorch's fp32. */
#define YARDSTICK 4.0

static int failures;
static double worst_forward, worst_gradient, worst_weights;
static GtCpuKernels cpu_kernels = GT_CPU_KERNELS_FAST;
static GtCpuIsa cpu_isa = GT_CPU_ISA_AUTO;

static void
fail (const char *format, ...)
{
  va_list args;

  va_start (args, format);
  fprintf (stderr, "FAIL: ");
  vfprintf (stderr, format, args);
  fprintf (stderr, "\n");
  va_end (args);
  failures++;
}

static const GtStTensor *
need (GtStFile *file, const char *name)
{
  const GtStTensor *tensor = gt_st_find (file, name);

  if (tensor == NULL) {
    fprintf (stderr, "FAIL: the reference has no tensor %s\n", name);
    exit (1);
  }
  return tensor;
}

static double
metadata_number (GtStFile *file, const char *key)
{
  const char *text = gt_st_metadata (file, key);

  if (text == NULL) {
    fprintf (stderr, "FAIL: the reference has no metadata %s\n", key);
    exit (1);
  }
  return atof (text);
}

/* max|a - exact| / max|exact| */
static double
relative_error (const float *a, const double *exact, size_t count)
{
  double max_diff = 0, max_exact = 0;
  size_t i;

  for (i = 0; i < count; i++) {
    double diff = fabs ((double)a[i] - exact[i]);

    if (!(diff <= max_diff))
      max_diff = diff; /* NaN too */
    if (fabs (exact[i]) > max_exact)
      max_exact = fabs (exact[i]);
  }
  return max_exact > 0 ? max_diff / max_exact : max_diff;
}

/* Compares @ours with tensor @name of the reference. Where the reference
 * has the float64 result ("f64." + name), both fp32 results are measured
 * against it and ours may be at most YARDSTICK times further off than
 * PyTorch's own fp32 (but never needs to be closer than @floor); else ours
 * is compared with PyTorch's fp32 result at @floor. */
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
    if (YARDSTICK * torch_error > tolerance)
      tolerance = YARDSTICK * torch_error;
  } else {
    for (i = 0; i < count; i++)
      exact[i] = torch_values[i];
  }
  error = relative_error (ours, exact, count);
  if (getenv ("GT_PARITY_VERBOSE"))
    printf ("%-50s ours %.3g, PyTorch fp32 %.3g, tolerance %.3g\n", name, error,
        torch_error, tolerance);
  if (!(error <= tolerance))
    fail ("%s: relative error %.3g > %.3g (PyTorch's fp32: %.3g)", name, error,
        tolerance, torch_error);
  if (!(error <= *worst))
    *worst = error;
  free (exact);
  return error;
}

static void
compare_tensors (GtTrainer *trainer, GtStFile *file, const char *prefix,
    GtTensorPart part, int parameters_only, double tolerance, double *worst)
{
  int i;

  for (i = 0; i < gt_trainer_num_tensors (trainer); i++) {
    GtTensorInfo info;
    char name[160];
    float *ours;

    gt_trainer_tensor_info (trainer, i, &info);
    if (parameters_only && !info.is_parameter)
      continue;
    snprintf (name, sizeof (name), "%s%s", prefix, info.name);
    ours = malloc (info.numel * sizeof (float));
    if (gt_trainer_read_tensor (trainer, info.name, part, ours, info.numel)) {
      fail ("reading %s: %s", info.name, gt_trainer_error (trainer));
    } else if (strstr (info.name, "num_batches_tracked")) {
      const int64_t *count = gt_st_data (file, need (file, name));

      if ((int64_t)ours[0] != *count)
        fail ("%s: %g, PyTorch %lld", name, ours[0], (long long)*count);
    } else {
      compare (file, name, ours, info.numel, tolerance, worst);
    }
    free (ours);
  }
}

/* The init.* tensors as a state_dict file, the way torchvision saves one. */
static void
write_initial_weights (GtStFile *file, const char *path)
{
  GtStWriter *writer = gt_st_writer_new ();
  char why[512];
  int i;

  for (i = 0; i < gt_st_num_tensors (file); i++) {
    const GtStTensor *tensor = gt_st_tensor (file, i);

    if (strncmp (tensor->name, "init.", 5) == 0)
      gt_st_writer_add (writer, tensor->name + 5, tensor->dtype, tensor->ndim,
          tensor->shape, gt_st_data (file, tensor));
  }
  if (gt_st_writer_write (writer, path, why, sizeof (why)) < 0) {
    fprintf (stderr, "FAIL: %s\n", why);
    exit (1);
  }
  gt_st_writer_free (writer);
}

static GtTrainer *
make_trainer (GtStFile *file, const char *init_path)
{
  GtTrainerConfig config;
  GtTrainer *trainer;
  char why[512];
  int resumed = -1, size;

  gt_trainer_config_init (&config);
  if (gt_model_from_name (gt_st_metadata (file, "model"), &config.model)) {
    fprintf (
        stderr, "FAIL: unknown model %s\n", gt_st_metadata (file, "model"));
    exit (1);
  }
  config.num_classes = (int)metadata_number (file, "classes");
  size = (int)metadata_number (file, "size");
  config.height = config.width = size;
  config.batch_size = (int)metadata_number (file, "batch");
  config.lr_schedule = GT_LR_CONSTANT;
  config.cpu_kernels = cpu_kernels;
  config.cpu_isa = cpu_isa;
  if (getenv ("GT_PARITY_THREADS"))
    config.num_threads = atoi (getenv ("GT_PARITY_THREADS"));
  if (gt_st_metadata (file, "lr")) {
    config.lr = (float)metadata_number (file, "lr");
    config.momentum = (float)metadata_number (file, "momentum");
    config.weight_decay = (float)metadata_number (file, "weight_decay");
    config.label_smoothing = (float)metadata_number (file, "label_smoothing");
    config.nesterov = (int)metadata_number (file, "nesterov");
  }
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

static int
same_state (GtTrainer *a, GtTrainer *b)
{
  int i, same = 1;

  for (i = 0; i < gt_trainer_num_tensors (a) && same; i++) {
    GtTensorInfo info;
    float *x, *y;
    int part;

    gt_trainer_tensor_info (a, i, &info);
    x = malloc (info.numel * sizeof (float));
    y = malloc (info.numel * sizeof (float));
    for (part = 0; part < (info.is_parameter ? 2 : 1) && same; part++) {
      GtTensorPart which = part ? GT_TENSOR_MOMENTUM : GT_TENSOR_VALUE;

      gt_trainer_read_tensor (a, info.name, which, x, info.numel);
      gt_trainer_read_tensor (b, info.name, which, y, info.numel);
      if (memcmp (x, y, info.numel * sizeof (float)) != 0) {
        fail ("%s%s differs after save, load and continue", info.name,
            part ? " (momentum)" : "");
        same = 0;
      }
    }
    free (x);
    free (y);
  }
  return same;
}

/* Takes the options off the front of argv; 0, or -1 on a bad one. */
static int
parse_options (int *argc, char ***argv)
{
  static const char *const isa_names[] = { "auto", "avx512", "avx2", "sse" };

  while (*argc >= 3 && strncmp ((*argv)[1], "--", 2) == 0) {
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
    } else
      return -1;
    (*argv)[2] = (*argv)[0];
    *argv += 2;
    *argc -= 2;
  }
  return 0;
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
  int forward_only, steps, step, classes, n, resumed = -1;
  float *logits, *losses;

  if (parse_options (&argc, &argv) < 0 || argc != 3) {
    fprintf (stderr,
        "usage: %s [--cpu-kernels fast|reference] "
        "[--cpu-isa auto|avx512|avx2|sse] REFERENCE.safetensors OUT_DIR\n",
        argv[0]);
    return 2;
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
  compare (file, "step0.logits", logits, (size_t)n * classes, TOLERANCE_FORWARD,
      &worst_forward);
  compare (
      file, "step0.loss", &result.loss, 1, TOLERANCE_FORWARD, &worst_forward);
  if (forward_only)
    goto report;
  compare_tensors (trainer, file, "step0.grad.", GT_TENSOR_GRAD, 1,
      TOLERANCE_GRADIENT, &worst_gradient);

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
  compare (file, "losses", losses, steps, TOLERANCE_WEIGHTS, &worst_weights);
  free (losses);
  compare_tensors (trainer, file, "final.", GT_TENSOR_VALUE, 0,
      TOLERANCE_WEIGHTS, &worst_weights);
  if (gt_trainer_eval (trainer, &batch, &totals) != GT_OK) {
    fprintf (stderr, "FAIL: eval: %s\n", gt_trainer_error (trainer));
    return 1;
  }
  gt_trainer_read_logits (trainer, logits, (size_t)n * classes);
  compare (file, "final.eval_logits", logits, (size_t)n * classes,
      TOLERANCE_WEIGHTS, &worst_weights);

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
  same_state (trainer, resumed_trainer);
  if (gt_trainer_step (trainer, &batch, &result) != GT_OK
      || gt_trainer_step (resumed_trainer, &batch, &result) != GT_OK)
    fail ("the step after resuming failed");
  same_state (trainer, resumed_trainer);
  gt_trainer_free (resumed_trainer);

report:
  printf ("worst relative error: forward %.3g (tolerance %.0e), gradients "
          "%.3g (%.0e), after %d steps %.3g (%.0e)\n",
      worst_forward, TOLERANCE_FORWARD, worst_gradient, TOLERANCE_GRADIENT,
      steps, worst_weights, TOLERANCE_WEIGHTS);
  free (logits);
  gt_trainer_free (trainer);
  gt_st_close (file);
  if (failures)
    printf ("%d failures\n", failures);
  return failures ? 1 : 0;
}

/* trainer-bench.c: training images per second of the trainer library on
 * random data, one JSON line, in the shape bench/torch-train-cpu.py and
 * bench/torch-gpu-step.py print for PyTorch so that bench/trainer-cpu.sh
 * and bench/gpu-check.sh can set them side by side.
 *
 *   trainer-bench --model resnet50 --size 224 --batch 16 --classes 1000
 *                 --threads 2 --warmup 2 --steps 5
 *                 [--device cuda --precision bf16 --gpu-id 0 --windows 5]
 *
 * Each step is timed on its own (the clock read after its loss came back),
 * and, with --windows W, W windows of --steps steps each are timed whole,
 * ending with a barrier (reading the logits waits for the device): that is
 * the steady-state throughput, in which the CUDA backend overlaps a step's
 * backward pass with the next batch's copy. The batch lives in
 * gt_trainer_host_alloc memory (pinned on the GPU). The line also says how
 * the backend ran (gt_trainer_backend_report): CUDA graphs on or off and
 * why, the seconds cuDNN's algorithm choice took and how many directions
 * took a non-deterministic algorithm, and the warm-up's seconds, which hold
 * that planning. */
#include "gt-random.h"
#include "trainer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double
now (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* @text as a JSON string's contents: quotes and backslashes become
 * apostrophes and slashes, control characters spaces (a reason, not
 * data). */
static void
print_json_text (const char *text)
{
  for (; *text; text++)
    putchar (*text == '"'                 ? '\''
            : *text == '\\'               ? '/'
            : (unsigned char)*text < 0x20 ? ' '
                                          : *text);
}

static int
compare_doubles (const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;

  return x < y ? -1 : x > y;
}

int
main (int argc, char **argv)
{
  GtTrainerConfig config;
  GtTrainer *trainer;
  GtBatch batch = { 0 };
  GtStepResult result;
  GtBackendReport report;
  GtRandom rng;
  const char *model = "resnet50";
  int size = 224, batch_size = 16, classes = 1000, threads = 0;
  int warmup = 2, steps = 5, windows = 0, gpu_id = 0, i;
  const char *device = "cpu", *precision = "fp32";
  double *window_rates = NULL, window_median = 0;
  float barrier;
  double *seconds, median, warmup_start, warmup_seconds = 0;
  uint8_t *images;
  int32_t *labels;
  char why[512];
  size_t bytes;

  for (i = 1; i + 1 < argc; i += 2) {
    const char *value = argv[i + 1];

    if (!strcmp (argv[i], "--model"))
      model = value;
    else if (!strcmp (argv[i], "--size"))
      size = atoi (value);
    else if (!strcmp (argv[i], "--batch"))
      batch_size = atoi (value);
    else if (!strcmp (argv[i], "--classes"))
      classes = atoi (value);
    else if (!strcmp (argv[i], "--threads"))
      threads = atoi (value);
    else if (!strcmp (argv[i], "--warmup"))
      warmup = atoi (value);
    else if (!strcmp (argv[i], "--steps"))
      steps = atoi (value);
    else if (!strcmp (argv[i], "--windows"))
      windows = atoi (value);
    else if (!strcmp (argv[i], "--device"))
      device = value;
    else if (!strcmp (argv[i], "--precision"))
      precision = value;
    else if (!strcmp (argv[i], "--gpu-id"))
      gpu_id = atoi (value);
    else {
      fprintf (stderr, "unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (i != argc || steps < 1) {
    fprintf (stderr,
        "usage: %s [--model M] [--size S] [--batch N] "
        "[--classes C] [--threads T] [--warmup W] [--steps K] "
        "[--device cpu|cuda] [--precision fp32|bf16] [--gpu-id G] "
        "[--windows N]\n",
        argv[0]);
    return 2;
  }

  gt_trainer_config_init (&config);
  if (gt_model_from_name (model, &config.model) < 0) {
    fprintf (stderr, "unknown model %s\n", model);
    return 2;
  }
  config.num_classes = classes;
  config.height = config.width = size;
  config.batch_size = batch_size;
  config.num_threads = threads;
  config.lr = 0.01f;
  config.lr_schedule = GT_LR_CONSTANT;
  config.backend =
      strcmp (device, "cuda") == 0 ? GT_BACKEND_CUDA : GT_BACKEND_CPU;
  config.precision = strcmp (precision, "bf16") == 0 ? GT_PRECISION_BF16
      : strcmp (precision, "fp16") == 0              ? GT_PRECISION_FP16
                                                     : GT_PRECISION_FP32;
  config.gpu_id = gpu_id;
  trainer = gt_trainer_new (&config, why, sizeof (why));
  if (trainer == NULL) {
    fprintf (stderr, "%s\n", why);
    return 1;
  }

  bytes = (size_t)batch_size * size * size * 3;
  images = gt_trainer_host_alloc (trainer, bytes);
  labels = malloc (batch_size * sizeof (int32_t));
  gt_random_init (&rng, 1, 0);
  for (i = 0; i < (int)bytes; i++)
    images[i] = (uint8_t)gt_random_below (&rng, 256);
  for (i = 0; i < batch_size; i++)
    labels[i] = (int32_t)gt_random_below (&rng, classes);
  batch.images = images;
  batch.labels = labels;
  batch.num_samples = batch_size;
  batch.height = batch.width = size;
  batch.channels = 3;

  seconds = calloc (steps, sizeof (double));
  warmup_start = now ();
  for (i = 0; i < warmup + steps; i++) {
    double start = now ();

    if (i == warmup)
      warmup_seconds = start - warmup_start;
    if (gt_trainer_step (trainer, &batch, &result) != GT_OK) {
      fprintf (stderr, "step %d: %s\n", i, gt_trainer_error (trainer));
      return 1;
    }
    if (i >= warmup)
      seconds[i - warmup] = now () - start;
  }

  window_rates = calloc (windows > 0 ? windows : 1, sizeof (double));
  for (i = 0; i < windows; i++) {
    double start = now ();
    int k;

    for (k = 0; k < steps; k++)
      if (gt_trainer_step (trainer, &batch, &result) != GT_OK) {
        fprintf (stderr, "window %d: %s\n", i, gt_trainer_error (trainer));
        return 1;
      }
    gt_trainer_read_logits (trainer, &barrier, 1);
    window_rates[i] = (double)batch_size * steps / (now () - start);
  }
  if (windows > 0) {
    qsort (window_rates, windows, sizeof (double), compare_doubles);
    window_median = windows % 2
        ? window_rates[windows / 2]
        : 0.5 * (window_rates[windows / 2 - 1] + window_rates[windows / 2]);
  }

  printf ("{\"impl\": \"gst-train\", \"model\": \"%s\", \"size\": %d, "
          "\"batch\": %d, \"threads\": %d, \"device\": \"%s\", "
          "\"precision\": \"%s\", \"step_seconds\": [",
      model, size, batch_size, threads, device, precision);
  for (i = 0; i < steps; i++)
    printf ("%s%.4f", i ? ", " : "", seconds[i]);
  qsort (seconds, steps, sizeof (double), compare_doubles);
  median = steps % 2 ? seconds[steps / 2]
                     : 0.5 * (seconds[steps / 2 - 1] + seconds[steps / 2]);
  printf ("], \"images_per_second_median\": %.2f", batch_size / median);
  if (strcmp (device, "cpu") == 0) {
    char kernels[512];

    gt_cpu_describe (
        GT_CPU_KERNELS_FAST, GT_CPU_ISA_AUTO, kernels, sizeof (kernels));
    printf (", \"cpu_kernels\": \"%s\"", kernels);
  }
  if (windows > 0)
    printf (", \"windows\": %d, \"images_per_second_windows_median\": %.2f",
        windows, window_median);
  gt_trainer_backend_report (trainer, &report);
  printf (", \"warmup_seconds\": %.2f, \"graphs\": %s, \"graphs_off\": \"",
      warmup_seconds, report.graphs ? "true" : "false");
  print_json_text (report.graphs_off);
  printf ("\", \"conv_shapes\": %d, \"cudnn_planning_seconds\": %.3f, "
          "\"nondeterministic\": %d, \"accumulate_fallbacks\": %d}\n",
      report.conv_shapes, report.planning_seconds, report.nondeterministic,
      report.accumulate_fallbacks);

  free (seconds);
  free (window_rates);
  gt_trainer_host_free (trainer, images);
  free (labels);
  gt_trainer_free (trainer);
  return 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
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
#include "bench-common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int
main (int argc, char **argv)
{
  BenchOptions options;
  GtTrainerConfig config;
  GtTrainer *trainer;
  GtBatch batch;
  GtStepResult result;
  GtBackendReport report;
  int windows = 0, gpu_id = 0, steps, batch_size, failed, i;
  const char *device = "cpu", *precision = "fp32";
  double *window_rates = NULL, window_median = 0;
  float barrier;
  double *seconds, median, warmup_seconds = 0;
  char why[512];

  bench_options_init (&options, "resnet50", 224, 16, 1000, 5);
  for (i = 1; i + 1 < argc; i += 2) {
    const char *value = argv[i + 1];

    if (bench_option (&options, argv[i], value))
      continue;
    if (!strcmp (argv[i], "--windows"))
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
  steps = options.steps;
  batch_size = options.batch_size;
  if (i != argc || steps < 1) {
    fprintf (stderr,
        "usage: %s [--model M] [--size S] [--batch N] "
        "[--classes C] [--threads T] [--warmup W] [--steps K] "
        "[--device cpu|cuda] [--precision fp32|bf16] [--gpu-id G] "
        "[--windows N]\n",
        argv[0]);
    return 2;
  }

  if (bench_config (&config, &options) < 0)
    return 2;
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

  bench_batch_new (trainer, &options, 0, &batch);

  seconds = calloc (steps, sizeof (double));
  failed =
      bench_steps (trainer, &batch, &options, seconds, NULL, &warmup_seconds);
  if (failed >= 0) {
    fprintf (stderr, "step %d: %s\n", failed, gt_trainer_error (trainer));
    return 1;
  }

  window_rates = calloc (windows > 0 ? windows : 1, sizeof (double));
  for (i = 0; i < windows; i++) {
    double start = bench_now ();
    int k;

    for (k = 0; k < steps; k++)
      if (gt_trainer_step (trainer, &batch, &result) != GT_OK) {
        fprintf (stderr, "window %d: %s\n", i, gt_trainer_error (trainer));
        return 1;
      }
    gt_trainer_read_logits (trainer, &barrier, 1);
    window_rates[i] = (double)batch_size * steps / (bench_now () - start);
  }
  if (windows > 0)
    window_median = bench_median (window_rates, windows);

  printf ("{\"impl\": \"gst-train\", \"model\": \"%s\", \"size\": %d, "
          "\"batch\": %d, \"threads\": %d, \"device\": \"%s\", "
          "\"precision\": \"%s\", \"step_seconds\": [",
      options.model, options.size, batch_size, options.threads, device,
      precision);
  median = bench_print_seconds (seconds, steps);
  printf ("], \"images_per_second_median\": %.2f", batch_size / median);
  if (strcmp (device, "cpu") == 0) {
    char kernels[512];

    gt_cpu_describe (
        config.cpu_kernels, config.cpu_isa, kernels, sizeof (kernels));
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
  bench_batch_free (trainer, &batch);
  gt_trainer_free (trainer);
  return 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* decode-loop.c: the floor under any JPEG input stage: libjpeg-turbo
 * decoding the benchmark corpus to RGB in stream order, files already in
 * memory, one reused output buffer, no framework. Where tjbench repeats one
 * file, this loop visits every file in turn, as a pipeline does.
 *
 * With -r REPEAT each file is decoded REPEAT times in a row before the next,
 * the order tjbench times (one file over and over): the difference between
 * the two orders is what repeating one bitstream is worth, nothing a
 * pipeline that visits every file once per epoch can have.
 *
 * With -c each decode is of a RandomResizedCrop box alone (torchvision's
 * defaults: area 0.08-1, ratio 3/4-4/3, drawn by augment's own code from
 * one seeded stream), through imagedec's own region decoder
 * (elements/data/jpeg-decode.c): what imagedec decodes for augment in a training
 * pipeline once it knows the file decodes (from its second epoch on: it
 * stops after the box's last row). With -a as well, each decode reads the
 * rest of the file, as imagedec does the first time it sees a file.
 *
 * Usage: decode-loop [-r REPEAT] [-c [-a]] PASSES FILE...   prints "IMAGES SECONDS CPU-SECONDS"
 * (wall time, then the process's CPU time: the second is less sensitive to
 * other load on the machine). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <turbojpeg.h>

#include "augment-ops.h"
#include "jpeg-decode.h"

int
main (int argc, char **argv)
{
  int repeat = 1, crop = 0, read_all = 0, passes, n_files, i, p, r;
  const GstTrainCropRange range = { 0.08, 1.0, 3.0 / 4.0, 4.0 / 3.0 };
  GtRandom rng;
  unsigned char **data;
  unsigned long *sizes;
  unsigned char *out = NULL;
  size_t out_size = 0;
  struct timespec start, end, cpu_start, cpu_end;
  tjhandle handle = tjInitDecompress ();

  if (argc > 2 && strcmp (argv[1], "-r") == 0) {
    repeat = atoi (argv[2]);
    argc -= 2;
    argv += 2;
  }
  if (argc > 1 && strcmp (argv[1], "-c") == 0) {
    crop = 1;
    argc -= 1;
    argv += 1;
  }
  if (crop && argc > 1 && strcmp (argv[1], "-a") == 0) {
    read_all = 1;
    argc -= 1;
    argv += 1;
  }
  passes = argc > 2 ? atoi (argv[1]) : 0;
  n_files = argc - 2;
  if (repeat <= 0 || passes <= 0 || n_files <= 0 || handle == NULL) {
    fprintf (
        stderr, "usage: decode-loop [-r REPEAT] [-c [-a]] PASSES FILE...\n");
    return 2;
  }
  data = calloc (n_files, sizeof (*data));
  sizes = calloc (n_files, sizeof (*sizes));
  for (i = 0; i < n_files; i++) {
    FILE *f = fopen (argv[i + 2], "rb");
    long size;

    if (f == NULL || fseek (f, 0, SEEK_END) != 0 || (size = ftell (f)) <= 0) {
      fprintf (stderr, "cannot read %s\n", argv[i + 2]);
      return 1;
    }
    rewind (f);
    data[i] = malloc (size);
    sizes[i] = fread (data[i], 1, size, f);
    fclose (f);
  }

  gt_random_init (&rng, 1, GST_TRAIN_AUGMENT_RANDOM_STREAM);
  clock_gettime (CLOCK_MONOTONIC, &start);
  clock_gettime (CLOCK_PROCESS_CPUTIME_ID, &cpu_start);
  for (p = 0; p < passes; p++)
    for (i = 0; i < n_files; i++)
      for (r = 0; r < repeat; r++) {
        int width, height, subsamp, colorspace;

        if (crop) {
          /* As imagedec and augment do: the header, the box, the box. */
          GstTrainJpegHeader header;
          GstTrainCropBox box;
          char *error = NULL;

          if (!gst_train_jpeg_read_header (
                  data[i], sizes[i], 0, 1, &header, &error)) {
            fprintf (stderr, "%s: %s\n", argv[i + 2], error);
            return 1;
          }
          if ((size_t)header.width * header.height * 3 > out_size) {
            out_size = (size_t)header.width * header.height * 3;
            out = realloc (out, out_size);
          }
          gst_train_augment_draw_crop (
              &rng, header.width, header.height, &range, &box);
          if (!gst_train_jpeg_decode_region (data[i], sizes[i], &header,
                  box.left, box.top, box.width, box.height, read_all, out,
                  box.width * 3, &error)) {
            fprintf (stderr, "%s: %s\n", argv[i + 2], error);
            return 1;
          }
          continue;
        }
        if (tjDecompressHeader3 (handle, data[i], sizes[i], &width, &height,
                &subsamp, &colorspace)
            != 0) {
          fprintf (stderr, "%s: %s\n", argv[i + 2], tjGetErrorStr2 (handle));
          return 1;
        }
        if ((size_t)width * height * 3 > out_size) {
          out_size = (size_t)width * height * 3;
          out = realloc (out, out_size);
        }
        if (tjDecompress2 (
                handle, data[i], sizes[i], out, width, 0, height, TJPF_RGB, 0)
            != 0) {
          fprintf (stderr, "%s: %s\n", argv[i + 2], tjGetErrorStr2 (handle));
          return 1;
        }
      }
  clock_gettime (CLOCK_MONOTONIC, &end);
  clock_gettime (CLOCK_PROCESS_CPUTIME_ID, &cpu_end);
  printf ("%d %.6f %.6f\n", passes * n_files * repeat,
      (end.tv_sec - start.tv_sec) + (end.tv_nsec - start.tv_nsec) / 1e9,
      (cpu_end.tv_sec - cpu_start.tv_sec)
          + (cpu_end.tv_nsec - cpu_start.tv_nsec) / 1e9);
  return 0;
}

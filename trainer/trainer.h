/* trainer.h: the public interface of gst-train's training library.
 *
 * Plain C with no GStreamer or GLib dependency, so that it can be tested and
 * benchmarked alone. Functions return 0 on success and a negative code on
 * failure, with a message written to the caller's buffer; they never abort.
 */
#ifndef GT_TRAINER_H
#define GT_TRAINER_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct
{
  char name[256];
  int major;
  int minor;
  size_t total_memory;
} GtCudaDeviceInfo;

/* 1 when this build contains the CUDA backend, else 0. */
int gt_cuda_built (void);

/* Number of usable CUDA devices (>= 1), or 0 with the reason in @why when
 * there is none (no driver, no device, built without CUDA). */
int gt_cuda_device_count (char *why, size_t why_size);

/* Fills @info for device @device_id; 0 on success, -1 with the reason in
 * @why otherwise. */
int gt_cuda_device_info (
    int device_id, GtCudaDeviceInfo *info, char *why, size_t why_size);

#ifdef __cplusplus
}
#endif

#endif /* GT_TRAINER_H */

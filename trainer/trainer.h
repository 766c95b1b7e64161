/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* trainer.h: the public interface of gst-train's training library.
 *
 * Plain C with no GStreamer or GLib dependency, so that it can be tested and
 * benchmarked alone. Functions return 0 (GT_OK) on success and a negative
 * GtStatus on failure, with a message kept in the trainer (gt_trainer_error)
 * or written to the caller's buffer; they never abort on bad input.
 *
 * One trainer is one model on one backend: create it from a GtTrainerConfig,
 * feed it uint8 NHWC batches with int32 labels, save and load checkpoints.
 * A step is split into begin and end so that a device backend can run it
 * while the caller prepares the next batch; on the CPU begin does the work.
 */
#ifndef GT_TRAINER_H
#define GT_TRAINER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum
{
  GT_OK = 0,
  GT_ERROR_INVALID = -1,   /* a bad argument, config or batch */
  GT_ERROR_IO = -2,        /* a file could not be read or written */
  GT_ERROR_NO_MEMORY = -3, /* host or device memory ran out */
  GT_ERROR_DEVICE = -4,    /* no usable device, or a CUDA/cuDNN failure */
  GT_ERROR_NONFINITE = -5, /* the loss was NaN or infinite: not applied */
  GT_ERROR_MISMATCH = -6,  /* a checkpoint does not fit the model */
  GT_ERROR_STOPPED = -7,   /* data-parallel: a rank left; nothing applied */
  GT_ERROR_TIMEOUT = -8,   /* data-parallel: a collective did not complete
                            * within the communicator's timeout; the job
                            * ends (gt_comm_set_timeout) */
} GtStatus;

typedef enum
{
  GT_MODEL_RESNET18,
  GT_MODEL_RESNET34,
  GT_MODEL_RESNET50,
  GT_MODEL_RESNET101,
  GT_MODEL_RESNET20, /* CIFAR layout: 3x3 stem, no max-pool, 16/32/64 */
  GT_MODEL_RESNET32,
} GtModel;

typedef enum
{
  GT_BACKEND_CPU,
  GT_BACKEND_CUDA,
} GtBackend;

typedef enum
{
  GT_PRECISION_FP32,
  GT_PRECISION_BF16,
  GT_PRECISION_FP16,
} GtPrecision;

typedef enum
{
  GT_LR_CONSTANT,
  GT_LR_COSINE, /* to 0 at total_steps */
  GT_LR_STEP,   /* times lr_gamma every lr_step_size steps */
  GT_LR_POLY,   /* (1 - progress)^lr_power, to 0 at total_steps */
} GtLrSchedule;

/* Which convolution code the CPU backend runs: the reference is im2col +
 * sgemm for every layer; fast adds the direct 3x3 kernels where they
 * apply (narrow 3x3 stride-1 layers) and is the default. */
typedef enum
{
  GT_CPU_KERNELS_FAST,
  GT_CPU_KERNELS_REFERENCE,
} GtCpuKernels;

/* The vector unit the direct kernels are built for: auto takes the widest
 * the CPU has; a named one is used when the CPU has it (sse always). */
typedef enum
{
  GT_CPU_ISA_AUTO,
  GT_CPU_ISA_AVX512,
  GT_CPU_ISA_AVX2,
  GT_CPU_ISA_SSE,
} GtCpuIsa;

/* Data-parallel training (dist.c): which library reduces the gradients.
 * The CPU backend always uses MPI; the CUDA backend NCCL (auto) or MPI
 * through host memory (which lets two ranks share one GPU, for tests). */
typedef enum
{
  GT_COMM_AUTO,
  GT_COMM_NCCL,
  GT_COMM_MPI,
} GtCommBackend;

typedef struct GtComm GtComm;

typedef enum
{
  GT_LOG_ERROR,
  GT_LOG_WARNING,
  GT_LOG_INFO,
  GT_LOG_DEBUG
} GtLogLevel;
/* Receives the training library's messages (one line, no newline). */
typedef void (*GtLogFunc) (
    GtLogLevel level, const char *message, void *user_data);

typedef struct
{
  GtModel model;
  int num_classes;
  /* Largest batch a step or eval pass will get, and the input size. */
  int batch_size;
  int height;
  int width;

  GtBackend backend;
  int gpu_id;
  GtPrecision precision;
  /* 0: one per core this process may run on (its affinity mask: taskset,
   * cpusets), shared among the ranks of a data-parallel job
   * on this machine (so that two ranks do not run twice as many threads
   * as there are cores) */
  int num_threads;

  /* x = (u8 / 255 - mean) / std, per RGB channel; a one-channel batch is
   * used as grey (R = G = B). */
  float mean[3];
  float std[3];

  /* SGD with momentum as torch.optim.SGD: g = grad + weight_decay * w,
   * buf = momentum * buf + g, w -= lr * (nesterov ? g + momentum * buf : buf).
   */
  float lr;
  float momentum;
  float weight_decay;
  int nesterov;
  /* 0 (default): no weight decay on batch-norm weights and biases. */
  int decay_norm_and_bias;
  float label_smoothing;

  /* Linear warmup from lr / warmup_steps to lr over warmup_steps, then the
   * schedule over the remaining total_steps - warmup_steps. */
  GtLrSchedule lr_schedule;
  int64_t warmup_steps;
  int64_t total_steps;
  int64_t lr_step_size;
  float lr_gamma;
  float lr_power;

  /* Weights are drawn from this seed; zero_init_residual zeroes the last
   * batch-norm weight of every block (Goyal et al.). */
  uint64_t seed;
  int zero_init_residual;

  /* CPU backend: GT_CPU_KERNELS_FAST, GT_CPU_ISA_AUTO by default. */
  GtCpuKernels cpu_kernels;
  GtCpuIsa cpu_isa;
  /* CUDA backend: capture full steps as a CUDA graph (1 by default); fail
   * a step whose capture fails instead of falling back to eager steps (0);
   * time each step's parts and print the split to stderr when the trainer
   * is freed, which turns graphs off (0). */
  int cuda_graphs;
  int cuda_require_graph;
  int cuda_profile;

  /* Data-parallel training, PyTorch DistributedDataParallel's semantics:
   * NULL (the default) trains in this process alone. Else every rank of
   * @comm (from gt_comm_new; not owned, it must outlive the trainer)
   * makes a trainer with the same configuration; the initial weights are
   * rank 0's; every step averages the gradients over the ranks before the
   * update; batch-norm statistics stay per rank. batch_size is the batch
   * of one rank. The collective calls (gt_trainer_new, gt_trainer_load,
   * gt_trainer_step, gt_trainer_leave, gt_trainer_free) must be made by
   * every rank in the same order. */
  GtComm *comm;
  GtCommBackend comm_backend;
  /* CUDA with NCCL: the gradient buckets (0: 25 MiB) reduced while the
   * backward pass goes on, and whether they travel as bf16 (0: fp32). */
  size_t bucket_bytes;
  int comm_bf16;

  /* Where the trainer's messages go (fallbacks it took, choices that cost
   * determinism), called from the thread that made the call which
   * reports; @log_data is handed back. NULL (the default): warnings and
   * errors are printed to stderr as "gst-train: MESSAGE", the rest
   * dropped. The profile's JSON lines (cuda_profile) are data, not
   * messages: they always go to stderr. */
  GtLogFunc log_func;
  void *log_data;
} GtTrainerConfig;

/* A batch: num_samples images of height x width x channels (1 or 3) uint8,
 * image i at images + i * image_stride, rows row_stride bytes apart (0:
 * packed), and num_samples int32 labels. It must stay valid and unchanged
 * until the matching gt_trainer_step_end returns. */
typedef struct
{
  const uint8_t *images;
  const int32_t *labels;
  int num_samples;
  int height;
  int width;
  int channels;
  size_t row_stride;
  size_t image_stride;
} GtBatch;

typedef struct
{
  int64_t step; /* global step after this one (1 after the first step) */
  float loss;   /* mean over the batch, with label smoothing */
  float lr;     /* learning rate this step used */
  int num_samples;
  int correct_top1;
  int correct_top5;
  /* Seconds the backend was busy computing a step, without any wait for
   * the batch: on the CPU this step's; on the GPU the device time of the
   * previous step, from CUDA events (this step's is not done when its loss
   * is: its backward pass overlaps the caller's next batch), so 0 after
   * the first step of a trainer. */
  double busy_seconds;
  /* Data-parallel: loss, correct_top1 and correct_top5 are over every
   * rank's batch; num_samples is this rank's, global_samples the sum over
   * the ranks; comm_seconds the time this step spent reducing (on the CPU)
   * or waiting for the reduction (CUDA). One process: global_samples is
   * num_samples and comm_seconds 0. */
  int64_t global_samples;
  double comm_seconds;
} GtStepResult;

/* Sums over an eval pass: loss_sum / num_samples is the mean loss. */
typedef struct
{
  double loss_sum;
  int64_t num_samples;
  int64_t correct_top1;
  int64_t correct_top5;
} GtEvalTotals;

typedef enum
{
  GT_TENSOR_VALUE,    /* the weight, or the running statistic */
  GT_TENSOR_GRAD,     /* the gradient of the last step */
  GT_TENSOR_MOMENTUM, /* the optimiser's momentum buffer */
} GtTensorPart;

typedef struct
{
  const char *name; /* torchvision's state_dict name */
  int ndim;
  int64_t shape[4]; /* PyTorch's order (OIHW for convolutions) */
  int64_t numel;
  int is_parameter; /* 0 for running_mean/var and num_batches_tracked */
} GtTensorInfo;

typedef struct GtTrainer GtTrainer;

/* Fills @config with the standard ResNet-50 recipe: resnet50, 1000 classes,
 * 224x224, batch 256, lr 0.1, momentum 0.9, weight decay 1e-4 (not on
 * batch-norm and biases), label smoothing 0.1, cosine schedule, ImageNet
 * mean and std, CPU backend, fp32, the fast CPU kernels for the widest
 * vector unit, CUDA graphs on. */
void gt_trainer_config_init (GtTrainerConfig *config);

/* Overrides @config's backend tuning fields from the environment:
 * GT_CPU_NO_DIRECT_CONV (set: cpu_kernels reference), GT_CPU_ISA (avx512,
 * avx2 or sse: cpu_isa), GT_CUDA_NO_GRAPH, GT_CUDA_REQUIRE_GRAPH and
 * GT_CUDA_PROFILE (set to anything but "0": graphs off, require_graph on,
 * profile on); a variable that is unset (or "0", or an unknown ISA) leaves
 * its field alone. gt_trainer_new applies it to its copy of the
 * configuration, so the variables override what a caller set; this is the
 * one place that reads them. */
void gt_trainer_config_apply_env (GtTrainerConfig *config);

const char *gt_model_name (GtModel model);
/* 0 and *model set when @name is a model this library builds, else -1. */
int gt_model_from_name (const char *name, GtModel *model);
const char *gt_status_name (GtStatus status);

/* A new trainer with freshly initialised weights, or NULL with the reason
 * in @why. */
GtTrainer *gt_trainer_new (
    const GtTrainerConfig *config, char *why, size_t why_size);
void gt_trainer_free (GtTrainer *trainer);

/* The message of the last failure of @trainer ("" when none). */
const char *gt_trainer_error (const GtTrainer *trainer);
const GtTrainerConfig *gt_trainer_config (const GtTrainer *trainer);

/* Starts one training step on @batch. Data-parallel, GT_ERROR_STOPPED
 * (from the step's end) when a rank left the job (gt_trainer_leave) at
 * this step: nothing was applied, and the trainer takes no more steps. */
int gt_trainer_step_begin (GtTrainer *trainer, const GtBatch *batch);
/* Waits for the step begun last and reports it. GT_ERROR_NONFINITE when
 * its loss was not finite: the weights and momentum were left unchanged. */
int gt_trainer_step_end (GtTrainer *trainer, GtStepResult *result);
/* gt_trainer_step_begin followed by gt_trainer_step_end. */
int gt_trainer_step (
    GtTrainer *trainer, const GtBatch *batch, GtStepResult *result);

/* Data-parallel: this rank has no more data (or stops): takes part in the
 * step the other ranks are running, which then ends with
 * GT_ERROR_STOPPED on all of them with nothing applied, so that every rank
 * stops at the same step (a join). Afterwards the trainer takes no steps
 * and makes no collective call. Without a communicator, or when already
 * stopped, it does nothing. gt_trainer_free leaves for a trainer that has
 * not, so that a rank that fails makes its peers stop, not hang. */
int gt_trainer_leave (GtTrainer *trainer);

/* Data-parallel: this rank and the number of ranks (0 and 1 alone). */
int gt_trainer_rank (const GtTrainer *trainer);
int gt_trainer_world_size (const GtTrainer *trainer);
/* Samples trained on by all ranks together, restored from checkpoints
 * (metadata samples_seen). */
int64_t gt_trainer_samples_seen (const GtTrainer *trainer);

/* Forward only, with running statistics; adds to @totals. Local to this
 * rank even when data-parallel (no collective). */
int gt_trainer_eval (
    GtTrainer *trainer, const GtBatch *batch, GtEvalTotals *totals);

/* The logits of the last step or eval pass, num_samples x num_classes;
 * returns how many were copied (at most @count). */
size_t gt_trainer_read_logits (GtTrainer *trainer, float *out, size_t count);

/* Host memory for batches that @trainer copies from fastest (pinned memory
 * on the CUDA backend, plain malloc on the CPU), or NULL; free it with
 * gt_trainer_host_free before freeing the trainer. */
void *gt_trainer_host_alloc (GtTrainer *trainer, size_t size);
void gt_trainer_host_free (GtTrainer *trainer, void *memory);

/* How the backend runs, for benchmarks and reports: whether its steps are
 * replayed as CUDA graphs and, when not, why; what choosing the cuDNN
 * convolution algorithms cost. The CPU backend has no graphs and no cuDNN
 * (graphs 0, graphs_off "cpu backend", the counts 0). */
typedef struct
{
  int graphs;               /* 1: full steps are replayed as a CUDA graph */
  char graphs_off[256];     /* when not: why (configuration, profile, a failed
                         * capture and its reason, host reduction) */
  int conv_shapes;          /* convolution shapes planned so far */
  double planning_seconds;  /* spent choosing their algorithms */
  int nondeterministic;     /* fp32 directions given a non-deterministic
                             * algorithm (no bit-exact runs then) */
  int accumulate_fallbacks; /* backward-data shapes summed in a scratch */
} GtBackendReport;

void gt_trainer_backend_report (GtTrainer *trainer, GtBackendReport *report);

int64_t gt_trainer_global_step (const GtTrainer *trainer);
/* The learning rate of the step that follows @step steps under @config's
 * schedule. */
float gt_lr_schedule (const GtTrainerConfig *config, int64_t step);
/* The learning rate the next step will use. */
float gt_trainer_current_lr (const GtTrainer *trainer);
/* The fewest samples a training step takes: 2 when the last stage is 1x1
 * (batch-norm needs more than one value per channel), else 1. */
int gt_trainer_min_train_batch (const GtTrainer *trainer);
/* Number of trainable parameters (weights and biases). */
size_t gt_trainer_num_parameters (const GtTrainer *trainer);

/* The model's state_dict tensors, in torchvision's order. */
int gt_trainer_num_tensors (const GtTrainer *trainer);
int gt_trainer_tensor_info (
    const GtTrainer *trainer, int index, GtTensorInfo *info);
/* Copies one part of tensor @name, in PyTorch's layout, as float. */
int gt_trainer_read_tensor (GtTrainer *trainer, const char *name,
    GtTensorPart part, float *out, size_t count);

/* String key/value pairs saved with the next checkpoint and read back by
 * gt_trainer_load (for the caller's own state: epoch, data position...). */
int gt_trainer_set_metadata (
    GtTrainer *trainer, const char *key, const char *value);
const char *gt_trainer_get_metadata (const GtTrainer *trainer, const char *key);

/* Writes a safetensors checkpoint atomically: the state_dict under
 * torchvision's names, plus "optimizer.momentum.<name>" tensors and the
 * step, schedule and RNG state in the metadata, with the metadata keys
 * world_size, global_batch (batch_size times world_size) and samples_seen.
 * With @weights_only the file holds the state_dict alone. Not a
 * collective: data-parallel callers save on rank 0 only. */
int gt_trainer_save (GtTrainer *trainer, const char *path, int weights_only);

/* Data-parallel: a collective; rank 0 reads @path (the others ignore it)
 * and every rank takes rank 0's state, or rank 0's error.
 *
 * Loads a checkpoint written by gt_trainer_save (exact resume: weights,
 * statistics, momentum, step, RNG, metadata) or a state_dict-only file such
 * as one saved from torchvision (weights and statistics; momentum zero, step
 * 0). *@resumed (when not NULL) is set to 1 for the first kind, 0 for the
 * second. GT_ERROR_MISMATCH names what does not fit; the trainer is left
 * unchanged on any failure. */
int gt_trainer_load (GtTrainer *trainer, const char *path, int *resumed);

/* Reads metadata @key of the checkpoint at @path, without a trainer: the
 * header only (no tensor is read), so that a caller can learn where a run
 * stopped (step, samples_seen, world_size, its own keys) before it makes
 * the trainer. Copies the value, NUL-terminated, into @value (@size bytes).
 * GT_OK; GT_ERROR_IO (with the reason in @why) when the file cannot be read
 * or is not safetensors; GT_ERROR_INVALID when the key is absent or its
 * value does not fit. */
int gt_checkpoint_read_metadata (const char *path, const char *key, char *value,
    size_t size, char *why, size_t why_size);

/* Which model the safetensors file at @path holds, without a trainer: its
 * metadata's (gst_train.model, gst_train.num_classes) in gst-train's own
 * files, else the model whose state_dict (names and shapes) it holds, with
 * as many classes as its classifier has rows (a file saved from PyTorch).
 * GT_OK with *@model and *@num_classes set; GT_ERROR_IO (with the reason
 * in @why) when the file cannot be read or is not safetensors;
 * GT_ERROR_MISMATCH when it holds none of the models. */
int gt_checkpoint_identify (const char *path, GtModel *model, int *num_classes,
    char *why, size_t why_size);

typedef struct
{
  char name[256];
  int major;
  int minor;
  size_t total_memory;
  /* Versions as the libraries encode them (12080 is CUDA 12.8; cuDNN's
   * 91000 is 9.10.0): the CUDA version the driver supports, the runtime's,
   * and the cuDNN the backend loaded. */
  int driver_version;
  int runtime_version;
  int cudnn_version;
} GtCudaDeviceInfo;

/* Host memory for batches that needs no trainer (for a buffer pool set up
 * before the trainer exists): with @gpu_id >= 0 and that CUDA device
 * usable, page-locked through the CUDA backend module (with that device
 * current, so that no other device gets a context), so that copies to the
 * device run asynchronously and at full speed; else (@gpu_id < 0: for the
 * CPU) ordinary memory. 64-byte aligned either way. *@pinned (when not
 * NULL) is set to 1 for page-locked memory. NULL when out of memory. Free
 * with gt_host_free. */
void *gt_host_alloc (size_t size, int gpu_id, int *pinned);
void gt_host_free (void *memory);

/* What the CPU backend runs with @kernels and @isa: its BLAS and the
 * kernels that BLAS uses, and the vector unit of the direct 3x3
 * convolutions, e.g. "OpenBLAS 0.3.21, Cooperlake kernels; direct 3x3
 * convolutions: avx512". The BLAS follows the CPU's features, not a
 * table of models (trainer/cpu/cpu-blas.h). 0, or -1 when no BLAS can be
 * opened (the reason in @out). */
int gt_cpu_describe (
    GtCpuKernels kernels, GtCpuIsa isa, char *out, size_t size);

/* 1 when this build contains the CUDA backend, else 0. */
int gt_cuda_built (void);

/* Number of usable CUDA devices (>= 1), or 0 with the reason in @why when
 * there is none (no driver, no device, built without CUDA). */
int gt_cuda_device_count (char *why, size_t why_size);

/* Fills @info for device @device_id; 0 on success, -1 with the reason in
 * @why otherwise. */
int gt_cuda_device_info (
    int device_id, GtCudaDeviceInfo *info, char *why, size_t why_size);

/* The NCCL that comm-backend nccl would use, opened now if not yet (no GPU
 * needed): its version code, NCCL_VERSION (major, minor, patch) = major *
 * 10000 + minor * 100 + patch, with the file in @path; or 0 with the reason
 * in @why (libnccl.so.2 or GT_NCCL_LIBRARY's file missing, too old, the
 * CUDA module not loadable, built without NCCL). */
int gt_cuda_nccl_version (
    char *path, size_t path_size, char *why, size_t why_size);

/* ---- Data-parallel jobs (dist.c) ---- */

/* 1 when this build has MPI (meson -Dmpi), else 0. */
int gt_dist_built (void);

/* Joins the job the launcher started: initialises MPI on the first call in
 * the process (at least MPI_THREAD_SERIALIZED: the caller makes one
 * collective call at a time) and returns a communicator over every rank.
 * MPI is finalised at exit, or the job aborted when a trainer of this
 * process had not left it. NULL with the reason in @why without MPI or
 * when it fails. */
GtComm *gt_comm_new (char *why, size_t why_size);
void gt_comm_free (GtComm *comm);
int gt_comm_rank (const GtComm *comm);
int gt_comm_size (const GtComm *comm);
/* The rank among the processes of this machine, and their number. */
int gt_comm_local_rank (const GtComm *comm);
int gt_comm_local_size (const GtComm *comm);

typedef enum
{
  GT_COMM_FLOAT,
  GT_COMM_DOUBLE,
  GT_COMM_INT64,
} GtCommType;

typedef enum
{
  GT_COMM_SUM,
  GT_COMM_MAX,
  GT_COMM_MIN,
} GtCommOp;

/* Collectives over every rank, in place; 0, or with the reason
 * GT_ERROR_TIMEOUT (gt_comm_set_timeout) or -1 (another failure). */
int gt_comm_allreduce (GtComm *comm, void *values, size_t count,
    GtCommType type, GtCommOp op, char *why, size_t why_size);
int gt_comm_broadcast (GtComm *comm, void *data, size_t bytes, int root,
    char *why, size_t why_size);
/* Ends the whole job now: prints "rank R: @message" to stderr and aborts
 * every rank with exit status @code (MPI_Abort). */
void gt_comm_abort (GtComm *comm, int code, const char *message);

/* Bounds every collective of @comm, the trainer's included, as PyTorch's
 * process-group timeout does: one that has not completed @seconds after
 * this rank entered it fails with GT_ERROR_TIMEOUT and a message naming
 * it (gt_comm_set_activity), its step, and the ranks that did not arrive.
 * The ranks still alive find those out after the timeout, without
 * blocking: each asks every peer where it is, a rank waiting in a
 * collective answers at once (and gives up too), and one that has not
 * answered within 2 s is named. @comm is then broken: its later
 * collectives fail at once, and since MPI cannot be finalised with a rank
 * missing, the job ends (MPI_Abort, exit status 1) when this process
 * exits, or 5 s after the timeout at the latest. 0 (the default) waits
 * for ever, in MPI's blocking calls. */
void gt_comm_set_timeout (GtComm *comm, double seconds);
double gt_comm_timeout (const GtComm *comm);
/* What this rank's next collectives are for ("gradient all-reduce") and
 * their step (< 0: none), for the message of a timeout. @what must live as
 * long as @comm (a literal). */
void gt_comm_set_activity (GtComm *comm, const char *what, int64_t step);
/* A wait outside MPI (NCCL's reduction) for the current activity did not
 * end within the timeout: breaks @comm as its own timeout would, finding
 * and naming in @why the ranks that did not arrive, and returns
 * GT_ERROR_TIMEOUT. */
int gt_comm_gave_up (GtComm *comm, char *why, size_t why_size);
/* 1 once a collective of @comm timed out (the job is ending), else 0. */
int gt_comm_timed_out (const GtComm *comm);

/* ---- The learning-rate policy (lr-policy.c) ---- */

/* Sets the schedule fields of @config from a user's settings: peak @lr,
 * @schedule, @warmup_steps, and the schedule's length @total_steps, which
 * is @max_steps when 0 (and when that is 0 too, cosine and poly stay
 * constant after the warmup). GT_LR_STEP multiplies the rate by 0.1 at 30%,
 * 60% and 90% of the steps after the warmup. */
void gt_trainer_config_set_lr_policy (GtTrainerConfig *config, float lr,
    GtLrSchedule schedule, int64_t warmup_steps, int64_t total_steps,
    int64_t max_steps);

#ifdef __cplusplus
}
#endif

#endif /* GT_TRAINER_H */

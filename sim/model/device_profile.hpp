#pragma once
// What an accelerator can do: peak arithmetic per dtype, memory bandwidth, achieved efficiencies
// and per-kernel overhead. Loaded from topologies/devices/*.json; every number there carries its
// source, and fitted numbers say which reference rows they were fitted to.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/units.hpp"
#include "model/attention_kernel.hpp"
#include "model/gemm_throughput_curve.hpp"
#include "model/held_sm_slowdown.hpp"
#include "model/kernel_calibration.hpp"
#include "model/memory_bound_kernels.hpp"

namespace trainsim::model {

struct FittedParameter {
  std::string json_path;          ///< e.g. "/gemm_efficiency"
  std::vector<std::string> rows;  ///< "scenario-file#point-label" of each row used to fit it
  std::string method;
};

struct DeviceProfile {
  std::string name;
  std::string file;
  FlopsPerSecond peak_bf16 = 0;         ///< dense tensor-core/MME peak
  FlopsPerSecond peak_fp32 = 0;         ///< vector/CUDA-core fp32 peak
  BytesPerSecond memory_bandwidth = 0;  ///< HBM peak
  double gemm_efficiency = 1;           ///< achieved / peak on large, aligned GEMMs
  double gemm_tile = 0;                 ///< GEMM output tile edge; partial tiles cost a full one
  /// GEMM rate held over a whole training step / the rate of a short benchmark burst: a GPU at
  /// its power limit lowers its clock after a few hundred milliseconds of dense GEMMs (an H100
  /// SXM: 690 vs 808 TFLOP/s at 8192^3, 1400 vs 1980 MHz at 700 W), while kernel calibrations
  /// are timed in 50 ms bursts. Scales GEMM rates only: measured, FlashAttention-2 held its
  /// burst rate over 20 s (282 vs 283 TFLOP/s, clock 1800-1950 MHz at the same power), and
  /// memory-bound ops follow HBM, whose clock does not drop. 1 = not measured.
  double sustained_compute = 1;
  /// Fused (flash) attention kernels measured on this device ("fused_attention" in the profile);
  /// empty: a fused attention op runs at the GEMM rate of its QK^T shape.
  std::vector<AttentionKernel> attention_kernels;
  /// The kernel in use: the profile's default, or what a scenario's training.attention_kernel names.
  std::string attention_kernel;
  double memory_efficiency = 1;         ///< achieved / peak on streaming kernels
  Seconds launch_overhead = 0;          ///< per kernel
  /// Host time of one eager PyTorch call, for schedules that model framework code which loops
  /// over ranks on the host (DeepSpeed 0.3's gathers): a view (Tensor.narrow) and an
  /// asynchronous device copy (Tensor.copy_). 0: not given, such host loops are not modelled.
  Seconds eager_view_call = 0;
  Seconds eager_copy_call = 0;
  /// Host time of one call of torchmetrics' gather_all_tensors bookkeeping per rank (a Python
  /// torch.zeros_like, c10d's copy_ out of the gathered buffer), for Composer's per-batch metric
  /// sync (model/composer_metric_sync.hpp). 0: not given, eager_copy_call stands for it.
  Seconds metric_sync_call = 0;
  /// Host time per token of transformers' DataCollatorForLanguageModeling (padding the examples'
  /// Python lists into tensors, the 15% masking) in the training process, which the Hugging Face
  /// Trainer's DataLoader runs with dataloader_num_workers 0 (model/hf_trainer_step.hpp). 0: not
  /// given, the collation is not modelled.
  Seconds mlm_collate_token = 0;
  /// Host time of one iteration of a Python loop that narrows and views a small slice and
  /// copies it (DeepSpeed 0.3's rebuild of the persistent parameters after the step), measured
  /// as a whole; 0: not given, the loop is charged 3 views and a copy.
  Seconds eager_slice_copy_iteration = 0;
  /// Host time an eager PyTorch training loop spends per kernel it launches (Python, autograd,
  /// the dispatcher; host_dispatch.hpp): the host thread issues every kernel, so short kernels
  /// wait for it. A property of the host CPU and framework version, measured on one host. 0: not
  /// given, host dispatch is not modelled on this device.
  Seconds eager_kernel_issue = 0;
  Bytes runtime_reserve = 0;            ///< device memory the runtime keeps (context, workspaces)
  /// What one retry of PyTorch's caching allocator costs (memory/caching_allocator.hpp: free the
  /// cache, reserve again): `allocator_retry` plus `allocator_retry_per_gb` per 1e9 bytes of the
  /// segment it then reserves. 0: not given.
  Seconds allocator_retry = 0;
  Seconds allocator_retry_per_gb = 0;
  /// PyTorch's CUDA caching allocator manages the device's memory: profiles that give its retry
  /// cost. Gaudi's SynapseAI has an allocator of its own, not modelled, so its ranks report no
  /// reserved memory rather than a CUDA allocator's.
  [[nodiscard]] bool caching_allocator() const { return allocator_retry > 0; }
  /// Streaming multiprocessors: what a concurrent NCCL kernel takes a share of (one per channel,
  /// engine/program_executor.hpp); 0 = not given (no collective slows compute on this device).
  int sm_count = 0;
  /// Measured slowdown of arithmetic kernels beside K held SMs ("held_sm_slowdown"); empty: the
  /// held SMs' proportional share (measured on the H100 only, not on the A100 or Gaudi).
  HeldSmSlowdown held_sm_slowdown;
  std::vector<FittedParameter> fitted;

  /// Measured kernel performance ("kernel_calibration": file relative to the profile). Where
  /// present it replaces gemm_efficiency for the dtypes it has samples of, and memory_bandwidth *
  /// memory_efficiency by its achieved bandwidth.
  std::optional<KernelCalibration> kernels;
  struct SampledGemmCurve {
    Dtype dtype;
    Accumulation accumulation;
    GemmThroughputCurve curve;
  };
  std::vector<SampledGemmCurve> gemm_curves;  ///< one per sampled dtype and accumulation
  /// Further calibration files whose GEMM samples were merged into `kernels` ("gemm_calibrations":
  /// files relative to the profile, each adding dtypes (or fp8 accumulations) the others lack).
  std::vector<std::string> extra_gemm_calibrations;
  /// The memory-bound kernels a training framework runs on this device ("memory_bound_kernels":
  /// file relative to the profile). Where present, its rates are the only per-class ones: the
  /// calibration's "elementwise" samples time the project's own kernels, which a job does not run.
  std::optional<MemoryBoundKernels> memory_bound_kernels;
};

/// The GEMM curve for `d` accumulating as `a`: its own samples, else those of its 16-bit twin
/// (fp16 and bf16 run at the same tensor-core rate on the devices trainsim models); nullptr when
/// neither was measured. No fp8 curve stands in for the other accumulation: a loaded profile with
/// fp8 samples has both (load_device_profile).
[[nodiscard]] const GemmThroughputCurve* gemm_curve(const DeviceProfile& dev, Dtype d,
                                                    Accumulation a = Accumulation::full);

/// Achieved streaming bandwidth: the calibration's measurement, else peak x memory_efficiency.
[[nodiscard]] BytesPerSecond achieved_memory_bandwidth(const DeviceProfile& dev);

/// Streaming rate of memory-bound kernel class `kernel` (model::Operation::kernel): bytes / time
/// of its measured samples in `dev.memory_bound_kernels` if the profile has that file, else in
/// the kernel calibration's "elementwise" samples; achieved_memory_bandwidth for an empty class or
/// one without a sample.
[[nodiscard]] BytesPerSecond memory_bound_rate(const DeviceProfile& dev, const std::string& kernel);

/// Sets `dev.kernels` to `c` and builds one GEMM throughput curve per dtype sampled in it (with
/// `dev.gemm_tile`), replacing any earlier calibration: what a profile's "kernel_calibration"
/// entry does, for callers holding a calibration in memory (validate/).
void attach_kernel_calibration(DeviceProfile& dev, KernelCalibration c);

/// The kernel `dev.attention_kernel` names; nullptr when the profile has none.
[[nodiscard]] const AttentionKernel* active_attention_kernel(const DeviceProfile& dev);

/// Loads and validates a device profile; ConfigError on bad input.
[[nodiscard]] DeviceProfile load_device_profile(const std::string& path);

}  // namespace trainsim::model

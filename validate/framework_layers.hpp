#pragma once
// Whole layers timed in PyTorch on a GPU (validate/measure_sustained.py's eager Llama-3 8B layer,
// validate/measure_torch_ops.py's post-LN GPT layers), against the simulator's op list for the
// same layer on a device profile. Timed in bursts after warm-up, so the comparison runs the
// profile at its burst rate (sustained_compute 1).
#include <string>
#include <vector>

#include "core/units.hpp"
#include "model/device_profile.hpp"
#include "model/transformer.hpp"

namespace trainsim::validate {

struct FrameworkLayer {
  std::string label;  ///< "llama3-8b layer seq 8192 x 1", "gpt-7.5b sdpa-flash", ...
  model::TransformerSpec spec;
  model::LayerShape shape;
  Seconds measured_forward = 0;
  Seconds measured_backward = 0;  ///< forward+backward minus forward
};

/// The "layers" rows of a sustained-rate file (llama3-8b layers: seq, batch) and of a
/// torch-ops file (named models of named_models.hpp, "unfused" or "sdpa-flash" attention).
/// ConfigError naming the file and JSON path on a row it cannot place.
[[nodiscard]] std::vector<FrameworkLayer> read_framework_layers(const std::string& sustained_file,
                                                                const std::string& torch_ops_file);

/// The rows of validate/measure_fp8_layer.py's file: the Llama-3 8B layer with bf16 or FP8
/// (torchao's tensorwise recipe) linears, eager or under torch.compile (the simulator's fused
/// kernels, and torchao's cast writing both FP8 layouts). Rows the script recorded as failed are
/// skipped; ConfigError on a row it cannot place.
[[nodiscard]] std::vector<FrameworkLayer> read_fp8_layer_rows(const std::string& fp8_layer_file);

struct LayerPrediction {
  Seconds forward = 0, backward = 0;
};
/// layer_forward_ops and layer_backward_ops of the layer, priced by model::op_duration on `dev`,
/// timed as the measurement loop runs them: iterations back to back, each op's kernels issued by
/// the host at `host_per_kernel` each (model/host_dispatch.hpp; 0: the device's time only). The
/// forward is the steady period of forward-only iterations, the backward that of
/// forward+backward iterations minus it, as measure_torch_ops.py's fwd_bwd takes them.
[[nodiscard]] LayerPrediction predict_layer(const FrameworkLayer& layer, const model::DeviceProfile& dev,
                                            Seconds host_per_kernel = 0);

}  // namespace trainsim::validate

// trainsim-framework-layers DEVICE.json SUSTAINED.json TORCH_OPS.json: whole PyTorch layers
// measured on a GPU (the "layers" rows of validate/results/<gpu>-sustained-measured.json and
// <gpu>-torch-ops-measured.json) against the simulator's layer op lists on the device profile at
// its burst rate (the rows are timed in short bursts after warm-up). No GPU needed.
// With --profile PROFILE.json (validate/profile_torch_layers.py's kernel breakdown of the same
// layers), each torch layer's device time follows, group by group (layer_op_breakdown.hpp). With
// --fp8-layer FILE (validate/measure_fp8_layer.py), the Llama-3 8B layer with bf16 and FP8 linears,
// eager and compiled, follows.
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>

#include "core/error.hpp"
#include "framework_layers.hpp"
#include "layer_op_breakdown.hpp"

namespace {

void print_breakdown(const trainsim::validate::FrameworkLayer& l,
                     const std::vector<trainsim::validate::ProfiledLayer>& profile,
                     const trainsim::model::DeviceProfile& dev) {
  using namespace trainsim::validate;
  for (const auto& p : profile) {
    if (l.label != p.model + " " + p.attention) continue;
    std::printf("\n%s: device time per forward+backward, profiled (kernel sum %.0f us) vs predicted\n",
                l.label.c_str(), p.device_us);
    std::printf("  %-34s %10s %10s %9s %4s\n", "group", "profiled", "predicted", "diff", "ops");
    double tp = 0, tq = 0;
    for (const auto& g : layer_breakdown(l, p, dev)) {
      tp += g.profiled_us;
      tq += g.predicted_us;
      std::printf("  %-34s %8.1fus %8.1fus %+8.1fus %4d\n", g.group.c_str(), g.profiled_us, g.predicted_us,
                  g.predicted_us - g.profiled_us, g.predicted_ops);
    }
    std::printf("  %-34s %8.1fus %8.1fus %+8.1fus (aten ops the profile lists; memsets left out)\n", "total", tp,
                tq, tq - tp);
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace trainsim;
  const bool with_profile = argc == 6 && std::strcmp(argv[4], "--profile") == 0;
  const bool with_fp8 = argc == 6 && std::strcmp(argv[4], "--fp8-layer") == 0;
  if (argc != 4 && !with_profile && !with_fp8) {
    std::cerr << "usage: trainsim-framework-layers DEVICE.json SUSTAINED.json TORCH_OPS.json "
                 "[--profile PROFILE.json | --fp8-layer FP8_LAYER.json]\n";
    return 2;
  }
  try {
    auto dev = model::load_device_profile(argv[1]);
    dev.sustained_compute = 1;  // burst timing
    std::printf("%-54s %10s %10s %8s %10s %10s %8s %10s %10s %8s\n", "layer", "fwd meas", "fwd pred",
                "error", "bwd meas", "bwd pred", "error", "total meas", "total pred", "error");
    auto one_row = [&](const validate::FrameworkLayer& l, const std::string& ops, Seconds host_per_kernel) {
      const auto p = validate::predict_layer(l, dev, host_per_kernel);
      const double mt = l.measured_forward + l.measured_backward, pt = p.forward + p.backward;
      auto err = [](double pred, double meas) { return 100 * (pred - meas) / meas; };
      std::printf("%-54s %8.0fus %8.0fus %+7.1f%% %8.0fus %8.0fus %+7.1f%% %8.0fus %8.0fus %+7.1f%%\n",
                  (l.label + ops).c_str(), l.measured_forward * 1e6, p.forward * 1e6,
                  err(p.forward, l.measured_forward), l.measured_backward * 1e6, p.backward * 1e6,
                  err(p.backward, l.measured_backward), mt * 1e6, pt * 1e6, err(pt, mt));
    };
    // The host issues each kernel at the profile's eager_kernel_issue (measured, host dispatch);
    // where the profile has it, each layer is also shown with the device's time alone.
    auto row = [&](const validate::FrameworkLayer& l, const std::string& ops) {
      if (dev.eager_kernel_issue > 0) one_row(l, ops + " (device only)", 0);
      one_row(l, ops + (dev.eager_kernel_issue > 0 ? " (host dispatch)" : ""), dev.eager_kernel_issue);
    };
    const auto layers = validate::read_framework_layers(argv[2], argv[3]);
    for (const auto& l : layers) {
      if (l.shape.eager) {
        auto fused = l;
        fused.shape.eager = false;
        row(fused, " (fused ops)");
        row(l, " (eager ops)");
      } else {
        row(l, "");
      }
    }
    if (with_fp8)
      for (const auto& l : validate::read_fp8_layer_rows(argv[5])) row(l, "");
    if (with_profile) {
      const auto profile = validate::read_layer_profile(argv[5]);
      for (const auto& l : layers) print_breakdown(l, profile, dev);
    }
  } catch (const ConfigError& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}

// `trainsim-validate layer`: one transformer layer's forward and backward on the GPU against the
// simulator's prediction from the same kernel calibration, per kernel and in total.
#include <cmath>
#include <iostream>

#include "arguments.hpp"
#include "commands.hpp"
#include "cuda_stream.hpp"
#include "device_info.hpp"
#include "gpu_layer.hpp"
#include "kernel_measurements.hpp"
#include "layer_comparison.hpp"
#include "model/transformer.hpp"

namespace trainsim::validate {

int layer_command(const std::vector<std::string>& args) {
  const LayerOptions o = parse_layer_options(args);
  const DeviceInfo info = describe_device(o.device);
  model::KernelCalibration calibration;
  if (o.calibration.empty()) {
    std::cerr << "no --calibration given: measuring the kernels first\n";
    calibration = measure_kernels(KernelsOptions{"", false, o.device}, info, std::cerr);
  } else {
    calibration = model::load_kernel_calibration(o.calibration);
    if (calibration.provenance.gpu != info.name)
      std::cerr << "warning: " << o.calibration << " was measured on \""
                << calibration.provenance.gpu << "\", this is \"" << info.name << "\"\n";
  }
  const model::DeviceProfile device = validation_profile(calibration, kLayerCheckGemmTile);

  const auto ops = layer_pass_ops(o.spec, o.micro_batch);

  kernels::CudaStream stream;
  kernels::CublasLt lt;
  const double mismatch = verify_small_gpu_layer(lt, stream.get());
  if (mismatch > 1)
    throw VerificationError(
        "the GPU layer's forward pass does not match the CPU reference (worst "
        "mismatch " +
        std::to_string(mismatch) + " x tolerance); nothing was timed");
  const GpuLayer layer(o.spec, o.micro_batch, lt, stream.get());
  const auto per_kernel = layer.time_per_kernel(o.iters);
  const Seconds whole = layer.time_pass(o.iters);

  std::cout << o.spec.name << ": hidden " << o.spec.hidden << ", heads " << o.spec.heads << ", seq "
            << o.spec.seq_len << ", micro-batch " << o.micro_batch << ", bf16, one layer forward + "
            << "backward on " << info.name << "\n";
  const auto comparison = compare_layer(per_kernel, whole, ops, device);
  print_layer_comparison(std::cout, comparison);
  print_layer_verdict(std::cout, comparison);
  return 0;
}

}  // namespace trainsim::validate

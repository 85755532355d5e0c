// `trainsim-validate kernels --out FILE`: measure and write the kernel calibration.
#include <iostream>

#include "arguments.hpp"
#include "calibration_output.hpp"
#include "commands.hpp"
#include "device_info.hpp"
#include "kernel_measurements.hpp"

namespace trainsim::validate {

int kernels_command(const std::vector<std::string>& args) {
  const KernelsOptions options = parse_kernels_options(args);
  const DeviceInfo info = describe_device(options.device);
  std::cerr << "measuring " << info.name << " (" << info.sm_count << " SMs, driver " << info.driver
            << ", CUDA " << info.cuda << ")\n";
  const auto calibration = measure_kernels(options, info, std::cerr);
  write_calibration_file(options.out, calibration);
  std::cout << "wrote " << options.out << ": " << calibration.gemm.size() << " GEMM samples, "
            << calibration.elementwise.size() << " memory-bound kernels\n";
  return 0;
}

}  // namespace trainsim::validate

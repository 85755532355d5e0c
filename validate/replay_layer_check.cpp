// trainsim-layer-replay CALIBRATION LAYER_TABLES: the layer check of `trainsim-validate layer`
// recomputed without a GPU: the measured columns of saved tables (validate/results/<gpu>-layer.txt)
// against today's cost model on the device built from the kernel calibration they were measured
// with. For checking a cost-model change against measurements already taken.
#include <fstream>
#include <iostream>

#include "core/error.hpp"
#include "layer_comparison.hpp"
#include "layer_table.hpp"

int main(int argc, char** argv) {
  using namespace trainsim;
  if (argc != 3) {
    std::cerr << "usage: trainsim-layer-replay CALIBRATION.json LAYER_TABLES.txt\n";
    return 2;
  }
  try {
    const auto calibration = model::load_kernel_calibration(argv[1]);
    const auto device = validate::validation_profile(calibration, validate::kLayerCheckGemmTile);
    std::ifstream in(argv[2]);
    if (!in) throw validate::UsageError(std::string("cannot read ") + argv[2]);
    for (const auto& run : validate::read_layer_tables(in, argv[2])) {
      const auto ops = validate::layer_pass_ops(run.layer.spec, run.layer.micro_batch);
      std::cout << run.layer.spec.name << ": micro-batch " << run.layer.micro_batch
                << ", measured columns of " << argv[2] << ", predicted from " << argv[1] << "\n";
      const auto c = validate::compare_layer(run.measured, run.measured_total, ops, device);
      validate::print_layer_comparison(std::cout, c);
      validate::print_layer_verdict(std::cout, c);
    }
  } catch (const ConfigError& e) {
    std::cerr << e.what() << "\n";
    return 1;
  } catch (const validate::UsageError& e) {
    std::cerr << e.what() << "\n";
    return 2;
  }
  return 0;
}

#pragma once
// Command line of trainsim-validate, parsed without touching a GPU so it is tested in CI:
//   trainsim-validate kernels --out FILE [--quick] [--device N]
//   trainsim-validate nccl --out FILE [--min-bytes B] [--max-bytes B] [--iters N] [--warmup N]
//                          [--topology STEM]
//   trainsim-validate layer (--model NAME | --hidden H --heads A --seq S) [--micro-batch B]
//                           [--calibration FILE] [--device N] [--iters N]
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/transformer.hpp"

namespace trainsim::validate {

/// Bad command-line usage: main prints it with the usage text and exits 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

extern const char* const kUsage;

struct KernelsOptions {
  std::string out;     ///< calibration file to write
  bool quick = false;  ///< a few shapes only: a smoke test, not a calibration
  int device = 0;      ///< CUDA device index
};

struct NcclOptions {
  std::string out;                               ///< measurement file to write
  std::size_t min_bytes = 1024;                  ///< smallest S (bus_bandwidth.hpp), bytes
  std::size_t max_bytes = std::size_t{1} << 30;  ///< largest S; sizes double from min to max
  int iters = 20;                                ///< timed calls per size
  int warmup = 5;                                ///< untimed calls per size first
  std::string topology;                          ///< optional topology file stem for the file
};

struct LayerOptions {
  model::TransformerSpec spec;  ///< one layer (layers = 1)
  long micro_batch = 0;
  std::string calibration;  ///< kernel calibration file; empty = run the sweep first
  int device = 0;
  int iters = 10;  ///< timed forward+backward passes (after warm-up)
};

[[nodiscard]] KernelsOptions parse_kernels_options(const std::vector<std::string>& args);
[[nodiscard]] NcclOptions parse_nccl_options(const std::vector<std::string>& args);
[[nodiscard]] LayerOptions parse_layer_options(const std::vector<std::string>& args);

}  // namespace trainsim::validate

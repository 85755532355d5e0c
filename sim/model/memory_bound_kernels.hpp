#pragma once
// Measured memory-bound kernels of one training framework on one accelerator (layer norm,
// softmax, dropout, their backwards, fused AdamW, ...): what the kernels a training job really
// runs stream at, per kernel class. Named by a device profile's "memory_bound_kernels" entry;
// written from measurements by a script in validate/ (validate/make_memory_bound_kernels.py).
//
// File format (schema "trainsim.memory_bound_kernels/1"):
//   { "schema": "trainsim.memory_bound_kernels/1",
//     "description": "...",                               // optional
//     "provenance": { "method": "measured"|"published", "source": "...", "date": "YYYY-MM-DD",
//                     "framework": "torch 2.11.0+cu130",
//                     optional: "gpu", "sm_count", "driver", "cuda", "note" },
//     "kernels": [ {"name": "layer_norm", "bytes": 268435456, "time_us": 117.65,
//                   "note": "optional"}, ... ] }            // bytes: reads + writes of one call
// A kernel's streaming rate is bytes / time; names are the kernel classes of
// model::Operation::kernel and appear once each.
#include <string>
#include <vector>

#include "model/kernel_calibration.hpp"

namespace trainsim::model {

struct MemoryBoundKernels {
  std::string file;
  CalibrationProvenance provenance;  ///< `cublas` unused
  std::string framework;             ///< the framework and version whose kernels were timed
  std::vector<ElementwiseSample> kernels;
};

/// Loads and validates a memory-bound kernel file; ConfigError (file, JSON path) on bad input.
[[nodiscard]] MemoryBoundKernels load_memory_bound_kernels(const std::string& path);

}  // namespace trainsim::model

#pragma once
// Reading back what `trainsim-validate layer` printed (validate/results/<gpu>-layer.txt): per model,
// the measured time of each kernel and of the whole pass, so that the prediction side can be
// recomputed on any machine (trainsim-layer-replay) after the cost model changes, without a GPU.
// Predicted columns and error marks in the file are ignored: they are what is recomputed.
#include <istream>
#include <string>
#include <utility>
#include <vector>

#include "core/units.hpp"
#include "arguments.hpp"

namespace trainsim::validate {

struct SavedLayerRun {
  LayerOptions layer;  ///< the model and micro-batch of the header line
  std::vector<std::pair<std::string, Seconds>> measured;  ///< kernel name, seconds per call
  Seconds measured_total = 0;                             ///< the whole pass
};

/// Every table in `in`, in order. Throws UsageError naming `source` and the line on a header,
/// row or total it cannot read, or a table without a total.
[[nodiscard]] std::vector<SavedLayerRun> read_layer_tables(std::istream& in, const std::string& source);

}  // namespace trainsim::validate

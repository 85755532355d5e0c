#include "model/fp8_amax_reduction.hpp"

namespace trainsim::model {

namespace {

double amaxes(long rank_layers, bool forward) {
  return static_cast<double>(rank_layers) * (forward ? kTeForwardAmaxesPerLayer : kTeBackwardAmaxesPerLayer);
}

}  // namespace

Bytes te_amax_buffer_bytes(long rank_layers, bool forward) { return 4.0 * amaxes(rank_layers, forward); }

Operation te_amax_concat_op(long rank_layers, bool forward) {
  // Read every module's row, write the contiguous buffer.
  return make_elementwise("fp8 amax concat", 2.0 * te_amax_buffer_bytes(rank_layers, forward));
}

Operation te_amax_update_op(long rank_layers, bool forward) {
  // Reads the reduced amax and the old scale; writes the history row, the scale and its inverse.
  return make_elementwise("fp8 amax and scale update", 5.0 * te_amax_buffer_bytes(rank_layers, forward));
}

}  // namespace trainsim::model

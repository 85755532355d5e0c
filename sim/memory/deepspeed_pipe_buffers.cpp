#include "memory/deepspeed_pipe_buffers.hpp"

#include <algorithm>

namespace trainsim::memory {

DeepSpeedPipeBuffers deepspeed_pipe_buffers(const model::TransformerSpec& s, const plan::TrainingPlan& p, long stage) {
  DeepSpeedPipeBuffers b;
  if (p.pipeline_engine != plan::PipelineEngine::deepspeed || p.pp == 1) return b;
  const bool first = stage == 0, last = stage == p.pp - 1;
  const bool partitioned = p.tp > 1;
  const double tokens = static_cast<double>(p.micro_batch * s.seq_len);
  // The stage's output: the bf16 hidden states, b x s x h.
  const Bytes output = 2.0 * tokens * static_cast<double>(s.hidden);
  // What crosses a stage boundary and is kept: this TP rank's slice, or the whole output.
  const Bytes kept = partitioned ? output / static_cast<double>(p.tp) : output;
  const std::string kept_what = partitioned ? "1/" + std::to_string(p.tp) + " slice" : "whole";
  const Bytes causal_mask = static_cast<double>(s.seq_len * s.seq_len);  // bool
  const double buffers =
      std::max(2.0, std::min(static_cast<double>(p.pp - stage + 1), static_cast<double>(p.accumulation)));

  if (!last) {
    b.per_micro_batch = kept;
    b.per_micro_batch_how = "the stage output's " + kept_what + " in pipe_buffers['outputs'] " + format_bytes(kept);
    if (partitioned) {
      b.backward = 2 * output;
      b.backward_how = "the output restored whole and its gradient made whole: 2 x " + format_bytes(output);
    }
  }
  b.resident = causal_mask;
  b.resident_how = "args.attn_mask " + format_bytes(causal_mask);
  if (!last) {
    b.resident += kept;
    b.resident_how += " + grad_layer " + format_bytes(kept);
  }
  if (!first) {
    b.resident += kept;
    b.resident_how += " + pipe_recv_buf " + format_bytes(kept);
  }
  if (first) {
    const Bytes inputs = 2 * 8.0 * tokens + causal_mask;
    b.resident += buffers * inputs;
    b.resident_how += " + " + std::to_string(static_cast<long>(buffers)) +
                      " pipe buffers x loaded (tokens, position ids, mask) " + format_bytes(inputs);
  }
  if (last) {
    const Bytes labels = (8.0 + 4.0) * tokens;
    b.resident += buffers * labels;
    b.resident_how += " + " + std::to_string(static_cast<long>(buffers)) +
                      " pipe buffers x (labels, loss mask) " + format_bytes(labels);
  }
  return b;
}

}  // namespace trainsim::memory

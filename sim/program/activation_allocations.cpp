#include "program/activation_allocations.hpp"

#include <algorithm>

#include "model/composer_metrics.hpp"

namespace trainsim::program {

namespace {

/// Appends one pass's requests and keeps its totals.
class PassBuilder {
 public:
  int transient(Bytes bytes) {
    const int slot = next_slot_++;
    out_.sequence.steps.push_back({AllocationStep::transient, bytes, slot});
    live_ += bytes;
    out_.workspace = std::max(out_.workspace, live_);
    sizes_.push_back(bytes);
    return slot;
  }
  void free(int slot) {
    out_.sequence.steps.push_back({AllocationStep::free_transient, 0, slot});
    live_ -= sizes_[static_cast<std::size_t>(slot)];
  }
  void keep(Bytes bytes) {
    if (bytes <= 0) return;
    out_.sequence.steps.push_back({AllocationStep::keep, bytes, -1});
    out_.kept += bytes;
  }
  void free_kept(Bytes bytes) {
    if (bytes <= 0) return;
    out_.sequence.steps.push_back({AllocationStep::free_kept, bytes, -1});
    out_.release += bytes;
  }
  void task_alloc() { out_.sequence.steps.push_back({AllocationStep::task_alloc, 0, -1}); }
  [[nodiscard]] PassAllocations done() const { return out_; }

 private:
  PassAllocations out_;
  std::vector<Bytes> sizes_;
  Bytes live_ = 0;
  int next_slot_ = 0;
};

}  // namespace

Bytes ActivationAllocations::per_micro_batch(long layers) const {
  return embedding_forward.kept + static_cast<double>(layers - 1) * layer_forward.kept +
         last_layer_forward.kept + head_forward.kept;
}

ActivationAllocations activation_allocations(const model::TransformerSpec& s,
                                             const model::LayerShape& shape, bool checkpointing,
                                             const std::vector<Bytes>& loss_gradients) {
  const auto layer = model::layer_stored_activations(s, shape);
  const auto embedding = model::embedding_stored_activations(s, shape);
  const auto head = model::head_stored_activations(s, shape);
  const Bytes input = model::layer_input_bytes(s, shape);
  Bytes largest = 0;
  for (const auto& t : layer) largest = std::max(largest, t.bytes);

  ActivationAllocations a;
  {
    // The embedding's saved tensors; under checkpointing also its output, the first layer's
    // input, which that layer's checkpoint keeps.
    PassBuilder b;
    for (const auto& t : embedding) b.keep(t.bytes);
    if (checkpointing) b.keep(input);
    a.embedding_forward = b.done();
  }
  auto layer_forward = [&](bool keeps_output) {
    PassBuilder b;
    if (!checkpointing) {
      for (const auto& t : layer) b.keep(t.bytes);
      return b.done();
    }
    // The forward computes every tensor and saves none; its output is the next layer's input
    // (the last layer's is the head's final-norm input, which the head keeps).
    std::vector<int> slots;
    for (const auto& t : layer)
      if (t.bytes > 0) slots.push_back(b.transient(t.bytes));
    if (keeps_output) b.keep(input);
    for (auto it = slots.rbegin(); it != slots.rend(); ++it) b.free(*it);
    return b.done();
  };
  a.layer_forward = layer_forward(true);
  a.last_layer_forward = layer_forward(false);
  {
    PassBuilder b;
    for (const auto& t : head) b.keep(t.bytes);
    a.head_forward = b.done();
  }
  {
    // Recomputed tensors (checkpointing), then the gradients flowing in and out, then the
    // parameters' gradient; the saved tensors die in the reverse order of the forward.
    PassBuilder b;
    std::vector<int> recomputed;
    if (checkpointing)
      for (const auto& t : layer)
        if (t.bytes > 0) recomputed.push_back(b.transient(t.bytes));
    const int grad_in = b.transient(largest);
    const int grad_out = b.transient(largest);
    b.task_alloc();
    if (checkpointing) {
      for (auto it = recomputed.rbegin(); it != recomputed.rend(); ++it) b.free(*it);
    } else {
      for (auto it = layer.rbegin(); it != layer.rend(); ++it) b.free_kept(it->bytes);
    }
    b.free(grad_out);
    b.free(grad_in);
    if (checkpointing) b.free_kept(input);  // the checkpoint's saved input
    a.layer_backward = b.done();
  }
  {
    PassBuilder b;
    std::vector<int> grads;
    for (Bytes g : loss_gradients)
      if (g > 0) grads.push_back(b.transient(g));
    const int projection_input = b.transient(input);
    const int norm_input = b.transient(input);
    b.task_alloc();
    for (auto it = head.rbegin(); it != head.rend(); ++it) b.free_kept(it->bytes);
    for (auto it = grads.rbegin(); it != grads.rend(); ++it) b.free(*it);
    b.free(projection_input);
    b.free(norm_input);
    a.head_backward = b.done();
  }
  {
    PassBuilder b;
    const int output_grad = b.transient(input);
    b.task_alloc();
    for (auto it = embedding.rbegin(); it != embedding.rend(); ++it) b.free_kept(it->bytes);
    b.free(output_grad);
    a.embedding_backward = b.done();
  }
  return a;
}

PassAllocations composer_metric_allocations(double tokens, double vocab, int metrics, bool autocast) {
  const model::ComposerMetricTensors t = model::composer_train_metric_tensors(tokens, vocab, autocast);
  PassBuilder b;
  for (int m = 0; m < metrics; ++m) {
    const int log_probs = b.transient(t.log_probabilities);
    if (autocast) b.free(b.transient(t.fp32_cast));
    b.free(log_probs);
  }
  return b.done();
}

}  // namespace trainsim::program

#pragma once
// The tensors a sharded (FSDP / ZeRO-3) schedule's passes ask the caching allocator for, one
// request per tensor: the saved tensors of model/transformer.hpp's lists (layer, embedding,
// head), in forward order, kept from a forward to its backward; and under full activation
// checkpointing (PyTorch's non-reentrant checkpoint, as llm-foundry's checkpoint_wrapper per
// block) the layer's input kept, its forward's tensors transient, and its backward's recompute
// allocating them again until the backward has consumed them.
//
// The totals are the memory model's (memory/rank_memory.hpp), split: the kept tensors of a
// micro-batch add up to its `activations`, a layer backward's transient peak is its
// `activation_workspace` (recomputed layer + the gradients of the largest tensor in and out, the
// model's two lumped gradient buffers). The head's backward holds the loss's gradient tensors
// and two gradients of its input (the projection's and the final norm's), the embedding's one
// (its output's): the memory model's workspace is the largest pass's, and the old lumped task
// gave every backward that largest one (the logits' gradient held through every layer's backward).
// Assumed (not read in PyTorch): the order of the frees inside a pass (each saved tensor dies
// once the backward has passed the op that saved it: reverse order of the forward), and that a
// checkpointed forward holds all of its layer's tensors at once before its output is kept (an
// upper bound: eager code frees each intermediate when its last use is done).
#include <vector>

#include "model/transformer.hpp"
#include "program/allocation_sequence.hpp"

namespace trainsim::program {

/// One pass's requests and the totals its task carries (Task::alloc, workspace, release).
struct PassAllocations {
  AllocationSequence sequence;
  Bytes kept = 0;       ///< allocated and kept past the pass (its forward's saved tensors)
  Bytes workspace = 0;  ///< transient peak
  Bytes release = 0;    ///< kept tensors of earlier passes it frees
};

/// The passes of one micro-batch of a sharded schedule's units.
struct ActivationAllocations {
  PassAllocations embedding_forward, layer_forward, last_layer_forward, head_forward;
  /// Backward passes: their sequences place the task's own allocation (its parameters'
  /// gradient) after the recomputed tensors and the gradient buffers, at the pass's peak.
  PassAllocations layer_backward, head_backward, embedding_backward;
  /// The micro-batch's kept tensors: the memory model's activations of one micro-batch.
  [[nodiscard]] Bytes per_micro_batch(long layers) const;
};

/// The requests, tensor by tensor. `checkpointing`: full activation checkpointing of every layer
/// (nothing else: selective policies, offloading and TP's separate recompute tasks keep their
/// lumps). `loss_gradients`: the tensors the loss's backward allocates, in order (the memory
/// model's logits gradient: fp32 and its bf16 cast for PyTorch's loss, bf16 for a fused loss
/// that does not write over the logits, none for one that does).
[[nodiscard]] ActivationAllocations activation_allocations(
    const model::TransformerSpec& s, const model::LayerShape& shape, bool checkpointing,
    const std::vector<Bytes>& loss_gradients);

/// Composer's train-metric updates after a micro-batch's backward (model/composer_metrics.hpp),
/// one after another: each the bf16 log-probabilities (2 B x tokens x vocab), then under
/// `autocast` nll_loss's fp32 cast of them (4 B), both freed when the update returns.
[[nodiscard]] PassAllocations composer_metric_allocations(double tokens, double vocab, int metrics,
                                                          bool autocast = true);

}  // namespace trainsim::program

#pragma once
// Activation checkpointing of one transformer layer as a policy: which tensors the forward keeps
// for the backward, and which forward operations the backward runs again first.
//
//  - none: every tensor the backward reads is kept (layer_stored_activations); nothing re-runs.
//  - full: only the layer input is kept; the backward re-runs the whole forward (Chen et al.
//    2016; PyTorch checkpoint_wrapper around each block, Megatron-LM's "full").
//  - selective_op: PyTorch's selective activation checkpointing with torchtitan's op policy
//    (torchtitan/models/llama/parallelize_llama.py, `_save_list` and `_custom_policy`, as of
//    March 2025): inside the checkpointed block the outputs of the attention kernel and of every
//    other matmul (the 1st, 3rd, 5th, ... that the block issues) are saved; on the backward the
//    block's forward re-runs and every other operation is computed again. The matmuls are
//    counted as torchtitan's Llama issues them: separate q, k, v, output projections, then
//    gate (w1), up (w3) and down (w2) for SwiGLU, or in and out for a GELU MLP. So Llama saves
//    q, v, gate and down and recomputes k, the output projection and up, plus the norms,
//    activations and residual adds. The attention kernel must be fused (SDPA's flash kernel is
//    what the policy saves). Under tensor parallelism with sequence-parallel norms (torchtitan's
//    DTensor plan) the policy saves the reduce-scatter outputs too and recomputes the
//    all-gathers; without sequence parallelism the all-reduces are recomputed (not saved). On
//    one TP rank the matmuls are its column / row slices.
//  - selective_attention: Megatron-LM's selective recomputation (Korthikanti et al. 2022,
//    section 5; `--recompute-granularity selective`, 2022's `--checkpoint-granularity selective`:
//    megatron/model/transformer.py ParallelAttention wraps CoreAttention in
//    tensor_parallel.checkpoint when checkpoint_core_attention). Everything the layer stores
//    without checkpointing is kept except what lives inside the unfused core attention: the
//    softmax output, the dropout mask and the dropout output (the paper's 5as^2b), so a layer
//    keeps sbh(10 + 24/t) bytes, 34sbh/t under sequence parallelism. Q, K and V are the
//    checkpoint's inputs and are kept anyway (QK^T and softmax x V read them). On the backward
//    the core attention's forward (QK^T, scale + mask + softmax, dropout, softmax x V, the
//    context's layout copy) runs again first. Unfused attention only: a fused kernel stores no
//    scores to drop.
#include <vector>

#include "model/operation.hpp"
#include "model/transformer.hpp"

namespace trainsim::model {

enum class Checkpointing { none, full, selective_op, selective_attention };

/// What one layer keeps for its backward under the policy, on one rank.
[[nodiscard]] std::vector<StoredTensor> checkpointed_layer_activations(const TransformerSpec& s,
                                                                       const LayerShape& shape,
                                                                       Checkpointing policy);
/// The forward operations the backward of one layer runs again before its own (empty: none).
[[nodiscard]] std::vector<Operation> recomputed_forward_ops(const TransformerSpec& s, const LayerShape& shape,
                                                            Checkpointing policy);

}  // namespace trainsim::model

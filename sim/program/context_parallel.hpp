#pragma once
// Context parallelism as Megatron-core (core_r0.10.0) runs it with Transformer Engine 1.13's
// ring attention (cp_comm_type "p2p", the default; transformer_engine/pytorch/attention.py
// AttnFuncWithCPAndKVP2P):
//  - Ranks in Megatron's order tensor, context, data, pipeline (parallel_state.py
//    RankGenerator "tp-cp-ep-dp-pp"): a CP group is cp ranks tp apart, so with TP x CP <= 8 it
//    stays inside an NVLink node.
//  - Each rank holds 1/cp of every sequence as two chunks of the 2 x cp the sequence is cut into,
//    i and 2cp-1-i (Megatron's get_batch_on_this_cp_rank), so that under a causal mask every rank
//    does the same attention work. Everything but the attention runs on those tokens alone: a CP
//    rank is a data-parallel rank of the model at seq/cp (context_parallel_rank_view).
//  - The attention runs in cp steps around the CP ring. Step 0 is the rank's own chunks against
//    its own K and V: causal attention at seq/cp. At step i > 0 the K and V of the rank i places
//    back have arrived and only half of the pair attends: both query chunks to the first KV chunk,
//    or the second query chunk to both KV chunks, unmasked, either way q x kv = (seq/cp) x
//    (seq/2cp). Each step first issues the send/recv of the KV it holds to the next rank, then
//    computes, so the transfer hides behind the step's attention (the flows contend in SimGrid).
//    Each step's partial output is merged into the result by a correction kernel.
//  - Backward goes around the ring again: K and V travel as in forward, with the dK, dV of the
//    block they just met, accumulated on the way (step 0 sends KV, steps 1..cp-2 KV and dKV, the
//    last dKV alone, back to its owner), each step's transfer issued once the previous step's
//    gradient is added in. The layer's backward goes on once its own dK, dV are home.
//  - Gradients are reduced, and the distributed optimizer sharded, over the data- x
//    context-parallel group (plan::context_parallel_rank_layout).
// Not modelled: TE's second CUDA stream for consecutive steps' attention kernels (wave
// quantisation), FP8 attention, the all-gather and all-to-all cp_comm_types.
#include <string>
#include <vector>

#include "model/operation.hpp"
#include "model/transformer.hpp"
#include "program/schedule_inputs.hpp"

namespace trainsim::program {

/// The job as a rank of a CP group sees it: the model at seq/cp tokens, the CP ranks counted
/// into the data-parallel group (what reduces gradients and shards the optimizer), the memory as
/// given. Identity when cp = 1. samples_per_step of a program built from it counts every CP
/// rank's share of a sequence as a sequence: divide by cp.
[[nodiscard]] ScheduleInputs context_parallel_rank_view(const ScheduleInputs& in);

/// One layer pass (forward or backward) with its fused attention as ring steps.
struct RingAttentionPass {
  std::vector<model::Operation> before;  ///< the pass's ops up to its attention
  /// Per ring step, what the rank computes on the KV it holds: the attention block (step 0 the
  /// causal diagonal one, then unmasked half blocks) and merging it into the result.
  std::vector<std::vector<model::Operation>> steps;
  /// Bytes each CP rank sends to its neighbour at step i (0: no transfer), issued as step i
  /// starts: forward K and V for the next step; backward K and V, and dK and dV.
  std::vector<Bytes> ring_bytes;
  /// Backward: a step's transfer carries the dK, dV the previous step added in, so it waits
  /// for that step, and the pass goes on only once the last transfer is home.
  bool transfer_after_previous_step = false;
  std::vector<model::Operation> after;  ///< the pass's ops after its attention
};

/// Whether `ops` hold a fused attention (forward or backward) op.
[[nodiscard]] bool has_fused_attention(const std::vector<model::Operation>& ops);

/// `ops` (a layer pass of the rank's view, in order) cut around their fused attention op into a
/// ring pass of `cp` steps. `rank_model` and `shape`: the view's model (seq/cp tokens) and the
/// layer shape the ops were made with. Throws InvariantError when `ops` have no fused attention.
[[nodiscard]] RingAttentionPass ring_attention_pass(const std::vector<model::Operation>& ops,
                                                   const model::TransformerSpec& rank_model,
                                                   const model::LayerShape& shape, long cp, bool forward);

/// Names of the tasks a ring pass becomes, in the order the schedule pushes them: the part
/// before (if any), per step its transfer (if any) then its attention, the part after (if any).
[[nodiscard]] std::vector<std::string> ring_pass_labels(const RingAttentionPass& pass);

}  // namespace trainsim::program

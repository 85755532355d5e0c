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
//    back have arrived and only half of the pair attends, unmasked: ranks r >= i attend with both
//    query chunks to the first KV chunk (q x kv = seq/cp x seq/2cp), ranks r < i with the second
//    query chunk to both (seq/2cp x seq/cp). Each step first issues the send/recv of the KV it
//    holds to the next rank, then computes, so the transfer hides behind the step's attention
//    (the flows contend in SimGrid). Backward runs the half steps first and the causal one last
//    (ranks r >= cp-1-i on half the KV, the others with half the queries).
//  - What a step costs besides its attention call, as TE runs it in Megatron's sbhd layout
//    (where the half-sequence slices q[1], kv[0], out[1], dout[1] are contiguous views, so
//    their .contiguous() copies nothing): forward, K and V packed into the first send buffer
//    (torch.cat), the output zeroed and the log-sum-exp cloned to fp64 once, per step a fused
//    log-sum-exp correction, at the end the log-sum-exp back to fp32 and per step a fused output
//    correction (flash_attn_fwd_out_correction, torch.compile'd); backward, the KV copied into
//    the send buffer and the second half of the log-sum-exp made contiguous once, per step dQ
//    copied or added into its bf16 buffer, dK and dV concatenated (torch.cat) and copied or
//    added into the buffer that travels on (first contribution a copy, later ones an add, as
//    TE's rank-by-rank cases have it).
//  - The ranks of a CP group run different shapes at the same step, and the ring ties them to
//    each other every layer (a rank's next KV or its own dK, dV come from its neighbour), so the
//    group runs at its slowest rank's pace: the program takes the slowest rank's steps.
//  - Backward goes around the ring again: K and V travel as in forward, with the dK, dV of the
//    block they just met, accumulated on the way (step 0 sends KV, steps 1..cp-2 KV and dKV, the
//    last dKV alone, back to its owner), each step's transfer issued once the previous step's
//    gradient is added in. The layer's backward goes on once its own dK, dV are home.
//  - Gradients are reduced, and the distributed optimizer sharded, over the data- x
//    context-parallel group (plan::context_parallel_rank_layout).
//  - Full recompute checkpoints whole layers, the attention inside them: a backward pass first
//    runs the forward's ring pass again (pipeline_schedule.cpp), its KV transfers included.
// Not modelled: TE's second CUDA stream for consecutive steps' attention kernels (wave
// quantisation), a backward step's dK, dV accumulation waiting for that step's transfer (hidden
// behind the step's attention in every row), FP8 attention, the all-gather and all-to-all
// cp_comm_types.
#include <cstddef>
#include <string>
#include <vector>

#include "model/device_profile.hpp"
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
  /// The pass's ops up to its attention, then the ring's set-up before the first transfer.
  std::vector<model::Operation> before;
  /// rank_steps[r][i]: what CP rank r computes at ring step i on the KV it holds: the attention
  /// block (forward: step 0 the causal diagonal one, then unmasked half blocks; backward the
  /// half blocks first) and the step's corrections, copies and accumulations.
  std::vector<std::vector<std::vector<model::Operation>>> rank_steps;
  /// Bytes each CP rank sends to its neighbour at step i (0: no transfer), issued as step i
  /// starts: forward K and V for the next step; backward K and V, and dK and dV.
  std::vector<Bytes> ring_bytes;
  /// Backward: a step's transfer carries the dK, dV the previous step added in, so it waits
  /// for that step, and the pass goes on only once the last transfer is home.
  bool transfer_after_previous_step = false;
  std::vector<model::Operation> after;  ///< the pass's ops after its attention
  /// cp_comm_type "a2a" (Ulysses: AttnFuncWithCPAndQKVOA2A): the all-to-alls over the CP group
  /// before the attention (forward Q, K, V; backward dO) and after it (forward O; backward dQ,
  /// dK, dV), each an all_to_all_single of the rank's tensor (nccl-tests S), one after another
  /// on the CP stream; then the pass is one step, ring_bytes {0}. Empty for the ring.
  std::vector<Bytes> a2a_before, a2a_after;
  /// cp_comm_type "all_gather" (AttnFuncWithCPAndKVAllGather, the Llama 3 paper's): K and V
  /// all-gathered over the CP group before the attention (nccl-tests S: cp x the rank's K, or V),
  /// exposed, and (backward) dK, dV reduce-scattered after it; then the pass is one step with
  /// one attention call per local chunk, ring_bytes {0}. Empty otherwise.
  std::vector<Bytes> gather_before, scatter_after;
};

/// Sizes of one CP rank's attention tensors: its seq/cp tokens, TP's share of the heads; K and V
/// at the model's KV heads, or (`repeated_kv`) at every query head, as a model that repeats its
/// KV heads before attention (torchtitan's repeat_kv) hands them over.
struct CpRankTensors {
  double b = 0, tokens = 0, heads = 0, kv_heads = 0, d = 0;
  Bytes q = 0;          ///< Q (as O, dO, dQ), bf16
  Bytes kv = 0;         ///< K and V together (as dK, dV), bf16
  double lse_rows = 0;  ///< one log-sum-exp per (sequence, head, query token)
};
[[nodiscard]] CpRankTensors cp_rank_tensors(const model::TransformerSpec& rank_model, const model::LayerShape& shape,
                                            bool repeated_kv);

/// One unmasked block of a ring step, `q_share` of the rank's query tokens on `kv_share` of its
/// key tokens (one of them a half), forward or its backward. m and n are the real lengths, so
/// the kernel's loop runs over its real length (model::attention_loop_length).
[[nodiscard]] model::Operation cp_half_block(const CpRankTensors& t, double q_share, double kv_share, bool forward);

/// Ring steps of a pass.
[[nodiscard]] std::size_t ring_steps(const RingAttentionPass& pass);

/// The CP rank whose ring steps together take longest on `dev` (the first of equals): the pace
/// of the whole group.
[[nodiscard]] std::size_t slowest_rank(const RingAttentionPass& pass, const model::DeviceProfile& dev);

/// Whether `ops` hold a fused attention (forward or backward) op.
[[nodiscard]] bool has_fused_attention(const std::vector<model::Operation>& ops);

/// `ops` (a layer pass of the rank's view, in order) cut around their fused attention op into a
/// ring pass of `cp` steps. `rank_model` and `shape`: the view's model (seq/cp tokens) and the
/// layer shape the ops were made with. Throws InvariantError when `ops` have no fused attention.
[[nodiscard]] RingAttentionPass ring_attention_pass(const std::vector<model::Operation>& ops,
                                                   const model::TransformerSpec& rank_model,
                                                   const model::LayerShape& shape, long cp, bool forward);

/// `ops` cut around their fused attention op for cp_comm_type "a2a": the attention over the
/// whole sequence on 1/cp of the heads (the heads and KV heads of a TP rank must divide by cp:
/// the reader), between all-to-alls that trade sequence shards for head shards and back, each
/// tensor laid out for the call and its chunks reordered after it (TE's
/// flash_attn_a2a_communicate: a contiguous copy before, a contiguous copy and an index_select
/// after, or the reverse around the second call).
[[nodiscard]] RingAttentionPass a2a_attention_pass(const std::vector<model::Operation>& ops,
                                                   const model::TransformerSpec& rank_model,
                                                   const model::LayerShape& shape, long cp, bool forward);

/// `ops` cut around their fused attention op for cp_comm_type "all_gather": every rank's K and
/// V gathered (then put in sequence order: index_select), each of the rank's two chunks of
/// queries attending to the keys up to its own end (chunk i: (i + 1) x s/2cp keys, the last
/// s/2cp of them under the causal mask), its output copied into place; backward the same
/// gathers, dK and dV summed into zeroed cp x K, V buffers and reduce-scattered after.
[[nodiscard]] RingAttentionPass all_gather_attention_pass(const std::vector<model::Operation>& ops,
                                                          const model::TransformerSpec& rank_model,
                                                          const model::LayerShape& shape, long cp, bool forward);

/// Names of the tasks a ring pass becomes, in the order the schedule pushes them: the part
/// before (if any), the all-to-alls or all-gathers before the attention, per step its transfer
/// (if any) then its attention, the all-to-alls or reduce-scatters after it, the part after.
[[nodiscard]] std::vector<std::string> ring_pass_labels(const RingAttentionPass& pass);

}  // namespace trainsim::program

#pragma once
// Context parallelism as torchtitan runs it: PyTorch's ring attention
// (torch.distributed.tensor.experimental._attention, pytorch/pytorch f2127dbd:
// _templated_ring_attention and _templated_ring_attention_backward under context_parallel(),
// with its defaults: round-robin load balance, results merged in fp32, K and V rotated by one
// all-gather per pass), inside FSDP2's sharded schedule (program/sharded_schedule.hpp).
//  - The placement is Megatron's (program/context_parallel.hpp): each rank holds chunks i and
//    2cp-1-i of every sequence, the CP group is cp ranks TP apart (torchtitan's mesh
//    [pp, dp_replicate, dp_shard, cp, tp]), FSDP shards over dp_shard x cp.
//  - K and V are the model's own SDPA inputs: torchtitan's Llama repeats its KV heads before
//    attention (repeat_kv), so they move at every query head; transposed views, so the pass
//    first makes them contiguous (two copies) and concatenates them into one send buffer.
//  - Forward, step 0: the rank's own chunks under the causal mask, its output widened to fp32
//    (the merger); the rotation starts then (allgather: one all-gather of every rank's K, V over
//    the CP group, waited for at step 1; alltoall: a permute to the next rank per step, each
//    step waiting for the one before). Step i > 0: (but the last) the received K, V
//    concatenated again for the rotation, the half block (i <= r: all queries on the first KV
//    chunk; else the second query chunk on both), and the merge in fp32 (out - sigmoid(lse_b -
//    lse) x (out - out_b), lse - logsigmoid(lse - lse_b): eight elementwise kernels; the
//    half-query steps then rebuild out and lse with a torch.cat). After the ring: out back to
//    bf16.
//  - Backward: fp32 zeros for dQ, dK, dV; the same steps in the same order (the causal block
//    first), each the K, V copy and the block's backward, then what needs the dK, dV that
//    travel: from step 1 on they arrive from the previous rank (an fp32 permute per step, on
//    the same communicator as the K, V rotation, so after it), this step's dK, dV are added in
//    (the half-KV steps into their first half, then a torch.cat), the fp32 sum concatenated and
//    sent on; dQ added (the half-query steps into its second half, then a torch.cat). After the
//    ring: dQ to bf16, then the dK, dV that came home to bf16.
//  - The ranks of a CP group run different shapes at a step and meet at every exchange: the
//    pass takes its slowest rank's steps (as program::slowest_rank).
// Not modelled: the all-to-all rotation's per-step torch.cat on the received buffer's view
// (counted as the same copy), FP8, the flex-attention path, selective checkpointing's save list
// under CP (the reader allows full recompute or none).
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "collective/collective_plan.hpp"
#include "model/device_profile.hpp"
#include "model/operation.hpp"
#include "model/transformer.hpp"
#include "plan/training_plan.hpp"
#include "program/program.hpp"

namespace trainsim::program {

/// One layer pass (forward or backward) with its SDPA as PyTorch's ring attention.
struct TorchRingPass {
  /// The pass's ops up to its attention, then the ring's set-up (contiguous K, V, the send
  /// buffer; backward also the fp32 gradient buffers).
  std::vector<model::Operation> before;
  /// allgather: nccl-tests S of the one all-gather of K, V over the CP group (cp x the rank's
  /// K, V), issued after `before`; steps 1.. wait for it. 0 under alltoall.
  Bytes gathered = 0;
  /// steps[i]: what the slowest rank computes at step i before it needs anything in flight
  /// beyond the K, V (forward: the whole step; backward: the K, V copy and the block's backward).
  std::vector<std::vector<model::Operation>> steps;
  /// Backward: what step i computes once the dK, dV of step i - 1 are in (their update, the fp32
  /// send buffer, dQ's update). Empty forward.
  std::vector<std::vector<model::Operation>> accumulations;
  /// alltoall: K, V each rank sends to the next at step i (issued once the K, V of step i are
  /// there; 0 at the last step). Empty under allgather.
  std::vector<Bytes> kv_bytes;
  /// Backward: the fp32 dK, dV each rank sends to the next after step i (the last returns
  /// them home); after the K, V rotation's call of the same step. Empty forward.
  std::vector<Bytes> dkv_bytes;
  std::vector<model::Operation>
      after;  ///< casts back to bf16, then the pass's ops after its attention
};

/// `ops` (a layer pass of the rank's view, seq/cp tokens) cut around their fused attention op.
/// Throws InvariantError when `ops` have no fused attention.
[[nodiscard]] TorchRingPass torch_ring_attention_pass(const std::vector<model::Operation>& ops,
                                                      const model::TransformerSpec& rank_model,
                                                      const model::LayerShape& shape, long cp,
                                                      bool forward, plan::CpRotateMethod rotate,
                                                      const model::DeviceProfile& dev);

/// Task names of a pass in push order: "<first>..<last>" of `before`, then per step its
/// all-gather or rotation (if any), "cp attention step i", (backward) "cp dkv step i" and its
/// send, then "<first>..<last>" of `after`.
[[nodiscard]] std::vector<std::string> torch_ring_pass_labels(const TorchRingPass& pass);

/// A piece of a pass run as one compute task: its time, memory-bound part and kernels.
struct RingPieceCost {
  Seconds duration = 0, memory = 0;
  int kernels = 0;
};
/// A pass's pieces costed on `dev`.
struct TorchRingCosts {
  RingPieceCost before, after;
  std::vector<RingPieceCost> steps, accumulations;
};
[[nodiscard]] TorchRingCosts torch_ring_costs(const TorchRingPass& pass,
                                              const model::DeviceProfile& dev);

/// Which compute piece of a pass a task is: `before`, step i, step i's accumulation, `after`.
enum class RingPiece { before, step, accumulation, after };
using RingComputePush =
    std::function<TaskRef(RingPiece piece, std::size_t step, std::vector<TaskRef> deps)>;
using RingCollectivePush =
    std::function<TaskRef(collective::Op op, Bytes size, std::vector<TaskRef> deps)>;

/// Pushes a pass's tasks in the order torch_ring_pass_labels names them, each through the
/// schedule's own builder (which names, costs and places it), with the ring's dependencies:
/// `before` after `deps`; the all-gather after `before`; a K, V rotation after the one before it
/// (the first after `before`); step i after the previous compute task and (i > 0) the gathered
/// or rotated K, V; (backward) step i's accumulation after it and the previous step's dK, dV
/// rotation, its own rotation after it; `after` after the last compute task and the last dK, dV
/// rotation. Returns the `after` task.
TaskRef push_torch_ring(const TorchRingPass& pass, std::vector<TaskRef> deps,
                        const RingComputePush& compute, const RingCollectivePush& collective);

}  // namespace trainsim::program

#pragma once
// Operation -> duration on a device: a roofline (the slower of arithmetic and memory traffic)
// with achieved efficiencies, tile quantization of GEMM outputs, and a per-kernel launch cost.
#include <vector>

#include "model/device_profile.hpp"
#include "model/operation.hpp"

namespace trainsim::model {

/// Fraction of the GEMM's tiles that do useful work: m*n / (ceil(m/T)T * ceil(n/T)T).
[[nodiscard]] double tile_utilisation(double m, double n, double tile);

/// Achieved FLOP/s of a GEMM: the device's measured curve for its dtype where there is one,
/// else peak x gemm_efficiency x tile utilisation.
[[nodiscard]] FlopsPerSecond gemm_rate(const Operation& op, const DeviceProfile& dev);

/// The length a fused attention kernel's inner loop runs over, which places a call on its
/// measured curve: the key length (op.n) forward, the query length (op.m) backward.
[[nodiscard]] double attention_loop_length(const Operation& op);

/// Achieved FLOP/s of a fused attention op: peak x the efficiency of the device's attention
/// kernel in use at the op's loop length (attention_loop_length), head dimension and masking,
/// else the GEMM rate of its QK^T shape.
[[nodiscard]] FlopsPerSecond fused_attention_rate(const Operation& op, const DeviceProfile& dev);
/// Seconds one operation takes on `dev`: the slower of its arithmetic and its memory traffic
/// (at the streaming rate of its kernel class, memory_bound_rate), plus the per-kernel launch cost (the calibration's measurement where there is one).
[[nodiscard]] Seconds op_duration(const Operation& op, const DeviceProfile& dev);
/// Sum of op_duration over a list (kernels of one stream run back to back).
[[nodiscard]] Seconds ops_duration(const std::vector<Operation>& ops, const DeviceProfile& dev);

/// The memory-bound part of a list of ops (<= ops_duration of the same ops): the time of the
/// elementwise ops whose memory traffic outlasts their arithmetic, at their kernel class's
/// streaming rate (memory_bound_rate), without launch costs. GEMMs
/// and fused attention count as compute-bound: their operands are reused from on-chip memory, so
/// they stream far below the device's rate (an H100 GEMM at 8192^3 moves its 0.4 GB of operands in 1.6 ms).
[[nodiscard]] Seconds ops_memory_bound(const std::vector<Operation>& ops, const DeviceProfile& dev);

/// The optimizer step over `params` parameters held by this rank (Adam-family, fp32 master
/// weights and two fp32 moments, bf16 working copy): a memory-bound sweep.
[[nodiscard]] Operation optimizer_step_op(double params);
/// PyTorch's foreach AdamW (torch.optim.AdamW(foreach=True), _multi_tensor_adamw, fp32 states,
/// weight decay on, not capturable) over `params` parameters: the eight multi-tensor passes it
/// launches, in order, 80 B per parameter where the fused kernel moves 28.
[[nodiscard]] std::vector<Operation> torch_foreach_adamw_ops(double params);
/// torch.nn.utils.clip_grad_norm_(foreach=True) over `params` fp32 gradients: the foreach norm
/// (get_total_norm) and the scale by min(1, max_norm / norm) (clip_grads_with_norm_), which runs
/// every step whatever the norm. Between the two, a sharded model all-reduces the norm (one
/// scalar; the schedule's part).
[[nodiscard]] std::vector<Operation> torch_clip_grad_norm_ops(double params);
/// A torch training step's passes over `params` parameters: clip_grad_norm_'s where `clip`, then
/// the foreach AdamW's where `foreach`, else the fused optimizer_step_op.
[[nodiscard]] std::vector<Operation> torch_step_ops(double params, bool clip, bool foreach);
/// Megatron-LM 2021's fp16 optimizer step (megatron/optimizer/optimizer.py
/// Float16OptimizerWithFloat16Params.step with apex FusedAdam) over `params` parameters, as the
/// memory-bound passes it launches, in order: fp16 -> fp32 gradient copy, unscale and inf check,
/// L2 norm, Adam, fp32 -> fp16 parameter copy. Between the second and third, and after the
/// third, it all-reduces one scalar over the model-parallel group (the schedule's part).
[[nodiscard]] std::vector<Operation> megatron_fp16_optimizer_ops(double params);
/// Megatron-LM's local DDP around its after-flush all-reduce (megatron/model/distributed.py
/// allreduce_gradients at 6985e58 and 2e90a342) over `params` gradients of `gradient_bytes` each,
/// in order: what runs before the all-reduce, then what runs after it (empty where nothing does).
/// Without contiguous buffers (fp16, 2021's default flags) the gradients are flattened into one
/// new tensor, divided by the data-parallel size, all-reduced and copied back tensor by tensor;
/// with its contiguous main_grad buffer (fp32, forced by --bf16) only the divide runs, in place.
[[nodiscard]] std::vector<Operation> megatron_local_ddp_ops(double params, double gradient_bytes,
                                                            bool contiguous_buffer);
/// Adding a micro-batch's bf16 gradients into the fp32 accumulation buffer.
[[nodiscard]] Operation gradient_accumulation_op(double params);
/// PyTorch's AccumulateGrad adding a new gradient into an existing .grad in place
/// (torch/csrc/autograd/functions/accumulate_grad.h: variable_grad += new_grad), elements of
/// `gradient_bytes` each.
[[nodiscard]] Operation autograd_gradient_accumulation_op(double params, double gradient_bytes);
/// FSDP2's unsharded gradient accumulation without gradient sync (a pipeline stage's micro-batches,
/// torch/distributed/fsdp/_fully_shard/_fsdp_param.py): the first backward's bf16 gradient cast to
/// the fp32 reduce dtype (to_accumulated_grad_if_needed: 2 + 4 B per parameter), each later one
/// added into it (accumulate_unsharded_grad_if_needed, fp32 += bf16: 4 + 2 + 4 B).
[[nodiscard]] Operation fsdp2_unsharded_grad_accumulation_op(double params, bool first);
/// DeepSpeed's BF16_Optimizer.update_hp_grads after each micro-batch's backward under its
/// pipeline engine: each bf16 gradient cast to an fp32 temporary, then added to the fp32 one.
[[nodiscard]] Operation deepspeed_bf16_grad_accumulation_op(double params);
/// DeepSpeed's BF16_Optimizer.step: the L2 norm of the fp32 gradients (every gradient the rank
/// holds, not its 1/dp shard).
[[nodiscard]] Operation deepspeed_bf16_gradient_norm_op(double params);
/// DeepSpeed's allreduce_bucket around the data-parallel all-reduce of the BF16_Optimizer's fp32
/// gradients (`params` of them, `wire_bytes` each on the wire). Before it: the cast to the wire
/// dtype (only when the wire is not fp32).
[[nodiscard]] Operation deepspeed_allreduce_bucket_cast_op(double params, double wire_bytes);
/// After it: the 1/dp scale of the reduced wire copy and its copy back into the fp32 gradients
/// (with an fp32 wire the scale only, in place).
[[nodiscard]] Operation deepspeed_allreduce_bucket_finish_op(double params, double wire_bytes);
/// BF16_Optimizer.clear_hp_grads at the end of its step: the fp32 gradients zeroed (all of the
/// rank's, not its 1/dp shard).
[[nodiscard]] Operation deepspeed_clear_hp_grads_op(double params);

}  // namespace trainsim::model

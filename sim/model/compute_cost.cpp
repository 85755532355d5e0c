#include "model/compute_cost.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.hpp"

namespace trainsim::model {

double tile_utilisation(double m, double n, double tile) {
  if (tile <= 0 || m <= 0 || n <= 0) return 1.0;
  const double pm = std::ceil(m / tile) * tile;
  const double pn = std::ceil(n / tile) * tile;
  return (m * n) / (pm * pn);
}

FlopsPerSecond gemm_rate(const Operation& op, const DeviceProfile& dev) {
  if (const auto* curve = gemm_curve(dev, op.dtype, op.accumulation))
    return curve->achieved(op.m, op.n, op.k, op.batch) * dev.sustained_compute;
  // No peak x efficiency guess for FP8: a device without measured FP8 GEMMs may have no FP8
  // tensor cores at all (scenario loading rejects such a pairing with a ConfigError first).
  TRAINSIM_CHECK(op.dtype != Dtype::fp8, "an FP8 GEMM needs the device's measured fp8 GEMM samples (" + dev.file + ")");
  const FlopsPerSecond peak = op.dtype == Dtype::fp32 ? dev.peak_fp32 : dev.peak_bf16;
  return peak * dev.gemm_efficiency * tile_utilisation(op.m, op.n, dev.gemm_tile) * dev.sustained_compute;
}

double attention_loop_length(const Operation& op) {
  // FlashAttention-2 (Dao 2023, section 3.2): the forward gives each thread block a block of
  // query rows and loops over the key/value blocks; the backward gives each a key/value block
  // and loops over the query blocks. The measured curves keep the tokens per call, and so the
  // thread blocks, about constant (16k per call), so what moves along a curve is that loop's
  // length. A square call (m = n, every op but context parallelism's ring steps) reads the same.
  const bool backward = op.kind == OpKind::fused_attention_backward;
  const double loop = backward ? op.m : op.n;
  return loop > 0 ? loop : op.m;
}

FlopsPerSecond fused_attention_rate(const Operation& op, const DeviceProfile& dev) {
  if (const auto* kernel = active_attention_kernel(dev)) {
    const bool backward = op.kind == OpKind::fused_attention_backward;
    const double eff = attention_efficiency(*kernel, op.causal, op.k, attention_loop_length(op), backward);
    if (eff > 0) return dev.peak_bf16 * eff;
  }
  Operation qk = op;
  qk.kind = OpKind::gemm;
  return gemm_rate(qk, dev);
}

Seconds op_duration(const Operation& op, const DeviceProfile& dev) {
  const Seconds memory = op.bytes / memory_bound_rate(dev, op.kernel);
  Seconds arithmetic = 0;
  if (op.kind == OpKind::gemm) {
    arithmetic = op.flops / gemm_rate(op, dev);
  } else if (op.kind == OpKind::fused_attention || op.kind == OpKind::fused_attention_backward) {
    arithmetic = op.flops / fused_attention_rate(op, dev);
  } else {
    arithmetic = op.flops / dev.peak_fp32;
  }
  const Seconds launch =
      dev.kernels && dev.kernels->launch_overhead ? *dev.kernels->launch_overhead : dev.launch_overhead;
  return std::max(arithmetic, memory) + launch;
}

Seconds ops_duration(const std::vector<Operation>& ops, const DeviceProfile& dev) {
  Seconds total = 0;
  for (const auto& op : ops) total += op_duration(op, dev);
  return total;
}

Seconds ops_memory_bound(const std::vector<Operation>& ops, const DeviceProfile& dev) {
  Seconds total = 0;
  for (const auto& op : ops) {
    if (op.kind != OpKind::elementwise || op.bytes <= 0) continue;
    const Seconds memory = op.bytes / memory_bound_rate(dev, op.kernel);
    if (memory >= op.flops / dev.peak_fp32) total += memory;
  }
  return total;
}

Operation optimizer_step_op(double params) {
  // Per parameter: read fp32 gradient (4), read+write fp32 master (8), both moments (16),
  // write the bf16 working copy (2).
  return make_elementwise("optimizer_step", 30.0 * params, 12.0 * params, "adamw");
}

std::vector<Operation> torch_foreach_adamw_ops(double params) {
  // torch/optim/adamw.py _multi_tensor_adamw (PyTorch 2.5-2.6), bytes per fp32 parameter read +
  // written; each pass is its own multi_tensor_apply kernel over the whole list, so nothing
  // stays in cache between passes. torchtitan built AdamW with foreach=True until its default
  // became fused (torchtitan 6e4988550, 24 February 2025).
  return {
      // _foreach_mul_(params, 1 - lr * weight_decay): read and write the parameter.
      make_elementwise("adamw foreach weight decay", 8.0 * params, params),
      // _foreach_lerp_(exp_avgs, grads, 1 - beta1): read both, write the first moment.
      make_elementwise("adamw foreach first moment", 12.0 * params, 2.0 * params),
      // _foreach_mul_(exp_avg_sqs, beta2), then _foreach_addcmul_(exp_avg_sqs, grads, grads):
      // the second moment read and written twice, the gradient read once more.
      make_elementwise("adamw foreach second moment decay", 8.0 * params, params),
      make_elementwise("adamw foreach second moment update", 12.0 * params, 2.0 * params),
      // exp_avg_sq_sqrt = _foreach_sqrt(exp_avg_sqs): a new list written.
      make_elementwise("adamw foreach sqrt", 8.0 * params, params),
      // _foreach_div_(exp_avg_sq_sqrt, bias_correction2_sqrt), _foreach_add_(exp_avg_sq_sqrt, eps).
      make_elementwise("adamw foreach bias correction", 8.0 * params, params),
      make_elementwise("adamw foreach eps", 8.0 * params, params),
      // _foreach_addcdiv_(params, exp_avgs, exp_avg_sq_sqrt, step_size): three read, one written.
      make_elementwise("adamw foreach update", 16.0 * params, 2.0 * params),
  };
}

std::vector<Operation> torch_step_ops(double params, bool clip, bool foreach) {
  std::vector<Operation> ops;
  if (clip) ops = torch_clip_grad_norm_ops(params);
  if (foreach) {
    for (auto& op : torch_foreach_adamw_ops(params)) ops.push_back(std::move(op));
  } else {
    ops.push_back(optimizer_step_op(params));
  }
  return ops;
}

std::vector<Operation> torch_clip_grad_norm_ops(double params) {
  // torch/nn/utils/clip_grad.py: get_total_norm runs _foreach_norm over the gradients (read 4);
  // clip_grads_with_norm_ multiplies them all by the clamped coefficient (_foreach_mul_: read and
  // write 4 + 4) without looking at the norm on the host, so the pass runs every step.
  return {
      make_elementwise("clip_grad_norm foreach norm", 4.0 * params, 2.0 * params),
      make_elementwise("clip_grad_norm foreach scale", 8.0 * params, params),
  };
}

std::vector<Operation> megatron_fp16_optimizer_ops(double params) {
  // Bytes per parameter, read + written, from the 2021 code (Megatron-LM 6985e58):
  return {
      // _copy_model_grads_to_main_grads: main_param.grad = model_param.(main_)grad.float(),
      // the fp16 gradient read (2), the fp32 copy written (4).
      make_elementwise("optimizer grad to fp32", 6.0 * params, 0),
      // _unscale_main_grads_and_check_for_nan: torch._amp_foreach_non_finite_check_and_unscale_
      // multiplies each fp32 gradient in place (4 + 4) and flags non-finite values.
      make_elementwise("optimizer unscale and inf check", 8.0 * params, 2.0 * params),
      // clip_grad_norm_fp32: amp_C.multi_tensor_l2norm reads each fp32 gradient (4). Its clipping
      // pass (multi_tensor_scale) runs only when the norm exceeds clip_grad: data-dependent, left out.
      make_elementwise("optimizer gradient L2 norm", 4.0 * params, 2.0 * params),
      // apex FusedAdam (multi_tensor_adam): reads the fp32 parameter, gradient and both moments
      // (16) and writes the parameter and moments (12).
      make_elementwise("optimizer Adam", 28.0 * params, 12.0 * params),
      // _copy_main_params_to_model_params: amp_C.multi_tensor_scale by 1.0, fp32 read (4) and fp16
      // written (2).
      make_elementwise("optimizer params to fp16", 6.0 * params, params),
  };
}

std::vector<Operation> megatron_local_ddp_ops(double params, double gradient_bytes, bool contiguous_buffer) {
  const double g = gradient_bytes;
  // distributed.py:193 (6985e58): buffer_.data /= data-parallel size, read and written in place.
  if (contiguous_buffer) return {make_elementwise("local DDP divide", 2.0 * g * params, params)};
  return {
      // distributed.py:212-213: _flatten_dense_tensors (torch.cat of the .grad views: read, write
      // the new tensor), then coalesced /= data-parallel size (read, write).
      make_elementwise("local DDP flatten and divide", 4.0 * g * params, params),
      // distributed.py:216-218: _unflatten_dense_tensors gives views; buf.copy_(synced) reads
      // each all-reduced slice and writes the parameter's .grad.
      make_elementwise("local DDP copy back", 2.0 * g * params, 0),
  };
}

Operation gradient_accumulation_op(double params) {
  // Read the bf16 gradient (2), read and write the fp32 accumulator (8).
  return make_elementwise("grad_accumulate", 10.0 * params, params);
}

Operation autograd_gradient_accumulation_op(double params, double gradient_bytes) {
  // Reads the held and the new gradient, writes the sum: three passes of the gradient dtype.
  return make_elementwise("autograd grad accumulate", 3.0 * gradient_bytes * params, params);
}

Operation fsdp2_unsharded_grad_accumulation_op(double params, bool first) {
  return first ? make_elementwise("fsdp2 grad to fp32", 6.0 * params, 0)
               : make_elementwise("fsdp2 grad accumulate", 10.0 * params, params);
}

Operation deepspeed_bf16_grad_accumulation_op(double params) {
  // DeepSpeed v0.6.2 deepspeed/runtime/bf16_optimizer.py update_hp_grads:
  // hp_grad.data.add_(lp.grad.data.to(hp_grad.dtype)): the cast reads the bf16 gradient (2) and
  // writes an fp32 temporary (4); add_ reads it and the fp32 gradient (8) and writes the sum (4).
  return make_elementwise("bf16 grad to fp32 accumulate", 18.0 * params, params);
}

Operation deepspeed_bf16_gradient_norm_op(double params) {
  // DeepSpeed v0.6.2 deepspeed/runtime/utils.py get_global_norm_of_tensors: t.data.float()
  // .norm(2) per fp32 gradient (a no-op cast), each read once (4). The clipping multiply that
  // follows runs only when the norm exceeds clip_grad: data-dependent, left out.
  return make_elementwise("optimizer gradient L2 norm", 4.0 * params, 2.0 * params);
}

// DeepSpeed v0.6.2 deepspeed/runtime/engine.py allreduce_bucket (2059-2084; the same at
// 56c522386): flatten of the one flat fp32 group is a view (torch's flatten_dense_tensors returns
// a single tensor as is); tensor.to(communication_data_type) reads the fp32 gradient (4) and writes
// the wire copy; dist.all_reduce; postscale_gradients is on by default (not prescale_gradients,
// engine.py 723) with gradient_predivide_factor 1.0, so mul_(1 / dp) reads and writes the reduced
// copy in place; tensor.copy_() reads it and writes the fp32 gradient (4).
Operation deepspeed_allreduce_bucket_cast_op(double params, double wire_bytes) {
  return make_elementwise("allreduce_bucket cast", (4.0 + wire_bytes) * params, 0);
}

Operation deepspeed_allreduce_bucket_finish_op(double params, double wire_bytes) {
  const double scale = 2.0 * wire_bytes;
  const double copy_back = wire_bytes < 4.0 ? wire_bytes + 4.0 : 0.0;
  return make_elementwise("allreduce_bucket scale and copy back", (scale + copy_back) * params, params);
}

Operation deepspeed_clear_hp_grads_op(double params) {
  // DeepSpeed v0.6.2 deepspeed/runtime/bf16_optimizer.py clear_hp_grads (431-436): zero_() of
  // each fp32 flat gradient group, written once (4).
  return make_elementwise("optimizer clear fp32 gradients", 4.0 * params, 0);
}

}  // namespace trainsim::model

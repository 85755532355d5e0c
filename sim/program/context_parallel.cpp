#include "program/context_parallel.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"

namespace trainsim::program {

namespace {

using model::OpKind;
using model::Operation;

constexpr double kBf16 = 2.0;

bool is_attention(const Operation& op) {
  return op.kind == OpKind::fused_attention || op.kind == OpKind::fused_attention_backward;
}

/// One unmasked half block of a ring step (q x kv = s x s/2 of the rank's s tokens, whichever
/// half of the pair attends). Its rate comes from the kernel's unmasked curve at the length of
/// the square block of the same work, s/sqrt(2): the two shapes a step can take have the same
/// FLOPs, so every rank of the group runs the same program.
Operation half_block(const model::TransformerSpec& s, const model::LayerShape& shape) {
  const double b = static_cast<double>(shape.micro_batch), tokens = static_cast<double>(s.seq_len);
  const double heads = static_cast<double>(s.heads) / static_cast<double>(shape.tp);
  const double d = static_cast<double>(s.hidden) / static_cast<double>(s.heads);
  const double kv_heads = static_cast<double>(model::kv_heads_of(s)) / static_cast<double>(shape.tp);
  Operation op;
  op.name = "flash_attention_cp_half_block";
  op.kind = OpKind::fused_attention;
  op.causal = false;
  op.m = op.n = tokens / std::sqrt(2.0);
  op.k = d;
  op.batch = b * heads;
  op.flops = 4.0 * tokens * (tokens / 2) * d * b * heads;
  // Q and O of the attending query tokens, K and V of the key tokens, the fp32 log-sum-exp: the
  // mean of the two shapes (s queries on s/2 keys, s/2 queries on s keys).
  const double q_tokens = 0.75 * tokens, kv_tokens = 0.75 * tokens;
  op.bytes = kBf16 * b * (2 * q_tokens * heads * d + 2 * kv_tokens * kv_heads * d) + 4.0 * b * heads * q_tokens;
  return op;
}

}  // namespace

ScheduleInputs context_parallel_rank_view(const ScheduleInputs& in) {
  ScheduleInputs view = in;
  if (in.plan.cp <= 1) return view;
  view.model = model::context_parallel_share(in.model, in.plan.cp);
  view.layout = plan::context_parallel_rank_layout(in.layout);
  return view;
}

bool has_fused_attention(const std::vector<Operation>& ops) {
  return std::any_of(ops.begin(), ops.end(), is_attention);
}

RingAttentionPass ring_attention_pass(const std::vector<Operation>& ops, const model::TransformerSpec& rank_model,
                                      const model::LayerShape& shape, long cp, bool forward) {
  const auto at = std::find_if(ops.begin(), ops.end(), is_attention);
  TRAINSIM_CHECK(at != ops.end(), "a ring attention pass needs a fused attention op");
  TRAINSIM_CHECK(cp >= 1, "context-parallel degree below 1");
  RingAttentionPass pass;
  pass.before.assign(ops.begin(), at);
  pass.after.assign(at + 1, ops.end());
  pass.transfer_after_previous_step = !forward;
  const double b = static_cast<double>(shape.micro_batch), tokens = static_cast<double>(rank_model.seq_len);
  const double tp = static_cast<double>(shape.tp);
  const double q_elements = b * tokens * static_cast<double>(rank_model.hidden) / tp;
  const double kv_elements =
      b * tokens * static_cast<double>(model::kv_heads_of(rank_model) * (rank_model.hidden / rank_model.heads)) / tp;
  // K and V of the rank's tokens (both chunks), bf16: what travels each step (p2p_comm_buffers).
  const Bytes kv = 2 * kv_elements * kBf16;
  const Operation half = forward ? half_block(rank_model, shape) : model::backward_of({half_block(rank_model, shape)}).front();
  for (long i = 0; i < cp; ++i) {
    // Step 0: the rank's own chunks, causal (the op the layer already has at seq/cp).
    Operation block = i == 0 ? *at : half;
    if (i > 0) block.name += " step " + std::to_string(i);
    // Merging the step into the result, a streaming kernel: forward the output rescaled by the
    // log-sum-exps (flash_attn_fwd_out_correction: the step's output read, the result read and
    // written); backward dQ and dK, dV added into their accumulators.
    const double attending = i == 0 ? 1.0 : 0.75;  // share of the rank's tokens in the step's block
    const Bytes merged = forward ? 3 * kBf16 * attending * q_elements
                                 : 3 * kBf16 * attending * (q_elements + 2 * kv_elements);
    pass.steps.push_back({block, model::make_elementwise(forward ? "cp_out_correction" : "cp_grad_accumulate", merged)});
    if (forward)
      pass.ring_bytes.push_back(i + 1 < cp ? kv : 0);
    else
      pass.ring_bytes.push_back((i + 1 < cp ? kv : 0) + (i > 0 ? kv : 0));
  }
  return pass;
}

std::vector<std::string> ring_pass_labels(const RingAttentionPass& pass) {
  std::vector<std::string> labels;
  if (!pass.before.empty()) labels.push_back(pass.before.front().name + ".." + pass.before.back().name);
  for (std::size_t i = 0; i < pass.steps.size(); ++i) {
    if (pass.ring_bytes[i] > 0) labels.push_back("cp ring step " + std::to_string(i));
    labels.push_back("cp attention step " + std::to_string(i));
  }
  if (!pass.after.empty()) labels.push_back(pass.after.front().name + ".." + pass.after.back().name);
  return labels;
}

}  // namespace trainsim::program

#include "program/context_parallel.hpp"

#include <algorithm>
#include <string>

#include "core/error.hpp"
#include "model/compute_cost.hpp"

namespace trainsim::program {

namespace {

using model::OpKind;
using model::Operation;

constexpr double kBf16 = 2.0, kFp32 = 4.0, kFp64 = 8.0;

bool is_attention(const Operation& op) {
  return op.kind == OpKind::fused_attention || op.kind == OpKind::fused_attention_backward;
}

}  // namespace

CpRankTensors cp_rank_tensors(const model::TransformerSpec& s, const model::LayerShape& shape, bool repeated_kv) {
  CpRankTensors t;
  t.b = static_cast<double>(shape.micro_batch);
  t.tokens = static_cast<double>(s.seq_len);
  t.heads = static_cast<double>(s.heads) / static_cast<double>(shape.tp);
  t.kv_heads = repeated_kv ? t.heads : static_cast<double>(model::kv_heads_of(s)) / static_cast<double>(shape.tp);
  t.d = static_cast<double>(s.hidden) / static_cast<double>(s.heads);
  t.q = kBf16 * t.b * t.tokens * t.heads * t.d;
  t.kv = 2 * kBf16 * t.b * t.tokens * t.kv_heads * t.d;
  t.lse_rows = t.b * t.heads * t.tokens;
  return t;
}

Operation cp_half_block(const CpRankTensors& t, double q_share, double kv_share, bool forward) {
  const double q_tokens = q_share * t.tokens, kv_tokens = kv_share * t.tokens;
  Operation op;
  op.name = q_share < 1 ? "flash_attention_cp_half_q" : "flash_attention_cp_half_kv";
  op.kind = OpKind::fused_attention;
  op.causal = false;
  op.m = q_tokens;
  op.n = kv_tokens;
  op.k = t.d;
  op.batch = t.b * t.heads;
  op.flops = 4.0 * q_tokens * kv_tokens * t.d * t.b * t.heads;
  // Q and O of the attending query tokens, K and V of the key tokens, the fp32 log-sum-exp.
  op.bytes = kBf16 * t.b * (2 * q_tokens * t.heads * t.d + 2 * kv_tokens * t.kv_heads * t.d) + kFp32 * t.b * t.heads * q_tokens;
  return forward ? op : model::backward_of({op}).front();
}

namespace {

/// A plain copy of `bytes` (read and written once) at the stream-copy rate.
Operation copy_of(std::string name, Bytes bytes) { return model::make_elementwise(std::move(name), 2 * bytes); }
/// An in-place add of `bytes` into a buffer (both read, one written), PyTorch's add kernel.
Operation add_into(std::string name, Bytes bytes) {
  return model::make_elementwise(std::move(name), 3 * bytes, bytes / kBf16, "residual_add");
}
/// torch.cat of `bytes` (read and written), PyTorch's CatArrayBatchedCopy.
Operation cat_of(std::string name, Bytes bytes) { return model::make_elementwise(std::move(name), 2 * bytes, 0, "chunk_grad_cat"); }

/// Forward ring steps of CP rank `r` (AttnFuncWithCPAndKVP2P.forward, causal, sbhd).
std::vector<std::vector<Operation>> forward_steps(const Operation& diagonal, const CpRankTensors& t, long cp, long r) {
  std::vector<std::vector<Operation>> steps;
  std::vector<double> q_shares;  // share of the rank's queries each step's output covers
  for (long i = 0; i < cp; ++i) {
    std::vector<Operation> step;
    const std::string at = " step " + std::to_string(i);
    if (i == 0) {
      step.push_back(diagonal);
      q_shares.push_back(1.0);
      if (cp > 1) {
        // Once step 0 is done: the result zeroed (out = zeros_like(q)) and the log-sum-exp
        // cloned and widened to fp64.
        step.push_back(model::make_elementwise("cp_out_zero", t.q));
        step.push_back(copy_of("cp_lse_clone", kFp32 * t.lse_rows));
        step.push_back(model::make_elementwise("cp_lse_to_fp64", (kFp32 + kFp64) * t.lse_rows));
      }
    } else {
      // Ranks r >= i: both query chunks on the first KV chunk; the others: the second query
      // chunk on both KV chunks. Then the log-sum-exp of the rows it covered corrected (fp64
      // running value read and written, the step's fp32 one read).
      const double q_share = i <= r ? 1.0 : 0.5;
      Operation block = cp_half_block(t, q_share, q_share < 1 ? 1.0 : 0.5, true);
      block.name += at;
      step.push_back(block);
      step.push_back(model::make_elementwise("cp_lse_correction" + at, (2 * kFp64 + kFp32) * q_share * t.lse_rows));
      q_shares.push_back(q_share);
    }
    steps.push_back(std::move(step));
  }
  if (cp > 1) {
    // After the ring: the log-sum-exp back to fp32, then each step's output rescaled into the
    // result (one fused kernel per step: its output read, the result read and written, two
    // log-sum-exps read per row).
    auto& last = steps.back();
    last.push_back(model::make_elementwise("cp_lse_to_fp32", (kFp32 + kFp64) * t.lse_rows));
    for (long i = 0; i < cp; ++i) {
      const double share = q_shares[static_cast<std::size_t>(i)];
      last.push_back(model::make_elementwise("cp_out_correction step " + std::to_string(i),
                                             share * (3 * t.q + 2 * kFp32 * t.lse_rows)));
    }
  }
  return steps;
}

/// Backward ring steps of CP rank `r` (AttnFuncWithCPAndKVP2P.backward, causal, sbhd, not FP8):
/// the half blocks first, the causal one last; after each the step's dQ into the rank's dQ and
/// the step's dK, dV (concatenated) into the buffer that travels on, copied where the step is
/// the first to write those rows, added otherwise.
std::vector<std::vector<Operation>> backward_steps(const Operation& diagonal, const CpRankTensors& t, long cp, long r) {
  std::vector<std::vector<Operation>> steps;
  if (cp == 1) return {{diagonal}};
  for (long i = 0; i < cp; ++i) {
    std::vector<Operation> step;
    const std::string at = " step " + std::to_string(i);
    const bool last = i == cp - 1, half_kv = !last && i >= cp - r - 1;
    if (last) {
      step.push_back(diagonal);
    } else {
      Operation block = cp_half_block(t, half_kv ? 1.0 : 0.5, half_kv ? 0.5 : 1.0, false);
      block.name += at;
      step.push_back(block);
    }
    // dQ: full where the step's queries are both chunks, else the second chunk's half.
    if (i > cp - r - 1) {
      step.push_back(add_into("cp_dq_add" + at, t.q));
    } else if (i == cp - r - 1) {
      if (r == cp - 1) {
        step.push_back(copy_of("cp_dq_copy" + at, t.q));
      } else {
        step.push_back(copy_of("cp_dq_copy" + at, t.q / 2));
        step.push_back(add_into("cp_dq_add" + at, t.q / 2));
      }
    } else if (i > 0) {
      step.push_back(add_into("cp_dq_add" + at, t.q / 2));
    } else {
      step.push_back(copy_of("cp_dq_copy" + at, t.q / 2));
    }
    // dK, dV of the step's keys (half of them on the half-KV steps).
    const Bytes dkv = half_kv ? t.kv / 2 : t.kv;
    step.push_back(cat_of("cp_dkv_cat" + at, dkv));
    if (last) {
      if (r == 0) {
        step.push_back(add_into("cp_dkv_add" + at, t.kv / 2));
        step.push_back(copy_of("cp_dkv_copy" + at, t.kv / 2));
      } else {
        step.push_back(add_into("cp_dkv_add" + at, t.kv));
      }
    } else if (half_kv) {
      if (i == 0 && r == cp - 1)
        step.push_back(copy_of("cp_dkv_copy" + at, t.kv / 2));
      else
        step.push_back(add_into("cp_dkv_add" + at, t.kv / 2));
    } else if (i > 0) {
      step.push_back(add_into("cp_dkv_add" + at, t.kv));
    } else {
      step.push_back(copy_of("cp_dkv_copy" + at, t.kv));
    }
    steps.push_back(std::move(step));
  }
  return steps;
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

std::size_t ring_steps(const RingAttentionPass& pass) { return pass.ring_bytes.size(); }

std::size_t slowest_rank(const RingAttentionPass& pass, const model::DeviceProfile& dev) {
  std::size_t slowest = 0;
  Seconds longest = -1;
  for (std::size_t r = 0; r < pass.rank_steps.size(); ++r) {
    Seconds total = 0;
    for (const auto& step : pass.rank_steps[r]) total += model::ops_duration(step, dev);
    if (total > longest) {
      longest = total;
      slowest = r;
    }
  }
  return slowest;
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
  const CpRankTensors t = cp_rank_tensors(rank_model, shape, false);
  if (cp > 1) {
    if (forward) {
      // K and V packed into the first send buffer (p2p_comm_buffers[0] = torch.cat(k, v)).
      pass.before.push_back(cat_of("cp_kv_pack", t.kv));
    } else {
      // The saved KV copied into the first send buffer, the second half of the forward's
      // log-sum-exp made contiguous for the half-query steps.
      pass.before.push_back(copy_of("cp_kv_to_send_buffer", t.kv));
      pass.before.push_back(copy_of("cp_lse_second_half", kFp32 * t.lse_rows / 2));
    }
  }
  for (long r = 0; r < cp; ++r)
    pass.rank_steps.push_back(forward ? forward_steps(*at, t, cp, r) : backward_steps(*at, t, cp, r));
  // K and V of the rank's tokens (both chunks), bf16: what travels each step (p2p_comm_buffers).
  for (long i = 0; i < cp; ++i) {
    if (forward)
      pass.ring_bytes.push_back(i + 1 < cp ? t.kv : 0);
    else
      pass.ring_bytes.push_back((i + 1 < cp ? t.kv : 0) + (i > 0 ? t.kv : 0));
  }
  return pass;
}

RingAttentionPass a2a_attention_pass(const std::vector<Operation>& ops, const model::TransformerSpec& rank_model,
                                     const model::LayerShape& shape, long cp, bool forward) {
  const auto at = std::find_if(ops.begin(), ops.end(), is_attention);
  TRAINSIM_CHECK(at != ops.end(), "an all-to-all attention pass needs a fused attention op");
  TRAINSIM_CHECK(cp > 1, "an all-to-all attention pass needs a context-parallel degree above 1");
  const CpRankTensors t = cp_rank_tensors(rank_model, shape, false);
  RingAttentionPass pass;
  pass.before.assign(ops.begin(), at);
  pass.after.assign(at + 1, ops.end());
  // The attention over the whole sequence (cp x the rank's tokens) on 1/cp of the heads: cp
  // times the work of the rank's causal block, the same tensor bytes.
  Operation attention = *at;
  const double c = static_cast<double>(cp);
  attention.m *= c;
  attention.n *= c;
  attention.batch /= c;
  attention.flops *= c;
  attention.name += " (a2a)";
  // The tensors each side trades: Q, K, V in and O out forward; dO in and dQ, dK, dV out backward.
  const std::vector<Bytes> in = forward ? std::vector<Bytes>{t.q, t.kv / 2, t.kv / 2} : std::vector<Bytes>{t.q};
  const std::vector<Bytes> out = forward ? std::vector<Bytes>{t.q} : std::vector<Bytes>{t.q, t.kv / 2, t.kv / 2};
  std::vector<Operation> step;
  for (std::size_t i = 0; i < in.size(); ++i) {
    // Before the call: the heads split out in front (movedim(-3, 0).contiguous()); after it, the
    // sequence chunks put back in order (movedim(0, seq).contiguous(), index_select).
    pass.before.push_back(copy_of("cp_a2a_layout_in " + std::to_string(i), in[i]));
    step.push_back(copy_of("cp_a2a_gather_seq " + std::to_string(i), in[i]));
    step.push_back(copy_of("cp_a2a_reorder_in " + std::to_string(i), in[i]));
    pass.a2a_before.push_back(in[i]);
  }
  step.push_back(attention);
  std::vector<Operation> tail;
  for (std::size_t i = 0; i < out.size(); ++i) {
    step.push_back(copy_of("cp_a2a_split_seq " + std::to_string(i), out[i]));
    step.push_back(copy_of("cp_a2a_reorder_out " + std::to_string(i), out[i]));
    tail.push_back(copy_of("cp_a2a_layout_out " + std::to_string(i), out[i]));
    pass.a2a_after.push_back(out[i]);
  }
  pass.after.insert(pass.after.begin(), tail.begin(), tail.end());
  pass.rank_steps.assign(static_cast<std::size_t>(cp), {step});
  pass.ring_bytes = {0};
  return pass;
}

RingAttentionPass all_gather_attention_pass(const std::vector<Operation>& ops, const model::TransformerSpec& rank_model,
                                            const model::LayerShape& shape, long cp, bool forward) {
  const auto at = std::find_if(ops.begin(), ops.end(), is_attention);
  TRAINSIM_CHECK(at != ops.end(), "an all-gather attention pass needs a fused attention op");
  TRAINSIM_CHECK(cp > 1, "an all-gather attention pass needs a context-parallel degree above 1");
  const CpRankTensors t = cp_rank_tensors(rank_model, shape, false);
  const double c = static_cast<double>(cp), chunk = t.tokens / 2;  // query tokens of a chunk
  RingAttentionPass pass;
  pass.before.assign(ops.begin(), at);
  pass.after.assign(at + 1, ops.end());
  pass.gather_before = {c * t.kv / 2, c * t.kv / 2};  // K, then V
  if (!forward) pass.scatter_after = {c * t.kv / 2, c * t.kv / 2};
  // One chunk's call: `chunk` queries on the first `keys` keys, the last `chunk` of them masked
  // (bottom-right causal): a square call is the causal kernel, a longer one is costed unmasked
  // with the masked triangle's work left out.
  auto block = [&](double keys) {
    Operation op = *at;  // forward, or the pass's own attention backward
    op.name += keys > chunk ? " (all-gather, " + std::to_string(static_cast<long>(keys / chunk)) + " chunks of keys)"
                            : " (all-gather)";
    op.m = chunk;
    op.n = keys;
    op.causal = keys <= chunk;
    const double scale = (chunk * keys - chunk * chunk / 2) / (t.tokens * t.tokens / 2);
    op.flops = at->flops * scale;
    op.bytes = at->bytes * (chunk + keys) / (2 * t.tokens);  // Q, O of the chunk; K, V of the keys
    return op;
  };
  for (long r = 0; r < cp; ++r) {
    std::vector<Operation> step;
    // The gathered K and V put in sequence order (index_select); backward also the zeroed
    // cp x dK, dV buffers.
    step.push_back(copy_of("cp_kv_gathered_reorder", c * t.kv));
    if (!forward) step.push_back(model::make_elementwise("cp_dkv_zeros", c * t.kv));
    const double chunk_ids[2] = {static_cast<double>(r), static_cast<double>(2 * cp - 1 - r)};
    for (int i = 0; i < 2; ++i) {
      const std::string at_chunk = " chunk " + std::to_string(i);
      const double keys = (chunk_ids[i] + 1) * chunk;
      step.push_back(copy_of("cp_q_chunk_contiguous" + at_chunk, t.q / 2));
      step.push_back(block(keys));
      if (forward) {
        step.push_back(copy_of("cp_out_chunk_copy" + at_chunk, t.q / 2));
      } else {
        step.push_back(copy_of("cp_dq_chunk_copy" + at_chunk, t.q / 2));
        step.push_back(add_into("cp_dkv_add" + at_chunk, t.kv * keys / t.tokens));
      }
    }
    if (!forward) step.push_back(copy_of("cp_dkv_reorder", c * t.kv));
    pass.rank_steps.push_back({step});
  }
  pass.ring_bytes = {0};
  return pass;
}

std::vector<std::string> ring_pass_labels(const RingAttentionPass& pass) {
  std::vector<std::string> labels;
  if (!pass.before.empty()) labels.push_back(pass.before.front().name + ".." + pass.before.back().name);
  for (std::size_t k = 0; k < pass.a2a_before.size(); ++k) labels.push_back("cp all-to-all in " + std::to_string(k));
  for (std::size_t k = 0; k < pass.gather_before.size(); ++k) labels.push_back("cp all-gather " + std::to_string(k));
  for (std::size_t i = 0; i < ring_steps(pass); ++i) {
    if (pass.ring_bytes[i] > 0) labels.push_back("cp ring step " + std::to_string(i));
    labels.push_back("cp attention step " + std::to_string(i));
  }
  for (std::size_t k = 0; k < pass.a2a_after.size(); ++k) labels.push_back("cp all-to-all out " + std::to_string(k));
  for (std::size_t k = 0; k < pass.scatter_after.size(); ++k)
    labels.push_back("cp reduce-scatter " + std::to_string(k));
  if (!pass.after.empty()) labels.push_back(pass.after.front().name + ".." + pass.after.back().name);
  return labels;
}

}  // namespace trainsim::program

#include "program/torch_ring_attention.hpp"

#include <algorithm>
#include <string>

#include "core/error.hpp"
#include "model/compute_cost.hpp"
#include "program/context_parallel.hpp"

namespace trainsim::program {

namespace {

using model::Operation;
using model::OpKind;

constexpr double kFp32 = 4.0;

bool is_attention(const Operation& op) {
  return op.kind == OpKind::fused_attention || op.kind == OpKind::fused_attention_backward;
}

// Eager elementwise kernels, each one launch: copies and casts at the stream-copy rate, binary
// arithmetic at PyTorch's add kernel's, torch.cat at its CatArrayBatchedCopy's (the device
// profile's classes). `bytes` is what the kernel reads and writes.
Operation copy_op(std::string name, Bytes bytes) {
  return model::make_elementwise(std::move(name), bytes);
}
Operation binary_op(std::string name, Bytes bytes, double elements) {
  return model::make_elementwise(std::move(name), bytes, elements, "residual_add");
}
Operation cat_op(std::string name, Bytes bytes) {
  return model::make_elementwise(std::move(name), bytes, 0, "chunk_grad_cat");
}

std::string at_step(long i) { return " step " + std::to_string(i); }

/// _SDPAMerger._merge_one after step i's block: `share` of the rank's query rows, fp32.
void merge(std::vector<Operation>& step, const CpRankTensors& t, double share, long i) {
  const double out = share * t.q / 2, rows = share * t.lse_rows;  // elements
  const std::string at = at_step(i);
  step.push_back(copy_op("cp_out_to_fp32" + at, (2 + kFp32) * out));
  step.push_back(binary_op("cp_lse_diff" + at, 3 * kFp32 * rows, rows));
  step.push_back(copy_op("cp_lse_sigmoid" + at, 2 * kFp32 * rows));
  step.push_back(binary_op("cp_out_diff" + at, 3 * kFp32 * out, out));
  step.push_back(binary_op("cp_out_scale" + at, 2 * kFp32 * out + kFp32 * rows, out));
  step.push_back(binary_op("cp_out_update" + at, 3 * kFp32 * out, out));
  step.push_back(binary_op("cp_lse_diff_back" + at, 3 * kFp32 * rows, rows));
  step.push_back(copy_op("cp_lse_logsigmoid" + at, 2 * kFp32 * rows));
  step.push_back(binary_op("cp_lse_update" + at, 3 * kFp32 * rows, rows));
  if (share < 1) {
    // _partial_update(add=False): the updated half put back with a torch.cat of both halves.
    step.push_back(cat_op("cp_lse_rebuild" + at, 2 * kFp32 * t.lse_rows));
    step.push_back(cat_op("cp_out_rebuild" + at, 2 * kFp32 * t.q / 2));
  }
}

struct RankPass {
  std::vector<std::vector<Operation>> steps, accumulations;
};

RankPass forward_rank(const Operation& diagonal, const CpRankTensors& t, long cp, long r) {
  RankPass p;
  for (long i = 0; i < cp; ++i) {
    std::vector<Operation> step;
    if (i == 0) {
      step.push_back(diagonal);
      step.push_back(copy_op("cp_out_to_fp32" + at_step(0), (2 + kFp32) * t.q / 2));
    } else {
      if (i + 1 < cp) step.push_back(cat_op("cp_kv_send_buffer" + at_step(i), 2 * t.kv));
      const double share = i <= r ? 1.0 : 0.5;
      Operation block = cp_half_block(t, share, share < 1 ? 1.0 : 0.5, true);
      block.name += at_step(i);
      step.push_back(block);
      merge(step, t, share, i);
    }
    p.steps.push_back(std::move(step));
  }
  return p;
}

RankPass backward_rank(const Operation& diagonal, const CpRankTensors& t, long cp, long r) {
  RankPass p;
  const double q = t.q / 2, kv = t.kv / 2;  // elements of dQ and of dK, dV together
  for (long i = 0; i < cp; ++i) {
    const std::string at = at_step(i);
    std::vector<Operation> step, acc;
    if (i > 0 && i + 1 < cp) step.push_back(cat_op("cp_kv_send_buffer" + at, 2 * t.kv));
    if (i == 0) {
      step.push_back(diagonal);
    } else {
      const bool all_queries = i <= r;
      Operation block = cp_half_block(t, all_queries ? 1.0 : 0.5, all_queries ? 0.5 : 1.0, false);
      block.name += at;
      step.push_back(block);
    }
    // dK, dV: the step's bf16 gradients added into the fp32 ones (from step 1 on, those that
    // arrived); on the half-KV steps into the first half, then a torch.cat of both halves.
    const bool half_kv = i > 0 && i <= r;
    acc.push_back(binary_op("cp_dkv_add" + at, (2 * kFp32 + 2) * (half_kv ? kv / 2 : kv),
                            half_kv ? kv / 2 : kv));
    if (half_kv) acc.push_back(cat_op("cp_dkv_rebuild" + at, 2 * kFp32 * kv));
    acc.push_back(cat_op("cp_dkv_send_buffer" + at, 2 * kFp32 * kv));
    // dQ: all of it where the step's queries were, else its second half, then a torch.cat.
    const bool half_q = i > r;
    acc.push_back(
        binary_op("cp_dq_add" + at, (2 * kFp32 + 2) * (half_q ? q / 2 : q), half_q ? q / 2 : q));
    if (half_q) acc.push_back(cat_op("cp_dq_rebuild" + at, 2 * kFp32 * q));
    p.steps.push_back(std::move(step));
    p.accumulations.push_back(std::move(acc));
  }
  return p;
}

Seconds rank_time(const RankPass& p, const model::DeviceProfile& dev) {
  Seconds total = 0;
  for (const auto& s : p.steps) total += model::ops_duration(s, dev);
  for (const auto& s : p.accumulations) total += model::ops_duration(s, dev);
  return total;
}

}  // namespace

TorchRingPass torch_ring_attention_pass(const std::vector<Operation>& ops,
                                        const model::TransformerSpec& rank_model,
                                        const model::LayerShape& shape, long cp, bool forward,
                                        plan::CpRotateMethod rotate,
                                        const model::DeviceProfile& dev) {
  const auto at = std::find_if(ops.begin(), ops.end(), is_attention);
  TRAINSIM_CHECK(at != ops.end(), "a ring attention pass needs a fused attention op");
  TRAINSIM_CHECK(cp > 1, "PyTorch's ring attention needs a context-parallel degree above 1");
  const CpRankTensors t = cp_rank_tensors(rank_model, shape, true);
  const double q = t.q / 2, kv = t.kv / 2;  // elements
  TorchRingPass pass;
  pass.before.assign(ops.begin(), at);
  if (!forward) {
    // grad_query, grad_key, grad_value = zeros_like(..., dtype=float32).
    pass.before.push_back(model::make_elementwise("cp_dq_zeros", kFp32 * q));
    pass.before.push_back(model::make_elementwise("cp_dkv_zeros", kFp32 * kv));
  }
  // key.contiguous(), value.contiguous() of the transposed views, then torch.cat into the first
  // send buffer (step 0 sends, cp > 1).
  pass.before.push_back(copy_op("cp_kv_contiguous", 2 * t.kv));
  pass.before.push_back(cat_op("cp_kv_send_buffer", 2 * t.kv));
  // The slowest rank's steps set the group's pace.
  RankPass slowest;
  Seconds longest = -1;
  for (long r = 0; r < cp; ++r) {
    RankPass p = forward ? forward_rank(*at, t, cp, r) : backward_rank(*at, t, cp, r);
    const Seconds time = rank_time(p, dev);
    if (time > longest) {
      longest = time;
      slowest = std::move(p);
    }
  }
  pass.steps = std::move(slowest.steps);
  pass.accumulations = std::move(slowest.accumulations);
  if (rotate == plan::CpRotateMethod::allgather) {
    pass.gathered = static_cast<double>(cp) * t.kv;
  } else {
    for (long i = 0; i < cp; ++i) pass.kv_bytes.push_back(i + 1 < cp ? t.kv : 0);
  }
  if (!forward)
    for (long i = 0; i < cp; ++i) pass.dkv_bytes.push_back(kFp32 * kv);
  if (forward) {
    pass.after.push_back(copy_op("cp_out_to_bf16", (kFp32 + 2) * q));
  } else {
    pass.after.push_back(copy_op("cp_dq_to_bf16", (kFp32 + 2) * q));
    pass.after.push_back(copy_op("cp_dkv_to_bf16", (kFp32 + 2) * kv));
  }
  pass.after.insert(pass.after.end(), at + 1, ops.end());
  return pass;
}

std::vector<std::string> torch_ring_pass_labels(const TorchRingPass& pass) {
  std::vector<std::string> labels;
  labels.push_back(pass.before.front().name + ".." + pass.before.back().name);
  if (pass.gathered > 0) labels.push_back("cp kv all-gather");
  for (std::size_t i = 0; i < pass.steps.size(); ++i) {
    if (i < pass.kv_bytes.size() && pass.kv_bytes[i] > 0)
      labels.push_back("cp kv rotation step " + std::to_string(i));
    labels.push_back("cp attention step " + std::to_string(i));
    if (i < pass.accumulations.size()) {
      labels.push_back("cp dkv step " + std::to_string(i));
      labels.push_back("cp dkv rotation step " + std::to_string(i));
    }
  }
  labels.push_back(pass.after.front().name + ".." + pass.after.back().name);
  return labels;
}

TorchRingCosts torch_ring_costs(const TorchRingPass& pass, const model::DeviceProfile& dev) {
  auto cost = [&](const std::vector<Operation>& ops) {
    return RingPieceCost{model::ops_duration(ops, dev), model::ops_memory_bound(ops, dev),
                         model::ops_kernels(ops)};
  };
  TorchRingCosts c;
  c.before = cost(pass.before);
  c.after = cost(pass.after);
  for (const auto& s : pass.steps) c.steps.push_back(cost(s));
  for (const auto& s : pass.accumulations) c.accumulations.push_back(cost(s));
  return c;
}

TaskRef push_torch_ring(const TorchRingPass& pass, std::vector<TaskRef> deps,
                        const RingComputePush& compute, const RingCollectivePush& collective) {
  TaskRef previous = compute(RingPiece::before, 0, std::move(deps));
  TaskRef gathered{-1, -1}, kv{-1, -1}, dkv{-1, -1};
  if (pass.gathered > 0)
    gathered = collective(collective::Op::all_gather, pass.gathered, {previous});
  for (std::size_t i = 0; i < pass.steps.size(); ++i) {
    TaskRef sent{-1, -1};
    if (i < pass.kv_bytes.size() && pass.kv_bytes[i] > 0)  // passes on the K, V it received
      sent = collective(collective::Op::ring_exchange, pass.kv_bytes[i], {i == 0 ? previous : kv});
    std::vector<TaskRef> step_deps{previous};
    if (i > 0) step_deps.push_back(gathered.stream >= 0 ? gathered : kv);
    previous = compute(RingPiece::step, i, std::move(step_deps));
    if (sent.stream >= 0) kv = sent;
    if (i < pass.accumulations.size()) {
      std::vector<TaskRef> acc_deps{previous};
      if (i > 0) acc_deps.push_back(dkv);
      previous = compute(RingPiece::accumulation, i, std::move(acc_deps));
      dkv = collective(collective::Op::ring_exchange, pass.dkv_bytes[i], {previous});
    }
  }
  std::vector<TaskRef> after_deps{previous};
  if (dkv.stream >= 0) after_deps.push_back(dkv);  // dK, dV home
  return compute(RingPiece::after, 0, std::move(after_deps));
}

}  // namespace trainsim::program

#include "model/checkpointing.hpp"

#include <string>
#include <utility>

#include "core/error.hpp"

namespace trainsim::model {

namespace {

constexpr double kBf16 = 2.0;
constexpr double kFp32 = 4.0;

/// One matmul of a layer as the block issues it: output columns n from k inputs per token.
struct Matmul {
  std::string name;
  double n = 0, k = 0;
};

/// The layer's matmuls in issue order, on one TP rank (see the header for why this order).
std::vector<Matmul> matmuls_in_order(const TransformerSpec& s, const LayerShape& shape) {
  const double tp = static_cast<double>(shape.tp);
  const double h = static_cast<double>(s.hidden);
  const double hkv = static_cast<double>(kv_heads_of(s)) * h / static_cast<double>(s.heads);
  const double fr = static_cast<double>(s.ffn_hidden) / tp;
  std::vector<Matmul> out{{"q", h / tp, h}, {"k", hkv / tp, h}, {"v", hkv / tp, h}, {"attn_out", h, h / tp}};
  if (gated(s.mlp)) {
    out.push_back({"ffn_gate", fr, h});
    out.push_back({"ffn_up", fr, h});
    out.push_back({"ffn_down", h, fr});
  } else {
    out.push_back({"ffn_in", fr, h});
    out.push_back({"ffn_out", h, fr});
  }
  return out;
}

/// torchtitan's op policy: the 1st, 3rd, ... matmul output is saved, the others recomputed.
bool saved_by_op_policy(std::size_t index_in_order) { return index_in_order % 2 == 0; }

void require_fused_attention(const LayerShape& shape) {
  TRAINSIM_CHECK(shape.flash_attention,
                 "selective_op checkpointing saves the fused attention kernel's output; it needs flash attention");
}

/// What only the core attention keeps, which its checkpoint drops (Q, K and V stay: its inputs):
/// unfused, the s x s tensors; fused, the kernel's log-sum-exp and, where an FP8 projection keeps
/// its own copy of the output, the kernel's bf16 output (otherwise that tensor is the
/// projection's saved input and stays).
bool inside_core_attention(const StoredTensor& t, const LayerShape& shape) {
  if (shape.flash_attention)
    return t.name == "softmax_logsumexp" || (shape.fp8.enabled && t.name == "attention_output");
  return t.name == "softmax_output" || t.name == "attention_dropout_mask" || t.name == "attention_dropout_output";
}

}  // namespace

std::vector<StoredTensor> checkpointed_layer_activations(const TransformerSpec& s, const LayerShape& shape,
                                                         Checkpointing policy) {
  switch (policy) {
    case Checkpointing::none:
      return layer_stored_activations(s, shape);
    case Checkpointing::full:
      return {{"layer_input", layer_input_bytes(s, shape)}};
    case Checkpointing::selective_attention: {
      std::vector<StoredTensor> out;
      for (auto& t : layer_stored_activations(s, shape))
        if (!inside_core_attention(t, shape)) out.push_back(std::move(t));
      return out;
    }
    case Checkpointing::selective_op:
      break;
  }
  require_fused_attention(shape);
  const double b = static_cast<double>(shape.micro_batch);
  const double t = b * static_cast<double>(s.seq_len);
  const double heads = static_cast<double>(s.heads) / static_cast<double>(shape.tp);
  std::vector<StoredTensor> out{{"layer_input", layer_input_bytes(s, shape)}};
  const auto mm = matmuls_in_order(s, shape);
  for (std::size_t i = 0; i < mm.size(); ++i)
    if (saved_by_op_policy(i)) out.push_back({mm[i].name + "_output", kBf16 * t * mm[i].n});
  // The attention kernel's outputs: O and the per-row log-sum-exp its backward reads.
  out.push_back({"attention_output", kBf16 * t * static_cast<double>(s.hidden) / static_cast<double>(shape.tp)});
  out.push_back({"softmax_logsumexp", kFp32 * b * heads * static_cast<double>(s.seq_len)});
  if (shape.tp > 1 && shape.sequence_parallel) {
    // The policy also saves the row-parallel linears' reduce-scatter outputs (the sequence shard
    // each block adds to its residual); their all-gathers are recomputed.
    const double shard = kBf16 * t * static_cast<double>(s.hidden) / static_cast<double>(shape.tp);
    out.push_back({"attention_reduce_scatter_output", shard});
    out.push_back({"mlp_reduce_scatter_output", shard});
  }
  return out;
}

std::vector<Operation> recomputed_forward_ops(const TransformerSpec& s, const LayerShape& shape,
                                              Checkpointing policy) {
  switch (policy) {
    case Checkpointing::none:
      return {};
    case Checkpointing::full:
      return layer_forward_ops(s, shape);
    case Checkpointing::selective_attention:
      return core_attention_forward_ops(s, shape);
    case Checkpointing::selective_op:
      break;
  }
  require_fused_attention(shape);
  // Every memory-bound op of the forward re-runs (norms, activation, residual adds); of the
  // matmuls only those the policy did not save; the attention kernel's output is saved.
  std::vector<Operation> ops;
  for (const auto& op : layer_forward_ops(s, shape))
    if (op.kind == OpKind::elementwise) ops.push_back(op);
  const double t = static_cast<double>(shape.micro_batch) * static_cast<double>(s.seq_len);
  const auto mm = matmuls_in_order(s, shape);
  for (std::size_t i = 0; i < mm.size(); ++i) {
    if (saved_by_op_policy(i)) continue;
    if (!shape.fp8.enabled) {
      ops.push_back(make_gemm(mm[i].name, t, mm[i].n, mm[i].k, 1, Dtype::bf16));
      continue;
    }
    // An FP8 linear's forward again: its casts (the weight's too where every forward casts it)
    // and the FP8 GEMM.
    for (auto& c : fp8_forward_casts(mm[i].name, t * mm[i].k, mm[i].k * mm[i].n, shape.fp8)) ops.push_back(std::move(c));
    ops.push_back(make_fp8_gemm(mm[i].name, t, mm[i].n, mm[i].k, 1, shape.fp8.forward_accumulation));
  }
  return ops;
}

}  // namespace trainsim::model

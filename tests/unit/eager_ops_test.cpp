// Eager PyTorch's kernels for a Llama block (model/eager_ops.hpp) and where layer_forward_ops /
// layer_backward_ops use them (LayerShape::eager): bytes per kernel from what each reads and
// writes, present only for the architecture features that launch them.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "model/eager_ops.hpp"
#include "model/published_models.hpp"
#include "model/transformer.hpp"

namespace trainsim::model {
namespace {

TransformerSpec gpt() { return {"GPT", 24, 2048, 16, 8192, 50257, 2048, false}; }

Bytes bytes_of(const std::vector<Operation>& ops) {
  Bytes b = 0;
  for (const auto& op : ops) b += op.bytes;
  return b;
}
Flops gemm_flops(const std::vector<Operation>& ops) {
  Flops f = 0;
  for (const auto& op : ops)
    if (op.kind == OpKind::gemm) f += op.flops;
  return f;
}
bool has(const std::vector<Operation>& ops, const std::string& name) {
  return std::any_of(ops.begin(), ops.end(), [&](const Operation& op) { return op.name == name; });
}
long count_prefix(const std::vector<Operation>& ops, const std::string& prefix) {
  return std::count_if(ops.begin(), ops.end(),
                       [&](const Operation& op) { return op.name.rfind(prefix, 0) == 0; });
}

TEST(EagerRmsNorm, EightKernelsForwardThirtySixBytesPerElement) {
  const double rows = 1000, cols = 4096, n = rows * cols;
  const auto p = eager_rms_norm("norm", rows, cols);
  EXPECT_EQ(p.forward.size(), 8u);
  // Full-size passes: cast 6, pow 8, mean 4, scale 8, cast back 6, weight 4 bytes per element;
  // per-row statistics and the weight vector on top.
  EXPECT_DOUBLE_EQ(bytes_of(p.forward), 36 * n + 4 * rows + 8 * rows + 8 * rows + 4 * rows + 2 * cols);
  EXPECT_EQ(p.backward.size(), 14u);
  EXPECT_NEAR(bytes_of(p.backward) / n, 92, 0.05);  // + per-row and per-column terms
  for (const auto& op : p.forward) EXPECT_TRUE(op.kernel.empty()) << op.name;  // copy rate
}

TEST(EagerRotary, CastComplexMultiplyCastBothWays) {
  const auto p = eager_rotary("rope", 1e6);
  EXPECT_EQ(p.forward.size(), 3u);
  EXPECT_DOUBLE_EQ(bytes_of(p.forward), 20e6);
  EXPECT_DOUBLE_EQ(bytes_of(p.backward), 20e6);
}

TEST(EagerRepeatKv, CopiesToEveryQueryHeadAndSumsBack) {
  const auto p = eager_repeat_kv("repeat_k", 1e6, 4);
  ASSERT_EQ(p.forward.size(), 1u);
  EXPECT_DOUBLE_EQ(p.forward[0].bytes, 2 * 1e6 + 2 * 4e6);  // read the 8 heads, write 32
  ASSERT_EQ(p.backward.size(), 1u);
  EXPECT_DOUBLE_EQ(p.backward[0].bytes, p.forward[0].bytes);
}

TEST(EagerSwiglu, SiluThenMultiplyAndThreeBackwardKernels) {
  const auto p = eager_swiglu("swiglu", 1e6);
  EXPECT_EQ(p.forward.size(), 2u);
  EXPECT_DOUBLE_EQ(bytes_of(p.forward), 10e6);
  EXPECT_EQ(p.backward.size(), 3u);
  EXPECT_DOUBLE_EQ(bytes_of(p.backward), 18e6);
}

TEST(EagerLayer, LlamaGetsEveryEagerPartAndTheSameGemmFlops) {
  const auto s = llama3_8b();
  LayerShape fused{1, 1, false, true, false};
  LayerShape eager = fused;
  eager.eager = true;
  const auto f = layer_forward_ops(s, fused), e = layer_forward_ops(s, eager);
  EXPECT_TRUE(has(f, "qkv"));
  EXPECT_TRUE(has(e, "q") && has(e, "k") && has(e, "v") && !has(e, "qkv"));
  EXPECT_TRUE(has(e, "ffn_gate") && has(e, "ffn_up") && !has(e, "ffn_gate_up"));
  EXPECT_EQ(count_prefix(e, "rmsnorm_1_"), 8);
  EXPECT_EQ(count_prefix(e, "rope_q_"), 3);
  EXPECT_EQ(count_prefix(e, "rope_k_"), 3);
  EXPECT_TRUE(has(e, "repeat_k") && has(e, "repeat_v"));
  EXPECT_TRUE(has(e, "swiglu_silu") && has(e, "swiglu_mul") && !has(e, "silu_mul"));
  EXPECT_DOUBLE_EQ(gemm_flops(e), gemm_flops(f));
  EXPECT_GT(bytes_of(e), bytes_of(f));
  const auto eb = layer_backward_ops(s, eager);
  EXPECT_DOUBLE_EQ(gemm_flops(eb), gemm_flops(layer_backward_ops(s, fused)));
  EXPECT_TRUE(has(eb, "rmsnorm_1_to_fp32_bwd") && has(eb, "repeat_k_bwd") && has(eb, "swiglu_silu_bwd"));
  // Three projections share the norm's output, two share the second: three gradient adds.
  EXPECT_EQ(count_prefix(eb, "qkv_grad_add"), 2);
  EXPECT_TRUE(has(eb, "ffn_grad_add"));
}

TEST(EagerLayer, BackwardRunsTheLastForwardPartFirst) {
  LayerShape eager{1, 1, false, true, false};
  eager.eager = true;
  const auto b = layer_backward_ops(llama3_8b(), eager);
  const auto pos = [&](const std::string& n) {
    return std::find_if(b.begin(), b.end(), [&](const Operation& op) { return op.name == n; }) - b.begin();
  };
  EXPECT_LT(pos("swiglu_mul_bwd_gate"), pos("ffn_gate_dgrad"));
  EXPECT_LT(pos("flash_attention_bwd"), pos("repeat_k_bwd"));
  EXPECT_LT(pos("repeat_k_bwd"), pos("rope_k_to_bf16_bwd"));
  EXPECT_LT(pos("q_dgrad"), pos("qkv_grad_add_1"));
  EXPECT_LT(pos("qkv_grad_add_1"), pos("rmsnorm_1_weight_dgrad"));
}

TEST(EagerLayer, MultiHeadAttentionHasNoRepeatAndLearnedPositionsNoRotary) {
  LayerShape eager{1, 1, false, true, false};
  eager.eager = true;
  auto s = llama3_8b();
  s.kv_heads = 0;  // multi-head
  EXPECT_FALSE(has(layer_forward_ops(s, eager), "repeat_k"));
  const auto g = layer_forward_ops(gpt(), eager);
  EXPECT_EQ(count_prefix(g, "rope_"), 0);
  EXPECT_TRUE(has(g, "layernorm_1"));  // F.layer_norm is one kernel eagerly too
  EXPECT_TRUE(has(g, "gelu"));
}

TEST(EagerLayer, TensorParallelSplitsTheHeadsOfRopeAndRepeat) {
  LayerShape one{1, 1, false, true, false}, two{1, 2, false, true, false};
  one.eager = two.eager = true;
  const auto s = llama3_8b();
  auto bytes_named = [](const std::vector<Operation>& ops, const std::string& n) {
    for (const auto& op : ops)
      if (op.name == n) return op.bytes;
    return 0.0;
  };
  EXPECT_DOUBLE_EQ(bytes_named(layer_forward_ops(s, two), "repeat_k"),
                   bytes_named(layer_forward_ops(s, one), "repeat_k") / 2);
  EXPECT_DOUBLE_EQ(bytes_named(layer_forward_ops(s, two), "rope_q_complex_mul"),
                   bytes_named(layer_forward_ops(s, one), "rope_q_complex_mul") / 2);
}

}  // namespace
}  // namespace trainsim::model

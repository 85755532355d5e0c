// Squared-ReLU MLP (MlpKind::squared_relu, Nemotron-4): a non-gated MLP whose activation is
// NeMo's compiled relu(x)^2. Its matrices, stored tensors and FP8 paths are a GELU MLP's; only
// the activation kernel differs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/fp8_linear.hpp"
#include "model/transformer.hpp"

namespace trainsim::model {
namespace {

/// A small Nemotron-like decoder: no biases, LayerNorm, rotary, GQA, untied output.
TransformerSpec decoder(MlpKind mlp) {
  TransformerSpec s;
  s.name = "decoder";
  s.layers = 2;
  s.hidden = 1024;
  s.heads = 16;
  s.kv_heads = 4;
  s.ffn_hidden = 4096;
  s.vocab = 1000;
  s.seq_len = 512;
  s.mlp = mlp;
  s.bias = false;
  s.learned_positions = false;
  s.tied_embeddings = false;
  s.embedding_norm = false;
  s.final_norm = true;
  s.dropout = false;
  return s;
}

LayerShape te_fp8_shape() {
  LayerShape shape{2};
  shape.tp = 4;
  shape.sequence_parallel = true;
  shape.flash_attention = true;
  shape.fp8.enabled = true;
  shape.fp8.fused_transpose = true;
  shape.fp8.norm_writes_input = true;
  shape.fp8.sequence_gathers_fp8 = true;
  shape.fp8.weight_casts_per_micro_batch = 0.25;
  return shape;
}

const Operation* find(const std::vector<Operation>& ops, const std::string& name) {
  for (const auto& op : ops)
    if (op.name == name) return &op;
  return nullptr;
}

TEST(SquaredReluMlp, IsNotGatedAndHasAGeluMlpsParameters) {
  EXPECT_FALSE(gated(MlpKind::squared_relu));
  EXPECT_FALSE(gated(MlpKind::gelu));
  EXPECT_TRUE(gated(MlpKind::swiglu));
  EXPECT_STREQ(mlp_name(MlpKind::squared_relu), "squared_relu");
  const TransformerSpec s = decoder(MlpKind::squared_relu);
  EXPECT_DOUBLE_EQ(parameters_per_layer(s), parameters_per_layer(decoder(MlpKind::gelu)));
  const double h = 1024, f = 4096, hkv = 4 * 64;
  EXPECT_DOUBLE_EQ(parameters_per_layer(s), 2 * h * h + 2 * h * hkv + 2 * h * f + 2 * 2 * h);
  EXPECT_DOUBLE_EQ(linear_weight_parameters(s), 2 * h * h + 2 * h * hkv + 2 * h * f);
  EXPECT_LT(parameters_per_layer(s), parameters_per_layer(decoder(MlpKind::swiglu)));
}

TEST(SquaredReluMlp, OneCompiledKernelEachWayAtTheDevicesElementwiseRate) {
  const TransformerSpec s = decoder(MlpKind::squared_relu);
  const LayerShape shape{2, 4};
  const double t = 2 * 512, fr = 4096 / 4;
  const auto fwd = layer_forward_ops(s, shape);
  ASSERT_NE(find(fwd, "ffn_in"), nullptr);
  EXPECT_DOUBLE_EQ(find(fwd, "ffn_in")->flops, 2 * t * fr * 1024);
  EXPECT_EQ(find(fwd, "ffn_gate_up"), nullptr);
  EXPECT_EQ(find(fwd, "gelu"), nullptr);
  const Operation* act = find(fwd, "squared_relu");
  ASSERT_NE(act, nullptr);
  EXPECT_EQ(act->kind, OpKind::elementwise);
  EXPECT_DOUBLE_EQ(act->bytes, 2 * 2 * t * fr);  // reads and writes the f columns in bf16
  EXPECT_DOUBLE_EQ(act->flops, 2 * t * fr);      // max and a multiply
  EXPECT_EQ(act->kernels, 1);
  EXPECT_TRUE(act->kernel.empty());  // no measured class: not GELU's
  const auto back = layer_backward_ops(s, shape);
  const Operation* act_bwd = find(back, "squared_relu_bwd");
  ASSERT_NE(act_bwd, nullptr);
  EXPECT_DOUBLE_EQ(act_bwd->bytes, 3 * 2 * t * fr);  // saved tensor and gradient in, gradient out
  EXPECT_EQ(act_bwd->kernels, 1);
}

TEST(SquaredReluMlp, EagerCodeRunsReluThenPow) {
  const TransformerSpec s = decoder(MlpKind::squared_relu);
  LayerShape eager{1};
  eager.eager = true;
  const auto act = *find(layer_forward_ops(s, eager), "squared_relu");
  EXPECT_EQ(act.kernels, 2);
  EXPECT_DOUBLE_EQ(act.bytes, 2 * 2 * 2 * 512 * 4096.0);
  EXPECT_EQ(find(layer_backward_ops(s, eager), "squared_relu_bwd")->kernels, 2);
}

TEST(SquaredReluMlp, StoresWhatAGeluMlpStores) {
  const LayerShape shape = te_fp8_shape();
  const auto srelu = layer_stored_activations(decoder(MlpKind::squared_relu), shape);
  const auto gelu = layer_stored_activations(decoder(MlpKind::gelu), shape);
  EXPECT_DOUBLE_EQ(total_bytes(srelu), total_bytes(gelu));
  bool found = false;
  for (const auto& t : srelu)
    if (t.name == "squared_relu_input") {
      found = true;
      EXPECT_DOUBLE_EQ(t.bytes, 2.0 * 2 * 512 * 4096 / 4);
    }
  EXPECT_TRUE(found);
  EXPECT_LT(total_bytes(srelu), total_bytes(layer_stored_activations(decoder(MlpKind::swiglu), shape)));
}

TEST(SquaredReluMlp, Fp8LinearsAsTransformerEngineRunsAGeluMlp) {
  // Megatron-core's TE layer: the norm writes fc1's FP8 input (TELayerNormColumnParallelLinear),
  // fc2 casts the bf16 activation (TERowParallelLinear); every op but the activation is GELU's.
  const LayerShape shape = te_fp8_shape();
  for (const bool forward : {true, false}) {
    const auto a = forward ? layer_forward_ops(decoder(MlpKind::squared_relu), shape)
                           : layer_backward_ops(decoder(MlpKind::squared_relu), shape);
    const auto b = forward ? layer_forward_ops(decoder(MlpKind::gelu), shape)
                           : layer_backward_ops(decoder(MlpKind::gelu), shape);
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (a[i].name.rfind("squared_relu", 0) == 0) {
        EXPECT_EQ(b[i].name.rfind("gelu", 0), 0u) << b[i].name;
        continue;
      }
      EXPECT_EQ(a[i].name, b[i].name);
      EXPECT_EQ(a[i].dtype, b[i].dtype) << a[i].name;
      EXPECT_DOUBLE_EQ(a[i].bytes, b[i].bytes) << a[i].name;
      EXPECT_DOUBLE_EQ(a[i].flops, b[i].flops) << a[i].name;
    }
  }
  const auto fwd = layer_forward_ops(decoder(MlpKind::squared_relu), shape);
  EXPECT_EQ(find(fwd, "ffn_in_input_fp8_cast"), nullptr);  // the norm wrote it
  EXPECT_NE(find(fwd, "ffn_out_input_fp8_cast"), nullptr);
  EXPECT_EQ(find(fwd, "ffn_in")->dtype, Dtype::fp8);
}

}  // namespace
}  // namespace trainsim::model

// Activation checkpointing policies (model/checkpointing.hpp) on Llama-3 8B, whose published
// size the model layer must reproduce first, and on a GELU layer.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/checkpointing.hpp"
#include "model/published_models.hpp"
#include "model/transformer.hpp"

namespace trainsim::model {
namespace {

LayerShape flash(long micro_batch) { return {micro_batch, 1, false, true, false}; }

Flops gemm_flops(const std::vector<Operation>& ops) {
  Flops f = 0;
  for (const auto& op : ops)
    if (op.kind == OpKind::gemm) f += op.flops;
  return f;
}

TEST(Llama3_8B, ParameterCountIsThePublished8_03B) {
  const TransformerSpec s = llama3_8b();
  // Per layer: q, o 4096^2; k, v 4096 x 1024; three FFN matrices 4096 x 14336; two RMSNorms.
  EXPECT_DOUBLE_EQ(parameters_per_layer(s), 2.0 * 4096 * 4096 + 2.0 * 4096 * 1024 + 3.0 * 4096 * 14336 + 2 * 4096);
  // Hugging Face's meta-llama/Meta-Llama-3-8B: 8,030,261,248 parameters ("8.03B").
  EXPECT_DOUBLE_EQ(parameter_count(s), 8030261248.0);
  EXPECT_DOUBLE_EQ(embedding_parameters(s), 128256.0 * 4096);
  EXPECT_DOUBLE_EQ(head_parameters(s), 128256.0 * 4096 + 4096);  // untied output + final norm
}

TEST(Llama3_8B, ModelFlopsAreTorchtitansPerTokenCountTimesTheSequence) {
  // torchtitan (tools/utils.py get_num_flop_per_token, March 2025): 6 x parameters without the
  // embedding table + 12 x layers x heads x head_dim x seq per token.
  const TransformerSpec s = llama3_8b();
  const double seq = 8192;
  const double per_token = 6 * (8030261248.0 - 128256.0 * 4096) + 12 * 32 * 4096 * seq;
  EXPECT_DOUBLE_EQ(model_flops_per_sequence(s), per_token * seq);
}

TEST(Checkpointing, NoneKeepsEverythingAndFullOnlyTheInput) {
  const TransformerSpec s = llama3_8b();
  EXPECT_DOUBLE_EQ(total_bytes(checkpointed_layer_activations(s, flash(1), Checkpointing::none)),
                   total_bytes(layer_stored_activations(s, flash(1))));
  EXPECT_DOUBLE_EQ(total_bytes(checkpointed_layer_activations(s, flash(1), Checkpointing::full)),
                   layer_input_bytes(s, flash(1)));
  EXPECT_TRUE(recomputed_forward_ops(s, flash(1), Checkpointing::none).empty());
  EXPECT_DOUBLE_EQ(gemm_flops(recomputed_forward_ops(s, flash(1), Checkpointing::full)),
                   gemm_flops(layer_forward_ops(s, flash(1))));
}

TEST(Checkpointing, EagerModuleCodeKeepsTheFp32NormInputsRepeatedKvAndSiluOutput) {
  // torchtitan's eager layer at batch 1 x seq 8192 measured on an H100 (2026-11-23,
  // validate/results/h100-activation-memory.json): the allocated peak grows by 1.626 GiB per
  // layer without checkpointing (layers 1, 2, 4), 0.485 GiB with the op policy, 0.062 GiB with
  // full checkpointing. Fused kernels keep 1.14 GB; eager code adds, per layer, the two RMSNorm
  // inputs in fp32 rather than bf16 and their normalized bf16 tensors, K and V repeated to every
  // query head, and silu(gate) (h100-activation-memory-explained.json: 1,665 MiB at the peak).
  const TransformerSpec s = llama3_8b();
  LayerShape fused = flash(1);
  LayerShape eager = fused;
  eager.eager = true;
  const double t = 8192, h = 4096, kv = 1024, f = 14336;
  const double extra = 2 * (2 + 2) * t * h + 2 * 2 * t * (h - kv) + 2 * t * f;
  EXPECT_DOUBLE_EQ(total_bytes(layer_stored_activations(s, eager)),
                   total_bytes(layer_stored_activations(s, fused)) + extra);
  const double measured = 1.626 * (1 << 30);
  EXPECT_NEAR(total_bytes(checkpointed_layer_activations(s, eager, Checkpointing::none)), measured,
              0.01 * measured);
  // The op policy's list was already within 0.1% of the same run's 0.485 GiB.
  EXPECT_NEAR(total_bytes(checkpointed_layer_activations(s, eager, Checkpointing::selective_op)),
              0.485 * (1 << 30), 0.01 * 0.485 * (1 << 30));
}

TEST(Checkpointing, SelectiveOpSavesEveryOtherMatmulAndTheAttentionOutput) {
  // Llama issues q, k, v, o, gate, up, down: q, v, gate and down are saved.
  const TransformerSpec s = llama3_8b();
  const double t = 2 * 8192.0, h = 4096, hkv = 1024, f = 14336;
  const auto kept = checkpointed_layer_activations(s, flash(2), Checkpointing::selective_op);
  std::vector<std::string> names;
  for (const auto& k : kept) names.push_back(k.name);
  EXPECT_EQ(names, (std::vector<std::string>{"layer_input", "q_output", "v_output", "ffn_gate_output",
                                             "ffn_down_output", "attention_output", "softmax_logsumexp"}));
  EXPECT_DOUBLE_EQ(total_bytes(kept), 2 * t * (h + h + hkv + f + h + h) + 4 * 2 * 32 * 8192.0);
  // Between full (the input) and none (everything).
  EXPECT_GT(total_bytes(kept), total_bytes(checkpointed_layer_activations(s, flash(2), Checkpointing::full)));
  EXPECT_LT(total_bytes(kept), total_bytes(checkpointed_layer_activations(s, flash(2), Checkpointing::none)));
}

TEST(Checkpointing, SelectiveOpRecomputesKOutAndUpButNotAttention) {
  const TransformerSpec s = llama3_8b();
  const double t = 8192, h = 4096, hkv = 1024, f = 14336;
  const auto ops = recomputed_forward_ops(s, flash(1), Checkpointing::selective_op);
  EXPECT_DOUBLE_EQ(gemm_flops(ops), 2 * t * (h * hkv + h * h + h * f));
  for (const auto& op : ops) EXPECT_NE(op.kind, OpKind::fused_attention) << op.name;
  // Every memory-bound op of the forward re-runs.
  std::size_t elementwise = 0, forward_elementwise = 0;
  for (const auto& op : ops) elementwise += op.kind == OpKind::elementwise ? 1 : 0;
  for (const auto& op : layer_forward_ops(s, flash(1))) forward_elementwise += op.kind == OpKind::elementwise ? 1 : 0;
  EXPECT_EQ(elementwise, forward_elementwise);
  // About 37% of the layer's forward matmul FLOPs.
  const double share = gemm_flops(ops) / gemm_flops(layer_forward_ops(s, flash(1)));
  EXPECT_GT(share, 0.30);
  EXPECT_LT(share, 0.40);
}

TEST(Checkpointing, SelectiveOpUnderSequenceParallelismAlsoSavesTheReduceScatterOutputs) {
  const TransformerSpec s = llama3_8b();
  const double t = 8192, h = 4096, hkv = 1024, f = 14336, tp = 4;
  LayerShape sharded = flash(1);
  sharded.tp = 4;
  const auto plain = checkpointed_layer_activations(s, sharded, Checkpointing::selective_op);
  sharded.sequence_parallel = true;
  const auto sp = checkpointed_layer_activations(s, sharded, Checkpointing::selective_op);
  ASSERT_EQ(sp.size(), plain.size() + 2);
  EXPECT_EQ(sp[sp.size() - 2].name, "attention_reduce_scatter_output");
  EXPECT_EQ(sp.back().name, "mlp_reduce_scatter_output");
  EXPECT_DOUBLE_EQ(sp.back().bytes, 2 * t * h / tp);
  // The saved matmul outputs are the rank's column slices (q, v, gate) and the row-parallel
  // down projection's partial sum before its reduction.
  double matmuls = 0;
  for (const auto& k : plain)
    if (k.name == "q_output" || k.name == "v_output" || k.name == "ffn_gate_output" || k.name == "ffn_down_output")
      matmuls += k.bytes;
  EXPECT_DOUBLE_EQ(matmuls, 2 * t * (h / tp + hkv / tp + f / tp + h));
  // A quarter of the recomputed matmul FLOPs of one GPU's layer.
  EXPECT_DOUBLE_EQ(gemm_flops(recomputed_forward_ops(s, sharded, Checkpointing::selective_op)),
                   gemm_flops(recomputed_forward_ops(s, flash(1), Checkpointing::selective_op)) / tp);
}

TEST(WeightGradientInputs, AGptLayerKeepsThirtyTwoBytesPerTokenAndHiddenUnit) {
  // Inputs 7 b s h (QKV's, the context, the MLP's, the GELU output of 4h), output gradients
  // 9 b s h (QKV 3h, projection h, MLP in 4h, out h), 2 B each.
  const TransformerSpec gpt{"gpt", 4, 1024, 16, 4096, 50257, 2048, false};
  const double t = 2 * 2048.0, h = 1024;
  EXPECT_DOUBLE_EQ(weight_gradient_inputs_bytes(gpt, flash(2)), 32 * t * h);
  EXPECT_DOUBLE_EQ(head_weight_gradient_inputs_bytes(gpt, flash(2)), 2 * t * (h + 50257));
  LayerShape tp2 = flash(2);
  tp2.tp = 2;
  // Row-parallel inputs and column-parallel output gradients split; the rest whole.
  EXPECT_DOUBLE_EQ(weight_gradient_inputs_bytes(gpt, tp2), 2 * t * (h + h / 2 + h + 2 * h + 3 * h / 2 + h + 2 * h + h));
}

TEST(Checkpointing, SelectiveOpOnAGeluLayerSavesQVAndTheMlpInput) {
  TransformerSpec s{"gpt", 4, 1024, 16, 4096, 50257, 2048, false};
  const auto kept = checkpointed_layer_activations(s, flash(1), Checkpointing::selective_op);
  ASSERT_GE(kept.size(), 4u);
  EXPECT_EQ(kept[1].name, "q_output");
  EXPECT_EQ(kept[2].name, "v_output");
  EXPECT_EQ(kept[3].name, "ffn_in_output");
  const double t = 2048, h = 1024, f = 4096;
  // Recomputed: k, the output projection, the MLP's out.
  EXPECT_DOUBLE_EQ(gemm_flops(recomputed_forward_ops(s, flash(1), Checkpointing::selective_op)),
                   2 * t * (h * h + h * h + f * h));
}

// Megatron's selective recomputation (Korthikanti et al. 2022, section 5) on a small GPT layer:
// s 256, b 2, h 512, a 8, f 4h, TP 4, unfused attention.
TransformerSpec small_gpt() { return {"gpt", 4, 512, 8, 2048, 1000, 256, false}; }
LayerShape unfused(bool sequence_parallel, ModuleKernels mk = ModuleKernels::megatron) {
  return {2, 4, sequence_parallel, false, false, false, mk};
}

std::vector<std::string> names_of(const std::vector<Operation>& ops) {
  std::vector<std::string> out;
  for (const auto& op : ops) out.push_back(op.name);
  return out;
}

TEST(Checkpointing, SelectiveAttentionRecomputesTheCoreAttentionOnly) {
  const TransformerSpec s = small_gpt();
  // Megatron's CoreAttention.forward: baddbmm (scale in alpha), fused scale-mask-softmax,
  // dropout, bmm with V, the context's permute(...).contiguous().
  EXPECT_EQ(names_of(recomputed_forward_ops(s, unfused(true), Checkpointing::selective_attention)),
            (std::vector<std::string>{"attn_scores", "softmax", "attn_dropout", "attn_context", "context_layout_copy"}));
  // Without the module kernels modelled there is no separate layout copy.
  EXPECT_EQ(names_of(recomputed_forward_ops(s, unfused(true, ModuleKernels::fused), Checkpointing::selective_attention)),
            (std::vector<std::string>{"attn_scores", "softmax", "attn_dropout", "attn_context"}));
  // Its matmuls: QK^T and softmax x V, 2 b s^2 h / t each, the paper's 4 b s^2 h per layer / t.
  const double b = 2, sq = 256, h = 512, t = 4;
  EXPECT_DOUBLE_EQ(gemm_flops(recomputed_forward_ops(s, unfused(false), Checkpointing::selective_attention)),
                   4 * b * sq * sq * h / t);
}

TEST(Checkpointing, SelectiveAttentionStoresThePapers34sbhOverT) {
  const TransformerSpec s = small_gpt();
  const double sbh = 256.0 * 2 * 512, t = 4, as_over_h = 8.0 * 256 / 512;
  // Section 4: without recomputation sbh(10 + 24/t + 5as/(ht)) under TP, sbh/t (34 + 5as/h) with
  // sequence parallelism; section 5: selective recomputation drops the 5as/h term.
  EXPECT_DOUBLE_EQ(total_bytes(checkpointed_layer_activations(s, unfused(false), Checkpointing::none)),
                   sbh * (10 + 24 / t + 5 * as_over_h / t));
  EXPECT_DOUBLE_EQ(total_bytes(checkpointed_layer_activations(s, unfused(true), Checkpointing::none)),
                   sbh / t * (34 + 5 * as_over_h));
  EXPECT_DOUBLE_EQ(total_bytes(checkpointed_layer_activations(s, unfused(false), Checkpointing::selective_attention)),
                   sbh * (10 + 24 / t));
  EXPECT_DOUBLE_EQ(total_bytes(checkpointed_layer_activations(s, unfused(true), Checkpointing::selective_attention)),
                   34 * sbh / t);
  // Q, K and V stay (the checkpoint's inputs); nothing s x s does.
  for (const auto& k : checkpointed_layer_activations(s, unfused(true), Checkpointing::selective_attention))
    EXPECT_TRUE(k.name != "softmax_output" && k.name != "attention_dropout_mask" && k.name != "attention_dropout_output")
        << k.name;
  // Between full recomputation (the layer input, 2sbh/t) and none.
  EXPECT_GT(34 * sbh / t, total_bytes(checkpointed_layer_activations(s, unfused(true), Checkpointing::full)));
}

TEST(Checkpointing, SelectiveAttentionWithFusedAttentionRerunsTheKernelAndDropsItsOutputs) {
  // Megatron-core checkpoints the fused attention call: the kernel runs again before the
  // backward; its log-sum-exp is not kept, nor its bf16 output where an FP8 projection keeps its
  // own copy.
  const TransformerSpec s = small_gpt();
  LayerShape shape = unfused(true);
  shape.flash_attention = true;
  EXPECT_EQ(names_of(recomputed_forward_ops(s, shape, Checkpointing::selective_attention)),
            (std::vector<std::string>{"flash_attention"}));
  auto dropped = [&](const LayerShape& sh) {
    return total_bytes(checkpointed_layer_activations(s, sh, Checkpointing::none)) -
           total_bytes(checkpointed_layer_activations(s, sh, Checkpointing::selective_attention));
  };
  const double b = 2, sq = 256, heads = 8.0 / 4, h = 512, t = 4;
  EXPECT_DOUBLE_EQ(dropped(shape), 4 * b * heads * sq);  // the fp32 log-sum-exp only
  shape.fp8.enabled = true;
  EXPECT_DOUBLE_EQ(dropped(shape), 4 * b * heads * sq + 2 * b * sq * h / t);
}

}  // namespace
}  // namespace trainsim::model

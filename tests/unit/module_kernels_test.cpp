// The kernels a framework's module code runs around a biased, fused-QKV layer's GEMMs
// (model/module_kernels.hpp, LayerShape::module_kernels): which run for each framework variant,
// what each reads and writes, and that "fused" leaves the op lists as they were.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "model/device_profile.hpp"
#include "model/host_dispatch.hpp"
#include "model/module_kernels.hpp"
#include "model/published_models.hpp"
#include "model/transformer.hpp"

namespace trainsim::model {
namespace {

// GPT-3 1.3B-like: h 2048, 16 heads, f 8192, seq 2048, biases.
TransformerSpec gpt() { return {"GPT", 24, 2048, 16, 8192, 50257, 2048, false}; }

std::vector<std::string> names(const std::vector<Operation>& ops) {
  std::vector<std::string> out;
  for (const auto& op : ops) out.push_back(op.name);
  return out;
}
const Operation* find(const std::vector<Operation>& ops, const std::string& name) {
  for (const auto& op : ops)
    if (op.name == name) return &op;
  return nullptr;
}
long count_kernel(const std::vector<Operation>& ops, const std::string& kernel) {
  return std::count_if(ops.begin(), ops.end(), [&](const Operation& op) { return op.kernel == kernel; });
}

LayerShape shape(ModuleKernels k, long micro_batch = 2, long tp = 1, bool flash = false) {
  LayerShape s{micro_batch, tp, false, flash};
  s.module_kernels = k;
  return s;
}

TEST(ModuleKernels, TrafficPerKernel) {
  const auto b = bias_grad_reduction("b", 4096, 1024);
  EXPECT_DOUBLE_EQ(b.bytes, 2.0 * (4096 * 1024 + 1024));  // read the gradient, write one row
  EXPECT_EQ(b.kernel, "bias_grad");
  const auto c = chunk_grad_cat("c", 1e6);
  EXPECT_DOUBLE_EQ(c.bytes, 4e6);
  EXPECT_EQ(c.kernel, "chunk_grad_cat");
  const auto p = permute_copy("p", 1e6);
  EXPECT_DOUBLE_EQ(p.bytes, 4e6);
  EXPECT_EQ(p.kernel, "permute_copy");
  EXPECT_DOUBLE_EQ(scalar_multiply("m", 1e6).bytes, 4e6);
}

double bytes_of(const std::vector<Operation>& ops) {
  double b = 0;
  for (const auto& op : ops) b += op.bytes;
  return b;
}

TEST(ModuleKernels, BertPaddingTrafficPerElement) {
  // bf16: a gather reads and writes 4 B per element, the int64 index being a stride-0 expand.
  const auto g = unpad_gather("g", 1e6);
  EXPECT_DOUBLE_EQ(g.bytes, 4e6);
  EXPECT_EQ(g.kernel, "index_gather");
  // Backward: a zeros (2 B) and a scatter_ (4 B), two kernels.
  const auto gg = unpad_gather_grad("gg", 1e6);
  ASSERT_EQ(gg.size(), 2u);
  EXPECT_DOUBLE_EQ(gg[0].bytes, 2e6);
  EXPECT_EQ(gg[0].kernel, "zeros_fill");
  EXPECT_DOUBLE_EQ(gg[1].bytes, 4e6);
  EXPECT_EQ(gg[1].kernel, "index_scatter");
  EXPECT_DOUBLE_EQ(bytes_of(pad_index_put("p", 1e6)), 6e6);
  EXPECT_EQ(pad_index_put("p", 1e6).size(), 2u);
  EXPECT_DOUBLE_EQ(pad_index_put_grad("pg", 1e6).bytes, 4e6);
}

TEST(ModuleKernels, MptFlashUnpadsQkvAndPadsTheOutputAroundTheKernel) {
  // Llama-3 8B shapes: 8 KV heads of 32, so k and v are a quarter of q's size.
  const auto s = llama3_8b(2048);
  const double t = 2.0 * 2048, h = 4096, hkv = 1024;
  const auto mpt_fwd = layer_forward_ops(s, shape(ModuleKernels::mpt, 2, 1, true));
  const auto mpt_bwd = layer_backward_ops(s, shape(ModuleKernels::mpt, 2, 1, true));
  const auto fwd = layer_forward_ops(s, shape(ModuleKernels::mpt_flash, 2, 1, true));
  const auto bwd = layer_backward_ops(s, shape(ModuleKernels::mpt_flash, 2, 1, true));
  // 3 gathers + 2 pad kernels, and 11 index kernels per unpad_input call (the next test).
  EXPECT_EQ(fwd.size(), mpt_fwd.size() + 5 + 3 * 11);
  EXPECT_EQ(bwd.size(), mpt_bwd.size() + 7);
  // Gathers, then the kernel, then the pad; nothing else moves.
  const auto n = names(fwd);
  const auto at = [&](const std::string& x) { return std::find(n.begin(), n.end(), x) - n.begin(); };
  EXPECT_LT(at("qkv"), at("unpad_q"));
  EXPECT_LT(at("unpad_v"), at("flash_attention"));
  EXPECT_LT(at("flash_attention"), at("pad_out_zeros"));
  EXPECT_LT(at("pad_out_index_put"), at("attn_out"));
  EXPECT_DOUBLE_EQ(find(fwd, "unpad_q")->bytes, 4.0 * t * h);
  EXPECT_DOUBLE_EQ(find(fwd, "unpad_k")->bytes, 4.0 * t * hkv);
  // Per call the index kernels move 19 B per token (mask cast 1 + 4, row sum 4, count 1,
  // select 1 + 8) and 28 B per sequence (sum 4, max 4, cumsum 8, pad 4 + 8) plus 8 (the count
  // 4, the pad's extra element 4).
  const double index_bytes = 19 * t + 28 * 2 + 8;
  EXPECT_DOUBLE_EQ(bytes_of(fwd) - bytes_of(mpt_fwd), 4.0 * t * (h + 2 * hkv) + 6.0 * t * h + 3 * index_bytes);
  EXPECT_DOUBLE_EQ(bytes_of(bwd) - bytes_of(mpt_bwd), 4.0 * t * h + 6.0 * t * (h + 2 * hkv));
  EXPECT_EQ(count_kernel(bwd, "zeros_fill"), 3);
  EXPECT_DOUBLE_EQ(find(bwd, "unpad_v_grad_scatter")->bytes, 4.0 * t * hkv);
  EXPECT_DOUBLE_EQ(find(bwd, "pad_out_grad")->bytes, 4.0 * t * h);
}

TEST(ModuleKernels, UnpadInputSynchronisesAfterNonzerosCountAndAfterTheMaxsItem) {
  const auto ops = unpad_index_ops("u", 4, 2048);
  ASSERT_EQ(ops.size(), 11u);  // one op per kernel
  std::vector<std::string> synced;
  for (const auto& op : ops) {
    EXPECT_EQ(op.kernels, 1) << op.name;
    if (op.host_sync_after) synced.push_back(op.name);
  }
  EXPECT_EQ(synced, (std::vector<std::string>{"u_nonzero_count", "u_seqlens_max"}));
  EXPECT_DOUBLE_EQ(find(ops, "u_nonzero_select")->bytes, 9.0 * 4 * 2048);  // mask read, int64 index written
  EXPECT_DOUBLE_EQ(find(ops, "u_seqlens_max")->bytes, 4.0 * 4);
}

TEST(ModuleKernels, MptFlashCutsTheLayerForwardAtSixHostSyncs) {
  const auto s = llama3_8b(2048);
  const auto fwd = layer_forward_ops(s, shape(ModuleKernels::mpt_flash, 2, 1, true));
  const auto runs = split_at_host_syncs(fwd);
  ASSERT_EQ(runs.size(), 7u);  // q, k and v: nonzero's count and .item() each
  // Between the syncs: nonzero's select (2) and the max (1); then cumsum (2), pad (2), the
  // gather and the next call's mask sum (2) and nonzero count (2).
  std::vector<int> between;
  for (std::size_t r = 1; r + 1 < runs.size(); ++r) between.push_back(ops_kernels(runs[r]));
  EXPECT_EQ(between, (std::vector<int>{3, 9, 3, 9, 3}));
  EXPECT_EQ(runs.front().back().name, "unpad_q_nonzero_count");
  EXPECT_EQ(runs.back().front().name, "unpad_v_cumsum_init");
  // Nothing else synchronises: the mpt layer is one run, and so is every backward.
  EXPECT_EQ(split_at_host_syncs(layer_forward_ops(s, shape(ModuleKernels::mpt, 2, 1, true))).size(), 1u);
  EXPECT_EQ(split_at_host_syncs(layer_backward_ops(s, shape(ModuleKernels::mpt_flash, 2, 1, true))).size(), 1u);
}

TEST(ModuleKernels, FusedLeavesTheOpListsAlone) {
  const auto s = gpt();
  LayerShape plain{2};
  EXPECT_EQ(names(layer_forward_ops(s, plain)), names(layer_forward_ops(s, shape(ModuleKernels::fused))));
  EXPECT_EQ(names(layer_backward_ops(s, plain)), names(layer_backward_ops(s, shape(ModuleKernels::fused))));
}

TEST(ModuleKernels, MegatronReducesFourBiasesSplitsQkvAndCopiesTheContext) {
  const auto s = gpt();
  const double t = 2.0 * 2048, h = 2048;
  const auto fwd = layer_forward_ops(s, shape(ModuleKernels::megatron));
  const auto bwd = layer_backward_ops(s, shape(ModuleKernels::megatron));
  EXPECT_EQ(count_kernel(bwd, "bias_grad"), 4);
  EXPECT_DOUBLE_EQ(find(bwd, "qkv_bias_grad")->bytes, 2.0 * (t * 3 * h + 3 * h));
  EXPECT_DOUBLE_EQ(find(bwd, "ffn_in_bias_grad")->bytes, 2.0 * (t * 4 * h + 4 * h));
  ASSERT_NE(find(bwd, "qkv_split_grad_cat"), nullptr);
  EXPECT_DOUBLE_EQ(find(bwd, "qkv_split_grad_cat")->bytes, 4.0 * t * 3 * h);
  ASSERT_NE(find(fwd, "context_layout_copy"), nullptr);
  EXPECT_DOUBLE_EQ(find(fwd, "context_layout_copy")->bytes, 4.0 * t * h);
  // Scaled inside baddbmm, no layout copy of the QKV gradient.
  EXPECT_EQ(find(fwd, "attn_scale"), nullptr);
  EXPECT_EQ(find(bwd, "qkv_grad_layout_copy"), nullptr);
  // The split's cat runs before the QKV GEMM's gradients, each bias's reduction before its GEMM's.
  const auto n = names(bwd);
  const auto at = [&](const std::string& x) { return std::find(n.begin(), n.end(), x) - n.begin(); };
  EXPECT_LT(at("qkv_split_grad_cat"), at("qkv_bias_grad"));
  EXPECT_LT(at("qkv_bias_grad"), at("qkv_dgrad"));
}

TEST(ModuleKernels, TensorParallelSplitsColumnsNotTheRowParallelBias) {
  const auto s = gpt();
  const double t = 2.0 * 2048, h = 2048;
  const auto bwd = layer_backward_ops(s, shape(ModuleKernels::megatron, 2, 4));
  EXPECT_DOUBLE_EQ(find(bwd, "qkv_bias_grad")->bytes, 2.0 * (t * 3 * h / 4 + 3 * h / 4));
  EXPECT_DOUBLE_EQ(find(bwd, "attn_out_bias_grad")->bytes, 2.0 * (t * h + h));  // added after the all-reduce
  EXPECT_DOUBLE_EQ(find(bwd, "qkv_split_grad_cat")->bytes, 4.0 * t * 3 * h / 4);
}

TEST(ModuleKernels, MptHasNoCopiesAroundItsFlashKernel) {
  const auto s = gpt();
  const auto fwd = layer_forward_ops(s, shape(ModuleKernels::mpt, 2, 1, true));
  const auto bwd = layer_backward_ops(s, shape(ModuleKernels::mpt, 2, 1, true));
  EXPECT_EQ(count_kernel(fwd, "permute_copy") + count_kernel(bwd, "permute_copy"), 0);
  EXPECT_EQ(count_kernel(bwd, "chunk_grad_cat_wide"), 1);
  EXPECT_EQ(count_kernel(bwd, "chunk_grad_cat"), 0);
  EXPECT_EQ(count_kernel(bwd, "bias_grad"), 4);
}

TEST(ModuleKernels, MptJoinsWholeProjectionOutputsMegatronHeadInterleavedColumns) {
  // llm-foundry's qkv.chunk(3, dim=2) on [b, s, 3d]: the cat joins d-wide runs (the stream-copy
  // class), Megatron's split head_dim-wide ones (the measured narrow-run cat).
  const auto s = gpt();
  const double t = 2.0 * 2048, h = 2048;
  const auto mpt = layer_backward_ops(s, shape(ModuleKernels::mpt, 2, 1, true));
  ASSERT_NE(find(mpt, "qkv_split_grad_cat"), nullptr);
  EXPECT_EQ(find(mpt, "qkv_split_grad_cat")->kernel, "chunk_grad_cat_wide");
  EXPECT_DOUBLE_EQ(find(mpt, "qkv_split_grad_cat")->bytes, 4.0 * t * 3 * h);
  const auto flash = layer_backward_ops(s, shape(ModuleKernels::mpt_flash, 2, 1, true));
  EXPECT_EQ(find(flash, "qkv_split_grad_cat")->kernel, "chunk_grad_cat_wide");
  const auto megatron = layer_backward_ops(s, shape(ModuleKernels::megatron));
  EXPECT_EQ(find(megatron, "qkv_split_grad_cat")->kernel, "chunk_grad_cat");
  // On the H100 profile the wide cat streams at the copy rate (no sample of its own), about
  // three times the narrow cat's measured rate, as measured for both (module_kernels.hpp).
  const DeviceProfile dev = load_device_profile("topologies/devices/h100-80gb.json");
  EXPECT_DOUBLE_EQ(memory_bound_rate(dev, "chunk_grad_cat_wide"), achieved_memory_bandwidth(dev));
  EXPECT_GT(memory_bound_rate(dev, "chunk_grad_cat_wide"), 2.5 * memory_bound_rate(dev, "chunk_grad_cat"));
}

TEST(ModuleKernels, ResidualGradientsWithoutDropoutAreSummedByOneAdd) {
  // x + f(x): autograd sums the two gradients reaching x (read two, write one), the forward's
  // add kernel; with dropout the masked scale runs first (the generic backward rule).
  TransformerSpec s = gpt();
  s.dropout = false;
  const double act = 2.0 * 2048 * 2048 * 2;
  const auto bwd = layer_backward_ops(s, shape(ModuleKernels::mpt, 2, 1, true));
  for (const char* name : {"residual_1_grad_sum", "residual_2_grad_sum"}) {
    ASSERT_NE(find(bwd, name), nullptr) << name;
    EXPECT_DOUBLE_EQ(find(bwd, name)->bytes, 3 * act);
    EXPECT_EQ(find(bwd, name)->kernel, "residual_add");
    EXPECT_EQ(find(bwd, name)->kernels, 1);
  }
  EXPECT_EQ(find(bwd, "residual_2_bwd"), nullptr);
  s.dropout = true;
  const auto with_dropout = layer_backward_ops(s, shape(ModuleKernels::mpt, 2, 1, true));
  ASSERT_NE(find(with_dropout, "residual_2_bwd"), nullptr);
  EXPECT_EQ(find(with_dropout, "residual_2_bwd")->kernel, "residual_add_bwd");
  EXPECT_EQ(find(with_dropout, "residual_2_grad_sum"), nullptr);
}

TEST(ModuleKernels, TorchLayerScalesScoresAndCopiesLayouts) {
  const auto s = gpt();
  const double t = 2.0 * 2048, h = 2048, scores = 2.0 * 16 * 2048 * 2048;
  const auto fwd = layer_forward_ops(s, shape(ModuleKernels::torch_layer));
  const auto bwd = layer_backward_ops(s, shape(ModuleKernels::torch_layer));
  EXPECT_DOUBLE_EQ(find(fwd, "attn_scale")->bytes, 2.0 * 2 * scores);
  EXPECT_DOUBLE_EQ(find(bwd, "attn_scale_bwd")->bytes, 2.0 * 2 * scores);
  EXPECT_DOUBLE_EQ(find(bwd, "qkv_grad_layout_copy")->bytes, 4.0 * t * 3 * h);
  const auto flash_bwd = layer_backward_ops(s, shape(ModuleKernels::torch_layer, 2, 1, true));
  EXPECT_EQ(find(flash_bwd, "attn_scale_bwd"), nullptr);
  EXPECT_EQ(count_kernel(flash_bwd, "permute_copy"), 2);  // the QKV gradient and SDPA output gradient (profile: three direct copies with the context)
  // One sequence: SDPA's layouts are views; the QKV gradient is still copied back.
  const auto one_fwd = layer_forward_ops(s, shape(ModuleKernels::torch_layer, 1, 1, true));
  const auto one_bwd = layer_backward_ops(s, shape(ModuleKernels::torch_layer, 1, 1, true));
  EXPECT_EQ(count_kernel(one_fwd, "permute_copy"), 0);
  EXPECT_EQ(count_kernel(one_bwd, "permute_copy"), 1);
}

TEST(ModuleKernels, NoBiasesNoReductions) {
  auto s = llama3_8b(2048);
  const auto bwd = layer_backward_ops(s, shape(ModuleKernels::megatron, 1, 1, true));
  EXPECT_EQ(count_kernel(bwd, "bias_grad"), 0);
}

}  // namespace
}  // namespace trainsim::model

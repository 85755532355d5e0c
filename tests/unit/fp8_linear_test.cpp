// FP8 linear layers (model/fp8_linear.hpp): which GEMMs run in FP8, the casts' bytes for
// Transformer Engine and torchao, what an FP8 layer stores, and the device profile's second
// (fp8) GEMM calibration. Plain model code, no SimGrid.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "support/fixtures.hpp"
#include "core/error.hpp"
#include "core/json_reader.hpp"
#include "model/compute_cost.hpp"
#include "model/device_profile.hpp"
#include "model/fp8_linear.hpp"
#include "model/kernel_calibration.hpp"
#include "model/transformer.hpp"

namespace trainsim::model {
namespace {

/// GPT-style layer with round shapes: h 1024, f 4096, 16 heads, seq 512.
TransformerSpec gpt() {
  TransformerSpec s;
  s.name = "gpt";
  s.layers = 2;
  s.hidden = 1024;
  s.heads = 16;
  s.ffn_hidden = 4096;
  s.vocab = 1000;
  s.seq_len = 512;
  s.final_norm = true;
  s.embedding_norm = false;
  return s;
}

Fp8Linears transformer_engine(double micro_batches) {
  Fp8Linears f;
  f.enabled = true;
  f.dynamic_scaling = false;
  f.fused_transpose = true;
  f.weight_casts_per_micro_batch = 1.0 / micro_batches;
  f.norm_writes_input = true;
  f.sequence_gathers_fp8 = true;
  return f;
}

Fp8Linears torchao(bool compiled) {
  Fp8Linears f;
  f.enabled = true;
  f.dynamic_scaling = true;
  f.fused_transpose = compiled;
  f.backward_recasts = true;
  return f;
}

LayerShape shape_with(const Fp8Linears& f) {
  LayerShape shape{2};
  shape.flash_attention = true;
  shape.fp8 = f;
  return shape;
}

const Operation* find(const std::vector<Operation>& ops, const std::string& name) {
  for (const auto& op : ops)
    if (op.name == name) return &op;
  return nullptr;
}

double gemm_flops(const std::vector<Operation>& ops) {
  double f = 0;
  for (const auto& op : ops)
    if (op.kind == OpKind::gemm) f += op.flops;
  return f;
}

TEST(Fp8Linear, ProjectionsRunInFp8AttentionStaysBf16AndFlopsAreUnchanged) {
  const TransformerSpec s = gpt();
  const auto bf16 = layer_forward_ops(s, shape_with({}));
  const auto fp8 = layer_forward_ops(s, shape_with(transformer_engine(1)));
  for (const char* name : {"qkv", "attn_out", "ffn_in", "ffn_out"}) {
    const Operation* op = find(fp8, name);
    ASSERT_NE(op, nullptr) << name;
    EXPECT_EQ(op->dtype, Dtype::fp8) << name;
    // 1-byte operands, bf16 output.
    EXPECT_DOUBLE_EQ(op->bytes, op->m * op->k + op->k * op->n + 2 * op->m * op->n) << name;
  }
  EXPECT_EQ(find(fp8, "flash_attention")->kind, OpKind::fused_attention);
  EXPECT_DOUBLE_EQ(gemm_flops(fp8), gemm_flops(bf16));
  const auto back = layer_backward_ops(s, shape_with(transformer_engine(1)));
  EXPECT_EQ(find(back, "ffn_in_dgrad")->dtype, Dtype::fp8);
  EXPECT_EQ(find(back, "ffn_in_wgrad")->dtype, Dtype::fp8);
  // Forward products accumulate fast, their gradients in full precision (both implementations).
  for (const auto& f : {transformer_engine(1), torchao(true)}) {
    const auto fwd = layer_forward_ops(s, shape_with(f));
    const auto bwd = layer_backward_ops(s, shape_with(f));
    for (const std::string name : {"qkv", "attn_out", "ffn_in", "ffn_out"}) {
      EXPECT_EQ(find(fwd, name)->accumulation, Accumulation::fast) << name;
      EXPECT_EQ(find(bwd, name + "_dgrad")->accumulation, Accumulation::full) << name;
      EXPECT_EQ(find(bwd, name + "_wgrad")->accumulation, Accumulation::full) << name;
    }
  }
  EXPECT_DOUBLE_EQ(gemm_flops(back), gemm_flops(layer_backward_ops(s, shape_with({}))));
  // The head's vocabulary projection stays bf16 (neither implementation casts it).
  for (const auto& op : head_forward_ops(s, shape_with(transformer_engine(1))))
    if (op.kind == OpKind::gemm) { EXPECT_EQ(op.dtype, Dtype::bf16); }
}

TEST(Fp8Linear, TransformerEngineCastsTransposeInOneKernelAndWeightsOncePerStep) {
  const TransformerSpec s = gpt();
  const double t = 2 * 512;  // tokens of the micro-batch
  const auto fwd = layer_forward_ops(s, shape_with(transformer_engine(4)));
  // The MLP's second linear (no norm before it, no sequence parallelism): read bf16 (2), write
  // FP8 and its transpose (1 + 1); scale from the amax history.
  const Operation* in = find(fwd, "ffn_out_input_fp8_cast");
  ASSERT_NE(in, nullptr);
  EXPECT_DOUBLE_EQ(in->bytes, 4 * t * 4096);
  EXPECT_EQ(in->kernels, 1);
  // Weight: the same per element, a quarter of it per micro-batch (4 micro-batches a step).
  EXPECT_DOUBLE_EQ(find(fwd, "ffn_in_weight_fp8_cast")->bytes, 4 * 1024.0 * 4096 / 4);
  const auto back = layer_backward_ops(s, shape_with(transformer_engine(4)));
  EXPECT_DOUBLE_EQ(find(back, "ffn_in_grad_output_fp8_cast")->bytes, 4 * t * 4096);
  EXPECT_EQ(find(back, "ffn_out_input_fp8_transpose"), nullptr);  // the cast wrote it
  EXPECT_EQ(find(back, "ffn_out_grad_output_fp8_transpose"), nullptr);
}

TEST(Fp8Linear, TransformerEngineNormsWriteTheFp8InputOfQkvAndTheFirstMlpLinear) {
  const double t = 2 * 512;
  for (const MlpKind mlp : {MlpKind::gelu, MlpKind::swiglu}) {
    TransformerSpec s = gpt();
    s.mlp = mlp;
    if (mlp == MlpKind::swiglu) s.norm = NormKind::rmsnorm;
    const std::string first = mlp == MlpKind::gelu ? "ffn_in" : "ffn_gate_up";
    const std::string norm_1 = mlp == MlpKind::gelu ? "layernorm_1" : "rmsnorm_1";
    const std::string norm_2 = mlp == MlpKind::gelu ? "layernorm_2" : "rmsnorm_2";
    const auto bf16_fwd = layer_forward_ops(s, shape_with({}));
    const auto bf16_back = layer_backward_ops(s, shape_with({}));
    const auto fwd = layer_forward_ops(s, shape_with(transformer_engine(1)));
    const auto back = layer_backward_ops(s, shape_with(transformer_engine(1)));
    // LayerNormLinear: no cast of the norm's output; the norm reads bf16 (2) and writes FP8 (1).
    for (const std::string& name : {std::string("qkv"), first}) EXPECT_EQ(find(fwd, name + "_input_fp8_cast"), nullptr);
    for (const std::string& norm : {norm_1, norm_2}) {
      EXPECT_DOUBLE_EQ(find(fwd, norm)->bytes, 3 * t * 1024) << norm;
      EXPECT_DOUBLE_EQ(find(bf16_fwd, norm)->bytes, 4 * t * 1024) << norm;
      // Its backward is the bf16 norm's, two kernels.
      EXPECT_DOUBLE_EQ(find(back, norm + "_bwd")->bytes, find(bf16_back, norm + "_bwd")->bytes) << norm;
      EXPECT_EQ(find(back, norm + "_bwd")->kernels, 2) << norm;
    }
    // The norm wrote no transpose: the backward makes it (FP8 read and write) for the weight gradient.
    for (const std::string& name : {std::string("qkv"), first}) {
      const Operation* tr = find(back, name + "_input_fp8_transpose");
      ASSERT_NE(tr, nullptr) << name;
      EXPECT_DOUBLE_EQ(tr->bytes, 2 * t * 1024) << name;
      EXPECT_EQ(tr->kernels, 1);
    }
    // The attention output's and the MLP's second linear are no norm's: cast and transposed at once.
    EXPECT_DOUBLE_EQ(find(fwd, "attn_out_input_fp8_cast")->bytes, 4 * t * 1024);
    EXPECT_EQ(find(back, "attn_out_input_fp8_transpose"), nullptr);
  }
  // Eager module code (separate q, k, v): no LayerNormLinear, each input cast as before.
  LayerShape eager = shape_with(transformer_engine(1));
  eager.eager = true;
  const auto fwd = layer_forward_ops(gpt(), eager);
  EXPECT_DOUBLE_EQ(find(fwd, "q_input_fp8_cast")->bytes, 4 * t * 1024);
  EXPECT_DOUBLE_EQ(find(fwd, "layernorm_1")->bytes, 4 * t * 1024);
}

TEST(Fp8Linear, TransformerEngineUnderSequenceParallelismCastsShardsAndTransposesAfterTheGather) {
  const TransformerSpec s = gpt();
  LayerShape shape = shape_with(transformer_engine(1));
  shape.tp = 4;
  shape.sequence_parallel = true;
  const double t = 2 * 512, h = 1024;
  const auto fwd = layer_forward_ops(s, shape);
  const auto back = layer_backward_ops(s, shape);
  // The norm writes this rank's FP8 shard; the backward transposes the re-gathered input (every token).
  EXPECT_DOUBLE_EQ(find(fwd, "layernorm_1")->bytes, 3 * t / 4 * h);
  EXPECT_DOUBLE_EQ(find(back, "qkv_input_fp8_transpose")->bytes, 2 * t * h);
  // Row-parallel: the input (every token, this rank's columns) cast without its transpose, which
  // the backward makes.
  EXPECT_DOUBLE_EQ(find(fwd, "attn_out_input_fp8_cast")->bytes, 3 * t * h / 4);
  EXPECT_DOUBLE_EQ(find(back, "attn_out_input_fp8_transpose")->bytes, 2 * t * h / 4);
  // Its output gradient arrives sequence-sharded: cast there (2 + 1), gathered in FP8, transposed whole.
  EXPECT_DOUBLE_EQ(find(back, "attn_out_grad_output_fp8_cast")->bytes, 3 * t / 4 * h);
  EXPECT_DOUBLE_EQ(find(back, "attn_out_grad_output_fp8_transpose")->bytes, 2 * t * h);
  // A column-parallel linear's gradient is not gathered: one cast-transpose.
  EXPECT_DOUBLE_EQ(find(back, "qkv_grad_output_fp8_cast")->bytes, 4 * t * 3 * h / 4);
  EXPECT_EQ(find(back, "qkv_grad_output_fp8_transpose"), nullptr);
}

TEST(Fp8Linear, TorchaoReadsEachTensorForItsAmaxAndEagerCodeTransposesApart) {
  const TransformerSpec s = gpt();
  const double t = 2 * 512;
  const auto compiled = layer_forward_ops(s, shape_with(torchao(true)));
  // amax read (2) + cast read (2) + FP8 write (1) + transposed write (1), every forward.
  EXPECT_DOUBLE_EQ(find(compiled, "ffn_in_input_fp8_cast")->bytes, 6 * t * 1024);
  EXPECT_EQ(find(compiled, "ffn_in_input_fp8_cast")->kernels, 2);
  EXPECT_DOUBLE_EQ(find(compiled, "ffn_in_weight_fp8_cast")->bytes, 6 * 1024.0 * 4096);
  const auto eager_fwd = layer_forward_ops(s, shape_with(torchao(false)));
  // Eager torchao: abs (2 + 2), max (2), to(float32) (2 + 4), * scale (4 + 4), clamp (4 + 4),
  // to(float8) (4 + 1): six kernels, 33 bytes per element.
  EXPECT_DOUBLE_EQ(find(eager_fwd, "ffn_in_input_fp8_cast")->bytes, 33 * t * 1024);
  EXPECT_EQ(find(eager_fwd, "ffn_in_input_fp8_cast")->kernels, 6);
  const auto eager_back = layer_backward_ops(s, shape_with(torchao(false)));
  const Operation* tr = find(eager_back, "ffn_in_input_fp8_transpose");
  ASSERT_NE(tr, nullptr);
  EXPECT_DOUBLE_EQ(tr->bytes, 2 * t * 1024);  // FP8 read and write
  EXPECT_NE(find(eager_back, "ffn_in_weight_fp8_transpose"), nullptr);
  EXPECT_NE(find(eager_back, "ffn_in_grad_output_fp8_transpose"), nullptr);
}

TEST(Fp8Linear, EagerTorchaoRecastsTheInputAndTheGradientInTheBackwardCompiledCodeDoesNot) {
  const TransformerSpec s = gpt();
  const double t = 2 * 512;
  const auto eager_back = layer_backward_ops(s, shape_with(torchao(false)));
  // The bf16 input saved by matmul_with_hp_or_float8_args, cast again for the weight gradient,
  // and the gradient cast a second time: eager chains of six kernels, 33 B per element.
  const Operation* recast = find(eager_back, "ffn_in_input_fp8_recast");
  ASSERT_NE(recast, nullptr);
  EXPECT_DOUBLE_EQ(recast->bytes, 33 * t * 1024);
  EXPECT_EQ(recast->kernels, 6);
  ASSERT_NE(find(eager_back, "ffn_in_grad_output_fp8_cast_for_grad_weight"), nullptr);
  // Compiled: CSE merges them with the first casts.
  const auto compiled_back = layer_backward_ops(s, shape_with(torchao(true)));
  EXPECT_EQ(find(compiled_back, "ffn_in_input_fp8_recast"), nullptr);
  EXPECT_EQ(find(compiled_back, "ffn_in_grad_output_fp8_cast_for_grad_weight"), nullptr);
  // Transformer Engine keeps its FP8 transposed input: no re-cast.
  EXPECT_EQ(find(layer_backward_ops(s, shape_with(transformer_engine(1))), "ffn_in_input_fp8_recast"), nullptr);
}

TEST(Fp8Linear, WeightsGatheredInFp8AreNotCastButTransposedForTheDataGradient) {
  const TransformerSpec s = gpt();
  Fp8Linears f = torchao(true);
  f.weights_gathered_fp8 = true;
  const auto fwd = layer_forward_ops(s, shape_with(f));
  EXPECT_EQ(find(fwd, "ffn_in_weight_fp8_cast"), nullptr);
  EXPECT_NE(find(fwd, "ffn_in_input_fp8_cast"), nullptr);  // activations are still cast
  const auto back = layer_backward_ops(s, shape_with(f));
  const Operation* tr = find(back, "ffn_in_weight_fp8_transpose");
  ASSERT_NE(tr, nullptr);
  EXPECT_DOUBLE_EQ(tr->bytes, 2 * 1024.0 * 4096);
  // Without the FP8 gather the compiled cast wrote the transposed weight: no copy.
  EXPECT_EQ(find(layer_backward_ops(s, shape_with(torchao(true))), "ffn_in_weight_fp8_transpose"), nullptr);
}

TEST(Fp8Linear, SequenceParallelColumnInputsAreCastBeforeTheGather) {
  const TransformerSpec s = gpt();
  Fp8Linears f = transformer_engine(1);  // a column-parallel Linear with no norm before it
  f.norm_writes_input = false;
  f.sequence_gathers_fp8 = false;
  LayerShape shape = shape_with(f);
  shape.tp = 4;
  shape.sequence_parallel = true;
  const double t = 2 * 512;
  const auto fwd = layer_forward_ops(s, shape);
  EXPECT_DOUBLE_EQ(find(fwd, "qkv_input_fp8_cast")->bytes, 4 * t / 4 * 1024);           // this rank's tokens
  EXPECT_DOUBLE_EQ(find(fwd, "ffn_out_input_fp8_cast")->bytes, 4 * t * 4096 / 4);       // row-parallel: whole input
}

TEST(Fp8Linear, LinearInputsAreStoredInFp8) {
  const TransformerSpec s = gpt();
  const auto bf16 = layer_stored_activations(s, shape_with({}));
  const auto fp8 = layer_stored_activations(s, shape_with(transformer_engine(1)));
  auto bytes_of = [](const std::vector<StoredTensor>& ts, const std::string& name) {
    for (const auto& t : ts)
      if (t.name == name) return t.bytes;
    return -1.0;
  };
  for (const char* name : {"qkv_input", "mlp_input", "mlp_out_input"})
    EXPECT_DOUBLE_EQ(bytes_of(fp8, name), bytes_of(bf16, name) / 2) << name;
  // Flash attention keeps its bf16 output; the projection keeps an FP8 copy beside it.
  EXPECT_DOUBLE_EQ(bytes_of(fp8, "attention_output"), bytes_of(bf16, "attention_output"));
  EXPECT_DOUBLE_EQ(bytes_of(fp8, "attention_output_fp8"), bytes_of(bf16, "attention_output") / 2);
  EXPECT_LT(total_bytes(fp8), total_bytes(bf16));
}

TEST(Fp8Linear, LinearWeightsCountTheProjectionMatrices) {
  TransformerSpec s = gpt();
  EXPECT_DOUBLE_EQ(linear_weight_parameters(s), 4 * 1024.0 * 1024 + 2 * 1024.0 * 4096);
  s.mlp = MlpKind::swiglu;
  s.kv_heads = 4;  // head dim 64: k and v 256 wide
  EXPECT_DOUBLE_EQ(linear_weight_parameters(s), 2 * 1024.0 * 1024 + 2 * 1024.0 * 256 + 3 * 1024.0 * 4096);
}

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string file = ::testing::TempDir() + "fp8_linear_test_" + name;
  std::ofstream(file) << text;
  return file;
}

TEST(Fp8Gemm, RunsAtTheFp8CurveOfTheProfilesSecondCalibration) {
  const DeviceProfile dev = load_device_profile("tests/data/fp8/device.json");
  ASSERT_NE(gemm_curve(dev, Dtype::fp8), nullptr);
  ASSERT_NE(gemm_curve(dev, Dtype::fp8, Accumulation::fast), nullptr);
  EXPECT_EQ(gemm_curve(dev, Dtype::bf16, Accumulation::fast), nullptr);
  ASSERT_EQ(dev.extra_gemm_calibrations.size(), 2u);
  const Operation b = make_gemm("b", 8192, 8192, 8192, 1, Dtype::bf16);
  const Operation f = make_fp8_gemm("f", 8192, 8192, 8192, 1);
  const Operation fast = make_fp8_gemm("fast", 8192, 8192, 8192, 1, Accumulation::fast);
  EXPECT_NEAR(gemm_rate(b, dev), 400e12, 1e3);
  EXPECT_NEAR(gemm_rate(f, dev), 800e12, 1e3);
  EXPECT_NEAR(gemm_rate(fast, dev), 1000e12, 1e3);
  EXPECT_NEAR(op_duration(b, dev) / op_duration(f, dev), 2.0, 1e-9);
}

TEST(Fp8Gemm, OneFp8AccumulationWithoutTheOtherIsAConfigError) {
  // Either curve alone would silently time the other pass's products: rejected.
  for (int keep : {0, 1}) {
    auto doc = read_json_file("tests/data/fp8/device.json");
    const std::string kept = doc["gemm_calibrations"][keep]["file"];
    doc["kernel_calibration"]["file"] = std::filesystem::absolute("tests/data/fp8/bf16-gemms.json").string();
    doc["gemm_calibrations"] = nlohmann::json::array({{{"file", std::filesystem::absolute("tests/data/fp8/" + kept).string()}}});
    const ConfigError e = testing_support::config_error_of(
        [](const std::string& f) { return load_device_profile(f); }, write_temp("one-acc.json", doc.dump(2)));
    EXPECT_EQ(e.json_path(), "/gemm_calibrations");
    EXPECT_NE(std::string(e.what()).find(keep == 0 ? "found only full" : "found only fast"), std::string::npos)
        << e.what();
  }
}

TEST(Fp8Gemm, FastAccumulationIsAnFp8SampleAttributeAndRoundTrips) {
  auto doc = read_json_file("tests/data/fp8/fp8-fast-gemms.json");
  KernelCalibration c = load_kernel_calibration("tests/data/fp8/fp8-fast-gemms.json");
  ASSERT_EQ(c.gemm.size(), 2u);
  EXPECT_EQ(c.gemm[0].accumulation, Accumulation::fast);
  std::ostringstream out;
  write_kernel_calibration(out, c);
  const KernelCalibration back = load_kernel_calibration(write_temp("fast-rt.json", out.str()));
  EXPECT_EQ(back.gemm[1].accumulation, Accumulation::fast);
  doc["gemm"][0]["dtype"] = "bf16";
  const ConfigError e = testing_support::config_error_of(
      [](const std::string& f) { return load_kernel_calibration(f); }, write_temp("bf16-fast.json", doc.dump(2)));
  EXPECT_EQ(e.json_path(), "/gemm/0/accumulation");
}

TEST(Fp8Gemm, NoFp8SamplesIsAnErrorNotABf16Rate) {
  const DeviceProfile dev = testing_support::round_number_device();
  EXPECT_THROW((void)gemm_rate(make_fp8_gemm("f", 1024, 1024, 1024, 1), dev), InvariantError);
}

TEST(Fp8Gemm, ACalibrationRepeatingADtypeIsAConfigError) {
  namespace fs = std::filesystem;
  // A profile whose second file samples bf16 again: rejected, naming the entry.
  auto doc = read_json_file("tests/data/fp8/device.json");
  doc["kernel_calibration"]["file"] = fs::absolute("tests/data/fp8/bf16-gemms.json").string();
  doc["gemm_calibrations"][0]["file"] = fs::absolute("tests/data/fp8/bf16-gemms.json").string();
  const std::string file = write_temp("repeat.json", doc.dump(2));
  const ConfigError e = testing_support::config_error_of(
      [](const std::string& f) { return load_device_profile(f); }, file);
  EXPECT_EQ(e.json_path(), "/gemm_calibrations/0/file");
  EXPECT_NE(std::string(e.what()).find("bf16 is already sampled"), std::string::npos) << e.what();
  // Extra GEMM files need a kernel calibration to add to.
  doc.erase("kernel_calibration");
  const ConfigError e2 = testing_support::config_error_of(
      [](const std::string& f) { return load_device_profile(f); }, write_temp("alone.json", doc.dump(2)));
  EXPECT_EQ(e2.json_path(), "/gemm_calibrations");
}

}  // namespace
}  // namespace trainsim::model

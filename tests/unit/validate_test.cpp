// The CPU side of trainsim-validate: nccl-tests' metrics, the measurement file, the GEMM sweep,
// calibration writing through the harness's own path, the layer comparison, argument parsing.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "arguments.hpp"
#include "bus_bandwidth.hpp"
#include "calibration_output.hpp"
#include "collective_measurements.hpp"
#include "core/error.hpp"
#include "framework_layers.hpp"
#include "gemm_sweep.hpp"
#include "layer_comparison.hpp"
#include "layer_reference.hpp"
#include "layer_table.hpp"
#include "mpt_block_ops.hpp"
#include "model/compute_cost.hpp"
#include "named_models.hpp"
#include "provenance.hpp"
#include "reference/reference.hpp"

using namespace trainsim;
using namespace trainsim::validate;

TEST(BusBandwidth, FactorsAreNcclTests) {
  // all_reduce 2(n-1)/n, the others (n-1)/n; one rank moves nothing over links.
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::all_reduce, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::all_gather, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::reduce_scatter, 16), 15.0 / 16);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::alltoall, 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::all_reduce, 1), 0.0);
  EXPECT_THROW((void)bus_bandwidth_factor(CollectiveOp::all_reduce, 0), std::invalid_argument);
}

TEST(BusBandwidth, ReproducesAPublishedNcclTestsRow) {
  // VALIDATION.md 1.1, 2 x p5 (16 ranks) all_reduce: 1 MiB in 123.2 us -> algbw 8.51, busbw 15.95.
  const double algbw = algorithm_bandwidth(1048576, 123.2e-6) / 1e9;  // 1048576 / 123.2e-6 / 1e9
  EXPECT_NEAR(algbw, 8.51, 0.005);
  EXPECT_NEAR(algbw * bus_bandwidth_factor(CollectiveOp::all_reduce, 16), 15.95, 0.01);  // x 1.875
}

TEST(BusBandwidth, CountsFollowEachCollectivesSizeConvention) {
  // S = 1 MiB of floats over 8 ranks: 262144 elements in all.
  auto c = collective_counts(CollectiveOp::all_reduce, 1 << 20, 8, 4);
  EXPECT_EQ(c.call_count, 262144u);
  c = collective_counts(CollectiveOp::all_gather, 1 << 20, 8, 4);  // S is the gathered buffer
  EXPECT_EQ(c.send_elements, 32768u);
  EXPECT_EQ(c.recv_elements, 262144u);
  c = collective_counts(CollectiveOp::reduce_scatter, 1 << 20, 8, 4);  // S is the input
  EXPECT_EQ(c.recv_elements, 32768u);
  EXPECT_EQ(c.send_elements, 262144u);
  c = collective_counts(CollectiveOp::alltoall, 1 << 20, 8, 4);  // count is per peer
  EXPECT_EQ(c.call_count, 32768u);
  EXPECT_EQ(collective_size_bytes(CollectiveOp::alltoall, c, 4), 1u << 20);
  // 1000 bytes over 3 ranks of floats: 250 elements, 83 per rank -> S = 83 * 3 * 4 = 996.
  c = collective_counts(CollectiveOp::all_gather, 1000, 3, 4);
  EXPECT_EQ(collective_size_bytes(CollectiveOp::all_gather, c, 4), 996u);
}

TEST(CollectiveMeasurements, WritesTheAgreedFormat) {
  CollectiveMeasurements m;
  m.provenance.date = "2026-11-22";
  m.provenance.gpu = "GPU X";
  m.provenance.nccl = "2.28.9";
  m.topology = "p4d.24xlarge";
  m.rows.push_back({CollectiveOp::all_reduce, 1, 8, 1048576, 100e-6});
  std::ostringstream out;
  write_collective_measurements(out, m);
  const auto j = nlohmann::json::parse(out.str());
  EXPECT_EQ(j["schema"], "trainsim.collective_measurements/1");
  EXPECT_EQ(j["provenance"]["method"], "measured");
  EXPECT_EQ(j["provenance"]["source"], "trainsim-validate nccl");
  EXPECT_EQ(j["topology"], "p4d.24xlarge");
  const auto& row = j["rows"][0];
  EXPECT_EQ(row["op"], "all_reduce");
  EXPECT_EQ(row["ranks"], 8);
  EXPECT_EQ(row["size_bytes"], 1048576);
  EXPECT_DOUBLE_EQ(row["time_us"].get<double>(), 100.0);
  EXPECT_NEAR(row["algbw_gbps"].get<double>(), 10.48576, 1e-9);         // 1048576 / 100e-6 / 1e9
  EXPECT_NEAR(row["busbw_gbps"].get<double>(), 10.48576 * 1.75, 1e-9);  // x 2 * 7 / 8
  const std::vector<std::string> keys = {"op",      "nodes",      "ranks",     "size_bytes",
                                         "time_us", "algbw_gbps", "busbw_gbps"};
  std::vector<std::string> got;
  for (auto it = row.begin(); it != row.end(); ++it) got.push_back(it.key());
  std::sort(got.begin(), got.end());
  auto want = keys;
  std::sort(want.begin(), want.end());
  EXPECT_EQ(got, want);
}

TEST(GemmSweep, SquaresTransformerAndAttentionShapesWithoutDuplicates) {
  const auto shapes = gemm_sweep_shapes(false);
  for (long s = 256; s <= 16384; s *= 2)
    EXPECT_NE(std::find(shapes.begin(), shapes.end(), GemmShape{s, s, s, 1}), shapes.end()) << s;
  // tokens 2048, hidden 1536: QKV forward, its data gradient, its weight gradient.
  for (GemmShape s : {GemmShape{2048, 4608, 1536, 1}, GemmShape{2048, 1536, 4608, 1},
                      GemmShape{1536, 4608, 2048, 1}})
    EXPECT_NE(std::find(shapes.begin(), shapes.end(), s), shapes.end());
  EXPECT_NE(std::find(shapes.begin(), shapes.end(), GemmShape{1024, 1024, 64, 96}), shapes.end());
  for (std::size_t i = 0; i < shapes.size(); ++i)
    for (std::size_t j = i + 1; j < shapes.size(); ++j) EXPECT_FALSE(shapes[i] == shapes[j]);
  EXPECT_LT(gemm_sweep_shapes(true).size(), 40u);
}

TEST(GemmSweep, NamedModelsGemmsAreNotSweptSoTheLayerCheckInterpolates) {
  const auto shapes = gemm_sweep_shapes(false);
  for (const auto& nm : named_models()) {
    auto ops = model::layer_forward_ops(nm.spec, nm.micro_batch);
    const auto bwd = model::layer_backward_ops(nm.spec, nm.micro_batch);
    ops.insert(ops.end(), bwd.begin(), bwd.end());
    for (const auto& op : ops) {
      if (op.kind != model::OpKind::gemm) continue;
      const GemmShape s{static_cast<long>(op.m), static_cast<long>(op.n), static_cast<long>(op.k),
                        static_cast<long>(op.batch)};
      EXPECT_EQ(std::find(shapes.begin(), shapes.end(), s), shapes.end())
          << nm.spec.name << " " << op.name;
    }
  }
}

TEST(CalibrationOutput, HarnessSamplesWriteAndLoadBackIntoACurve) {
  // 4096^3 in 200 us: 2 * 4096^3 / 200e-6 = 687.19 TFLOP/s.
  const auto g = gemm_sample(model::Dtype::bf16, {4096, 4096, 4096, 1}, 200e-6);
  EXPECT_NEAR(g.achieved, 2.0 * 4096 * 4096 * 4096 / 200e-6, 1);
  // 1 GiB copied in 0.5 ms: read + write = 2 * 2^30 / 5e-4 = 4.29 TB/s.
  EXPECT_DOUBLE_EQ(copy_bandwidth(1073741824.0, 5e-4), 2 * 1073741824.0 / 5e-4);

  model::KernelCalibration c;
  c.provenance = {"measured",   "trainsim-validate kernels",
                  "2026-11-22", "GPU X",
                  "580.1",      "13.0",
                  "13.1.0",     "",
                  132,          1980,
                  2619};
  c.gemm = {gemm_sample(model::Dtype::bf16, {1024, 1024, 1024, 1}, 20e-6), g};
  c.memory_bandwidth = 3e12;
  c.launch_overhead = 2e-6;
  c.elementwise = {{"gelu", 4.0 * (64 << 20), 100e-6}};
  const std::string path = ::testing::TempDir() + "harness-calibration.json";
  write_calibration_file(path, c);
  const auto back = model::load_kernel_calibration(path);
  EXPECT_EQ(back.provenance.method, "measured");
  EXPECT_EQ(back.provenance.cublas, "13.1.0");
  ASSERT_EQ(back.gemm.size(), 2u);
  EXPECT_NEAR(back.gemm[1].achieved, g.achieved, 1);

  // The layer check's device: GEMMs from the curve (tile 0 here: the sample is reproduced).
  const auto dev = validation_profile(back, 0);
  const auto op = model::make_gemm("x", 4096, 4096, 4096, 1, model::Dtype::bf16);
  EXPECT_NEAR(model::gemm_rate(op, dev), g.achieved, g.achieved * 1e-9);
  EXPECT_DOUBLE_EQ(model::achieved_memory_bandwidth(dev), 3e12);
}

TEST(CalibrationOutput, UnwritablePathIsAConfigError) {
  model::KernelCalibration c;
  EXPECT_THROW(write_calibration_file("/nonexistent-dir/x.json", c), ConfigError);
}

TEST(LayerComparison, PairsByNameAndReportsUnpairedKernels) {
  model::KernelCalibration c;
  c.provenance = {"measured", "test", "2026-11-22", "", "", "", "", "", 0, 0, 0};
  c.gemm = {gemm_sample(model::Dtype::bf16, {1000, 1000, 1000, 1}, 10e-6)};  // 200 TFLOP/s
  c.memory_bandwidth = 1e12;
  c.launch_overhead = 0;
  const auto dev = validation_profile(c, 0);
  // A GEMM at the sampled shape: 2e9 FLOP / 200e12 = 10 us; 2e6 bytes at 1 TB/s = 2 us.
  const std::vector<model::Operation> ops = {
      model::make_gemm("qkv", 1000, 1000, 1000, 1, model::Dtype::bf16),
      model::make_elementwise("gelu", 2e6)};
  const auto cmp =
      compare_layer({{"qkv", 8e-6}, {"gelu", 2.5e-6}, {"extra", 1e-6}}, 12e-6, ops, dev);
  ASSERT_EQ(cmp.ops.size(), 2u);
  EXPECT_NEAR(cmp.ops[0].predicted, 10e-6, 1e-12);
  EXPECT_NEAR(cmp.ops[0].error(), (10.0 - 8.0) / 8.0, 1e-9);
  EXPECT_TRUE(cmp.ops[0].sampled_shape);
  EXPECT_NEAR(cmp.ops[1].error(), (2.0 - 2.5) / 2.5, 1e-9);
  EXPECT_NEAR(cmp.total_error(), (12.0 - 12.0) / 12.0, 1e-9);
  EXPECT_EQ(cmp.only_measured, std::vector<std::string>{"extra"});
  std::ostringstream out;
  print_layer_comparison(out, cmp);
  EXPECT_NE(out.str().find("+25.0%"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("(sampled shape)"), std::string::npos);
}

TEST(LayerComparison, H100CalibrationPredictsLayerNormsAtTheLayerNormSamplesRate) {
  const auto c = model::load_kernel_calibration("topologies/calibration/h100-sxm-measured.json");
  const auto dev = validation_profile(c, kLayerCheckGemmTile);
  const auto ops = model::layer_forward_ops(find_named_model("gpt-7.5b")->spec, 1);
  double sample_rate = 0;
  for (const auto& e : c.elementwise)
    if (e.name == "layer_norm") sample_rate = e.bytes / e.time;
  ASSERT_GT(sample_rate, 0);
  for (const auto& op : ops) {
    if (op.kernel != "layer_norm") continue;
    EXPECT_NEAR(model::op_duration(op, dev), op.bytes / sample_rate + *c.launch_overhead, 1e-12)
        << op.name;
  }
  // Backward kernels have their own samples (the harness times them since the second H100 run);
  // the residual add has none and streams at the copy rate.
  const auto bwd = model::layer_backward_ops(find_named_model("gpt-7.5b")->spec, 1);
  double bwd_rate = 0;
  for (const auto& e : c.elementwise)
    if (e.name == "layer_norm_bwd") bwd_rate = e.bytes / e.time;
  ASSERT_GT(bwd_rate, 0);
  int residuals = 0;
  for (const auto& op : bwd) {
    if (op.kernel == "layer_norm_bwd") {
      EXPECT_NEAR(model::op_duration(op, dev), op.bytes / bwd_rate + *c.launch_overhead, 1e-12);
    }
    if (op.kernel == "residual_add_bwd") {
      ++residuals;
      EXPECT_NEAR(model::op_duration(op, dev), op.bytes / *c.memory_bandwidth + *c.launch_overhead, 1e-12);
    }
  }
  EXPECT_GT(residuals, 0);
}

TEST(LayerTable, ReadsTheMeasuredColumnsOfSavedTables) {
  std::istringstream in(
      "warning: something\n"
      "gpt-7.5b: hidden 4096, heads 32, seq 2048, micro-batch 1, bf16, one layer forward + backward on X\n"
      "kernel                        measured us predicted us     error\n"
      "layernorm_1                         32.44        16.19    -50.1%\n"
      "qkv                                277.99       293.51     +5.6%  (sampled shape)\n"
      "total (whole pass)                6242.26      5664.41     -9.3%\n"
      "measured but not in the simulator's list: residual_dropout_1\n"
      "total error OUTSIDE the 5% target\n"
      "custom: hidden 768, heads 12, seq 128, micro-batch 4, bf16\n"
      "gelu 10 9 -10%\n"
      "total (whole pass) 20 19 -5%\n");
  const auto runs = read_layer_tables(in, "t.txt");
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].layer.spec.hidden, 4096);
  ASSERT_EQ(runs[0].measured.size(), 2u);
  EXPECT_EQ(runs[0].measured[1].first, "qkv");
  EXPECT_NEAR(runs[0].measured[1].second, 277.99e-6, 1e-12);
  EXPECT_NEAR(runs[0].measured_total, 6242.26e-6, 1e-12);
  EXPECT_EQ(runs[1].layer.spec.heads, 12);
  EXPECT_EQ(runs[1].layer.micro_batch, 4);
}

TEST(LayerTable, ATableWithoutItsTotalIsAnError) {
  std::istringstream in("bert-large: hidden 1024, heads 16, seq 512, micro-batch 8, bf16\nqkv 1 2 +1%\n");
  try {
    (void)read_layer_tables(in, "t.txt");
    FAIL() << "expected a UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("t.txt:2"), std::string::npos) << e.what();
  }
}

TEST(Arguments, ParsesEachSubcommand) {
  const auto k = parse_kernels_options({"--out", "f.json", "--quick"});
  EXPECT_EQ(k.out, "f.json");
  EXPECT_TRUE(k.quick);
  const auto n = parse_nccl_options({"--out", "n.json", "--max-bytes", "4096", "--iters", "3"});
  EXPECT_EQ(n.max_bytes, 4096u);
  EXPECT_EQ(n.iters, 3);
  const auto l = parse_layer_options({"--model", "gpt-7.5b"});
  EXPECT_EQ(l.spec.hidden, 4096);
  EXPECT_EQ(l.spec.ffn_hidden, 4 * 4096);
  EXPECT_EQ(l.micro_batch, 1);
  const auto c = parse_layer_options(
      {"--hidden", "768", "--heads", "12", "--seq", "128", "--micro-batch", "4"});
  EXPECT_EQ(c.spec.heads, 12);
  EXPECT_EQ(c.micro_batch, 4);
}

TEST(Arguments, BadUsageSaysWhat) {
  auto message = [](auto parse, std::vector<std::string> args) {
    try {
      (void)parse(args);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(parse_kernels_options, {}), "kernels needs --out FILE");
  EXPECT_EQ(message(parse_nccl_options, {"--out", "x", "--iters", "0"}),
            "--iters expects a positive integer, not \"0\"");
  EXPECT_EQ(message(parse_nccl_options, {"--out", "x", "--min-bytes", "9", "--max-bytes", "8"}),
            "--min-bytes is larger than --max-bytes");
  EXPECT_EQ(message(parse_layer_options, {"--model", "gpt-99"}),
            "unknown model \"gpt-99\" (bert-large, gpt-1.7b, gpt-7.5b, gpt-18b)");
  EXPECT_EQ(message(parse_layer_options, {"--hidden", "100", "--heads", "3", "--seq", "8"}),
            "--hidden must be a multiple of --heads");
  EXPECT_EQ(message(parse_layer_options, {"--model", "bert-large", "--hidden", "8"}),
            "give --model or --hidden/--heads/--seq, not both");
  EXPECT_EQ(message(parse_kernels_options, {"--out", "x", "--fast"}), "unknown argument --fast");
}

TEST(Provenance, VersionsAndDriverParse) {
  EXPECT_EQ(dotted_version(130100), "13.1.0");  // cublasLtGetVersion
  EXPECT_EQ(dotted_version(22809), "2.28.9");   // ncclGetVersion
  EXPECT_EQ(cuda_version(13000), "13.0");
  EXPECT_EQ(cuda_version(12080), "12.8");
  EXPECT_EQ(parse_nvidia_driver_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.82.07 "
                                        " Wed Aug 20 2025\nGCC version: gcc 12"),
            "580.82.07");
  EXPECT_EQ(
      parse_nvidia_driver_version(
          "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.133.20  Release Build"),
      "570.133.20");
  EXPECT_EQ(parse_nvidia_driver_version("nothing here"), "");
  EXPECT_EQ(today_utc().size(), 10u);
}

TEST(LayerReference, ZeroWeightsReduceTheLayerToTwoLayerNorms) {
  // With every weight and bias 0: qkv = 0, so attention outputs 0 and residual1 = x; the MLP
  // outputs gelu(0) * 0 = 0, so residual2 = ln1 = LN(x) and out = LN(LN(x)) (gamma 1, beta 0).
  model::TransformerSpec s;
  s.layers = 1, s.hidden = 8, s.heads = 2, s.ffn_hidden = 32, s.seq_len = 3;
  const long b = 2, t = b * s.seq_len, h = s.hidden;
  LayerInputs in;
  for (long i = 0; i < t * h; ++i)
    in.x.push_back(kernels::reference::round_to_bf16(static_cast<float>((i * 7) % 11) - 5.0f));
  in.w_qkv.assign(3 * h * h, 0);
  in.w_o.assign(h * h, 0);
  in.w_1.assign(h * s.ffn_hidden, 0);
  in.w_2.assign(h * s.ffn_hidden, 0);
  in.bias_o.assign(h, 0);
  in.bias_2.assign(h, 0);
  in.gamma1.assign(h, 1);
  in.gamma2.assign(h, 1);
  in.beta1.assign(h, 0);
  in.beta2.assign(h, 0);
  const auto out = layer_forward_reference(s, b, in);
  std::vector<float> ln, ln2, mean, rstd;
  kernels::reference::layer_norm(in.x, in.gamma1, in.beta1, t, h, LayerConstants::eps, ln, mean,
                                 rstd);
  ln = kernels::reference::round_to_bf16(ln);
  kernels::reference::layer_norm(ln, in.gamma2, in.beta2, t, h, LayerConstants::eps, ln2, mean,
                                 rstd);
  ln2 = kernels::reference::round_to_bf16(ln2);
  EXPECT_EQ(out, ln2);
}

TEST(FrameworkLayers, Fp8LayerRowsBecomeTorchaoLayersAndSkipFailedRuns) {
  const std::string path = ::testing::TempDir() + "fp8-layer.json";
  std::ofstream(path) << R"({"rows": [
    {"linears": "fp8", "compiled": false, "seq": 2048, "batch": 1, "forward_us": 100, "backward_us": 300},
    {"linears": "fp8", "compiled": true, "seq": 2048, "batch": 1, "error": "BackendCompilerFailed: x"},
    {"linears": "bf16", "compiled": true, "seq": 2048, "batch": 1, "forward_us": 50, "backward_us": 150}]})";
  const auto rows = read_fp8_layer_rows(path);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_TRUE(rows[0].shape.fp8.enabled);
  EXPECT_TRUE(rows[0].shape.fp8.dynamic_scaling);
  EXPECT_FALSE(rows[0].shape.fp8.fused_transpose);  // eager torchao transposes apart
  EXPECT_TRUE(rows[0].shape.eager);
  EXPECT_DOUBLE_EQ(rows[0].measured_backward, 300e-6);
  EXPECT_FALSE(rows[1].shape.fp8.enabled);
  EXPECT_FALSE(rows[1].shape.eager);  // compiled: the simulator's fused kernels
  std::ofstream(path) << R"({"rows": [{"linears": "fp4", "compiled": true, "seq": 2048, "batch": 1}]})";
  EXPECT_THROW((void)read_fp8_layer_rows(path), ConfigError);
}

TEST(MptBlockOps, GroupsTheProfilersKernelNamesAsTheSimulatorsOps) {
  using trainsim::validate::kernel_group;
  EXPECT_EQ(kernel_group("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_bias_TNT"), "gemm");
  EXPECT_EQ(kernel_group("void cublasLt::splitKreduce_kernel<32, 16, int, float, __nv_bfloat16"), "gemm");
  EXPECT_EQ(kernel_group("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7"), "attention fwd");
  EXPECT_EQ(kernel_group("void cudnn::fusion::convert_dq_to_16bits<true>(void const*"), "attention bwd");
  EXPECT_EQ(kernel_group("void pytorch_flash::flash_bwd_dot_do_o_kernel<true, Flash_bw"), "attention bwd");
  EXPECT_EQ(kernel_group("void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernelTemplate<"), "layer_norm_bwd");
  EXPECT_EQ(kernel_group("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16"), "layer_norm");
  EXPECT_EQ(kernel_group("void at::native::vectorized_elementwise_kernel<8, at::native::GeluBackwardCUDAKernelImpl("),
            "gelu_bwd");
  EXPECT_EQ(kernel_group("void at::native::reduce_kernel<128, 4, at::native::ReduceOp<c10::BFloat16"), "bias_grad");
  EXPECT_EQ(kernel_group("void at::native::(anonymous namespace)::CatArrayBatchedCopy_vectorized<"), "copy");
  // Names cut before the functor: not guessed.
  EXPECT_EQ(kernel_group("void at::native::vectorized_elementwise_kernel<8, at::native"), "other");
}

TEST(MptBlockOps, PairsTheProfiledH100BlockWithTheSimulatedLayer) {
  const auto blocks = trainsim::validate::read_mpt_block_profiles("validate/results/h100-mpt-block.json");
  ASSERT_EQ(blocks.size(), 4u);
  auto dev = trainsim::model::load_device_profile("topologies/devices/h100-80gb.json");
  dev.attention_kernel = "cudnn-attention";
  for (const auto& b : blocks) {
    const auto groups = trainsim::validate::block_breakdown(b, dev);
    double simulated = 0;
    for (const auto& g : groups) {
      simulated += g.simulated_forward_us + g.simulated_backward_us;
      if (g.group == "gemm") {
        EXPECT_EQ(g.simulated_backward_ops, 8);            // dgrad + wgrad of four linears
        EXPECT_GE(g.measured_backward_kernels, 8);        // and a split-K reduction where cuBLAS picks one
      }
      if (g.group == "bias_grad") {
        EXPECT_EQ(g.measured_backward_kernels, g.simulated_backward_ops);  // one reduction per bias
      }
    }
    const auto spec = trainsim::validate::mpt_layer_spec(b);
    const auto shape = trainsim::validate::mpt_layer_shape(b);
    const double ops = (trainsim::model::ops_duration(trainsim::model::layer_forward_ops(spec, shape), dev) +
                        trainsim::model::ops_duration(trainsim::model::layer_backward_ops(spec, shape), dev)) * 1e6;
    EXPECT_NEAR(simulated, ops, 1e-6 * ops);
  }
}

TEST(MptBlockOps, BadProfileNamesTheFileAndPath) {
  const std::string path = ::testing::TempDir() + "mpt_block_bad.json";
  std::ofstream(path) << R"({"profiles": [{"hidden": 100, "heads": 3, "seq_len": 8, "micro_batch": 1,
                                           "forward": {"kernels": []}, "step": {"kernels": []}}]})";
  try {
    (void)trainsim::validate::read_mpt_block_profiles(path);
    FAIL() << "expected a ConfigError";
  } catch (const trainsim::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("heads"), std::string::npos);
  }
}

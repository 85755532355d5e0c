// Host dispatch as plain data: the race of host issue and device (model/host_dispatch.hpp), the
// kernels each op list counts, and what the schedules put on their tasks (no SimGrid).
#include <gtest/gtest.h>

#include <algorithm>

#include "model/host_dispatch.hpp"
#include "model/transformer.hpp"
#include "program/build_program.hpp"
#include "support/pipeline_fixture.hpp"

namespace trainsim {
namespace {

TEST(HostDispatch, AHostBoundRunEndsOneMeanKernelAfterTheLastIssue) {
  const auto t = model::dispatch(0, 0, 10, 50e-6, 100e-6);
  EXPECT_NEAR(t.device_start, 50e-6, 1e-12);
  EXPECT_NEAR(t.host_end, 500e-6, 1e-12);
  EXPECT_NEAR(t.device_end, 510e-6, 1e-12);
}

TEST(HostDispatch, ADeviceBoundRunShowsOnlyTheFirstIssue) {
  const auto t = model::dispatch(0, 0, 10, 50e-6, 10e-3);
  EXPECT_NEAR(t.device_end, 50e-6 + 10e-3, 1e-12);
  // The host ran ahead: a device still busy hides the first issue too.
  EXPECT_NEAR(model::dispatch(0, 1e-3, 10, 50e-6, 10e-3).device_end, 11e-3, 1e-12);
}

TEST(HostDispatch, OpsAreCutAfterEachHostSync) {
  auto op = [](const char* name, bool sync) {
    model::Operation o = model::make_elementwise(name, 1);
    o.host_sync_after = sync;
    return o;
  };
  auto shape = [](const std::vector<std::vector<model::Operation>>& runs) {
    std::vector<std::size_t> sizes;
    for (const auto& r : runs) sizes.push_back(r.size());
    return sizes;
  };
  using Sizes = std::vector<std::size_t>;
  EXPECT_EQ(shape(model::split_at_host_syncs({})), Sizes{0});
  EXPECT_EQ(shape(model::split_at_host_syncs({op("a", false), op("b", false)})), Sizes{2});
  // A synchronising last op ends the last run; two in a row leave a run of one.
  EXPECT_EQ(shape(model::split_at_host_syncs({op("a", false), op("b", true)})), Sizes{2});
  EXPECT_EQ(shape(model::split_at_host_syncs({op("a", true), op("b", true), op("c", false)})), (Sizes{1, 1, 1}));
  const auto runs = model::split_at_host_syncs({op("a", false), op("b", true), op("c", false), op("d", false)});
  ASSERT_EQ(shape(runs), (Sizes{2, 2}));
  EXPECT_EQ(runs[0].back().name, "b");
  EXPECT_EQ(runs[1].front().name, "c");
}

TEST(HostDispatch, NoKernelsOrNoHostCostIsTheDeviceTime) {
  EXPECT_NEAR(model::dispatch(5, 1, 0, 50e-6, 2).device_end, 3, 1e-12);
  EXPECT_NEAR(model::dispatch(0, 1, 10, 0, 2).device_end, 3, 1e-12);
}

TEST(HostDispatch, BlockingLaunchesAddEveryIssueToTheDeviceTime) {
  // CUDA_LAUNCH_BLOCKING: 10 kernels of 1 ms each, issued at 50 us: 10 x 50 us + 10 ms, however
  // long the kernels (run ahead, the same run shows only the first issue: 10.05 ms).
  const auto t = model::dispatch_blocking(0, 0, 10, 50e-6, 10e-3);
  EXPECT_NEAR(t.device_start, 50e-6, 1e-12);
  EXPECT_NEAR(t.device_end, 10 * 50e-6 + 10e-3, 1e-12);
  EXPECT_NEAR(t.host_end, t.device_end, 1e-12);  // the host returns when the last kernel ends
  EXPECT_NEAR(model::dispatch(0, 0, 10, 50e-6, 10e-3).device_end, 50e-6 + 10e-3, 1e-12);
  // A busy device delays the first kernel; the nine later issues still follow their kernels.
  EXPECT_NEAR(model::dispatch_blocking(0, 1e-3, 10, 50e-6, 10e-3).device_end, 1e-3 + 10e-3 + 9 * 50e-6, 1e-12);
  EXPECT_NEAR(model::dispatch_blocking(0, 1, 0, 50e-6, 2).device_end, 3, 1e-12);
}

model::TransformerSpec bert_large_layer() {
  model::TransformerSpec s{"bert-large", 1, 1024, 16, 4096, 30522, 512, true};
  s.causal = false;
  return s;
}

TEST(KernelCounts, TheTorchLayerLaunchesWhatItsProfileCounts) {
  // validate/results/h100-sxm-torch-layer-profile.json, bert-large, memsets left out: 57 - 9
  // kernels unfused (17 forward), 47 - 7 with SDPA flash attention. The layer is
  // measure_torch_ops.py's, whose module code the torch-layer module kernels describe.
  model::LayerShape unfused{8};
  unfused.module_kernels = model::ModuleKernels::torch_layer;
  const auto s = bert_large_layer();
  EXPECT_EQ(model::ops_kernels(model::layer_forward_ops(s, unfused)), 17);
  EXPECT_EQ(model::ops_kernels(model::layer_backward_ops(s, unfused)), 31);
  model::LayerShape flash = unfused;
  flash.flash_attention = true;
  EXPECT_EQ(model::ops_kernels(model::layer_forward_ops(s, flash)) +
                model::ops_kernels(model::layer_backward_ops(s, flash)),
            40);
}

TEST(KernelCounts, WithoutBiasesALinearsBackwardIsTwoGemms) {
  auto s = bert_large_layer();
  model::LayerShape torch_layer{1};
  torch_layer.module_kernels = model::ModuleKernels::torch_layer;
  const int with_bias = model::ops_kernels(model::layer_backward_ops(s, torch_layer));
  s.bias = false;
  // Four linear layers lose their bias-gradient reduction.
  EXPECT_EQ(model::ops_kernels(model::layer_backward_ops(s, torch_layer)), with_bias - 4);
}

program::ScheduleInputs with_host_cost(program::ScheduleInputs in) {
  in.device.eager_kernel_issue = 40e-6;
  return in;
}

TEST(HostDispatchProgram, TheProgramCarriesTheDevicesHostCostUnlessSwitchedOff) {
  auto in = with_host_cost(testing_support::tiny_tp2_pp2_dp2());
  EXPECT_DOUBLE_EQ(program::build_program(in).host_per_kernel, 40e-6);
  in.plan.host_dispatch = false;  // CUDA graphs / torch.compile
  EXPECT_DOUBLE_EQ(program::build_program(in).host_per_kernel, 0);
}

TEST(HostDispatchProgram, LaunchBlockingTimesEachCollectiveCallAtTheProfilesBareCall) {
  auto in = with_host_cost(testing_support::tiny_tp2_pp2_dp2());
  in.device.eager_copy_call = 13e-6;
  auto prog = program::build_program(in);
  EXPECT_FALSE(prog.launch_blocking);
  EXPECT_DOUBLE_EQ(prog.collective_launch, 0);
  in.plan.cuda_launch_blocking = true;
  prog = program::build_program(in);
  EXPECT_TRUE(prog.launch_blocking);
  EXPECT_DOUBLE_EQ(prog.collective_launch, 13e-6);
  in.plan.host_dispatch = false;  // no host model: nothing to block on
  EXPECT_FALSE(program::build_program(in).launch_blocking);
}

TEST(HostDispatchProgram, EveryComputeTaskCarriesItsKernels) {
  const auto in = with_host_cost(testing_support::tiny_tp2_pp2_dp2());
  const auto prog = program::build_program(in);
  const model::LayerShape shape{in.plan.micro_batch, in.plan.tp, in.plan.sequence_parallel, in.plan.flash_attention,
                                in.plan.fused_cross_entropy, in.plan.eager_kernels};
  const int layer_forward = model::ops_kernels(model::layer_forward_ops(in.model, shape));
  bool found_layer_forward = false;
  for (const auto& rp : prog.ranks)
    for (const auto& s : rp.streams)
      for (const auto& t : s.tasks) {
        if (t.kind != program::TaskKind::compute) continue;
        EXPECT_GT(t.kernels, 0) << t.name;
        if (t.phase == program::Phase::forward && t.name.str().find("layer") != std::string::npos) {
          EXPECT_EQ(t.kernels, layer_forward) << t.name;
          found_layer_forward = true;
        }
      }
  EXPECT_TRUE(found_layer_forward);
}

TEST(HostDispatchProgram, APassAfterABlockingPipelineExchangeIsAHostSync) {
  // Megatron's exchanges end in torch.cuda.synchronize(): the compute task right after each
  // exchange waits on the host; the ones after it in the same slot do not.
  const auto prog = program::build_program(with_host_cost(testing_support::tiny_tp2_pp2_dp2()));
  int synced = 0, after_sync = 0;
  for (const auto& rp : prog.ranks) {
    const auto& tasks = rp.streams[0].tasks;
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      if (!tasks[i].host_sync) continue;
      ++synced;
      EXPECT_FALSE(tasks[i].deps.empty()) << tasks[i].name;
      if (i + 1 < tasks.size() && tasks[i + 1].phase == tasks[i].phase && !tasks[i + 1].host_sync) ++after_sync;
    }
  }
  EXPECT_GT(synced, 0);
  EXPECT_GT(after_sync, 0);
}

}  // namespace
}  // namespace trainsim

// Megatron-LM 2021's synchronisations outside the model (training.megatron_step_syncs) as the
// PTD-P schedule emits them: plain data, no SimGrid.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "program/build_program.hpp"
#include "support/pipeline_fixture.hpp"
#include "support/program_lookup.hpp"

namespace trainsim::program {
namespace {

using testing_support::index_of;
using testing_support::task_named;
using testing_support::waits_for;

enum { kCompute = 0, kTensor = 1, kDataParallel = 2 };

/// The tiny TP 2 x PP 2 x DP 2 job (4 micro-batches) with Megatron 2021's optimizer and local DDP.
ScheduleInputs megatron_2021(bool step_syncs) {
  ScheduleInputs in = testing_support::tiny_tp2_pp2_dp2();
  in.plan.optimizer_implementation = plan::OptimizerImplementation::megatron_fp16;
  in.plan.gradient_buffers = plan::GradientBuffers::megatron_local_ddp;
  in.plan.megatron_step_syncs = step_syncs;
  in.device.eager_kernel_issue = 40e-6;
  in.device.eager_copy_call = 10e-6;
  return in;
}

/// "forward mb2 c0" from "forward mb2 c0 layer 1", "embedding forward mb2 c0", ...: the slot.
std::string slot_of(const Task& t) {
  const std::string& n = t.name.str();
  const auto mb = n.find(" mb");
  if (mb == std::string::npos) return "";
  const auto layer = n.find(" layer", mb);
  return std::string(t.phase == Phase::forward ? "F" : "B") + n.substr(mb, layer == std::string::npos ? std::string::npos : layer - mb);
}

/// The first rank that runs the last stage's head (stage 1).
const RankProgram& last_stage_rank(const Program& prog) {
  for (const auto& r : prog.ranks)
    if (task_named(r.streams[kCompute], "head forward mb0 c0") >= 0) return r;
  ADD_FAILURE() << "no rank runs the head";
  return prog.ranks.front();
}

TEST(MegatronStepSyncs, EveryPassIsIssuedAfterItsTimersSynchronize) {
  // timers('forward-compute') / ('backward-compute') synchronise before each pass: on every rank
  // the first compute task of each of its 2 x 4 slots is a host sync, and only the passes after a
  // blocking exchange are without the option.
  for (const bool on : {false, true}) {
    const Program prog = build_program(megatron_2021(on));
    validate(prog);
    for (const auto& r : prog.ranks) {
      std::map<std::string, bool> first_synced;  // slot -> its first compute task's host_sync
      for (const auto& t : r.streams[kCompute].tasks) {
        const std::string slot = slot_of(t);
        if (!slot.empty()) first_synced.emplace(slot, t.host_sync);
      }
      ASSERT_EQ(first_synced.size(), 8u) << "rank " << r.rank;
      int synced = 0;
      for (const auto& [slot, sync] : first_synced) synced += sync ? 1 : 0;
      if (on)
        EXPECT_EQ(synced, 8) << "rank " << r.rank;
      else
        EXPECT_LT(synced, 8) << "rank " << r.rank;
    }
  }
}

TEST(MegatronStepSyncs, EachForwardWaitsForItsBatchBroadcastOverTp) {
  // get_batch on every stage: the sizes (5 int64), then micro-batch x (seq + 1) int64 tokens,
  // broadcast over the rank's TP pair before the forward's first compute.
  const ScheduleInputs in = megatron_2021(true);
  const Program prog = build_program(in);
  for (const auto& r : prog.ranks) {
    const auto& tp = r.streams[kTensor];
    for (int mb = 0; mb < 4; ++mb) {
      const std::string tag = " mb" + std::to_string(mb) + " c0";
      const int sizes = index_of(tp, "tp batch sizes broadcast" + tag);
      const int tokens = index_of(tp, "tp batch broadcast" + tag);
      ASSERT_GE(sizes, 0) << "rank " << r.rank << tag;
      ASSERT_EQ(tokens, sizes + 1);
      const auto& s_call = prog.collectives[static_cast<std::size_t>(tp.tasks[static_cast<std::size_t>(sizes)].collective)];
      const auto& t_call = prog.collectives[static_cast<std::size_t>(tp.tasks[static_cast<std::size_t>(tokens)].collective)];
      EXPECT_EQ(s_call.op, collective::Op::broadcast);
      EXPECT_DOUBLE_EQ(s_call.size, 5 * 8);
      EXPECT_DOUBLE_EQ(t_call.size, 8.0 * static_cast<double>(in.plan.micro_batch * (in.model.seq_len + 1)));
      EXPECT_EQ(t_call.group.size(), 2u);
      EXPECT_TRUE(waits_for(tp.tasks[static_cast<std::size_t>(tokens)], kTensor, sizes));
      // The slot's first compute task waits for the tokens, on the host too.
      const auto& comp = r.streams[kCompute].tasks;
      for (std::size_t i = 0; i < comp.size(); ++i)
        if (slot_of(comp[i]) == "F" + tag) {
          EXPECT_TRUE(comp[i].host_sync);
          EXPECT_TRUE(waits_for(comp[i], kTensor, tokens)) << comp[i].name;
          break;
        }
    }
  }
  // Without the option there is none.
  for (const auto& r : build_program(megatron_2021(false)).ranks)
    EXPECT_LT(task_named(r.streams[kTensor], "tp batch sizes broadcast mb0 c0"), 0);
}

TEST(MegatronStepSyncs, TheLastStageAllReducesEachLossOverDpBeforeTheBackward) {
  // loss_func's average_losses_across_data_parallel_group: one fp32 per micro-batch over the
  // stage's DP pair, waited for before the micro-batch's backward (forward-compute's timer).
  const Program prog = build_program(megatron_2021(true));
  const RankProgram& r = last_stage_rank(prog);
  const auto& dp = r.streams[kDataParallel];
  const auto& comp = r.streams[kCompute];
  for (int mb = 0; mb < 4; ++mb) {
    const std::string tag = " mb" + std::to_string(mb) + " c0";
    const int loss = index_of(dp, "loss all-reduce" + tag);
    ASSERT_GE(loss, 0) << tag;
    const auto& call = prog.collectives[static_cast<std::size_t>(dp.tasks[static_cast<std::size_t>(loss)].collective)];
    EXPECT_EQ(call.op, collective::Op::all_reduce);
    EXPECT_DOUBLE_EQ(call.size, 4.0);
    EXPECT_EQ(call.group.size(), 2u);
    const int backward = index_of(comp, "head backward" + tag);
    ASSERT_GE(backward, 0);
    EXPECT_TRUE(waits_for(comp.tasks[static_cast<std::size_t>(backward)], kDataParallel, loss)) << tag;
  }
  // The first stage computes no loss.
  EXPECT_LT(task_named(prog.ranks.front().streams[kDataParallel], "loss all-reduce mb0 c0"), 0);
  EXPECT_LT(task_named(last_stage_rank(build_program(megatron_2021(false))).streams[kDataParallel], "loss all-reduce mb0 c0"), 0);
}

TEST(MegatronStepSyncs, EachStepPhaseStartsAfterItsTimersSynchronize) {
  // train_step's 'backward-params-all-reduce', then the optimizer's 'copy-to-main-grad' and
  // 'unscale-and-check-inf' timers; the norm and Adam follow .item() reads, and the fp16
  // parameter copy an `if overflow_buf:` on a CUDA tensor, with or without the option.
  for (const bool on : {false, true}) {
    const Program prog = build_program(megatron_2021(on));
    const auto& comp = prog.ranks[1].streams[kCompute];
    for (const char* name : {"local DDP flatten and divide", "optimizer grad to fp32", "optimizer unscale and inf check"}) {
      const int i = index_of(comp, name);
      ASSERT_GE(i, 0) << name;
      EXPECT_EQ(comp.tasks[static_cast<std::size_t>(i)].host_sync, on) << name;
    }
    for (const char* name : {"optimizer gradient norm", "optimizer step", "optimizer params to fp16"}) {
      const int i = index_of(comp, name);
      ASSERT_GE(i, 0) << name;
      EXPECT_TRUE(comp.tasks[static_cast<std::size_t>(i)].host_sync) << name;
    }
    EXPECT_EQ(comp.tasks.back().name, "optimizer params to fp16");
    EXPECT_EQ(comp.tasks[comp.tasks.size() - 2].name, "optimizer step");
  }
}

TEST(MegatronStepSyncs, TheGradientCopyToFp32IsOneBareCallPerParameterTensor) {
  // _copy_model_grads_to_main_grads: main_param.grad = model_param.grad.float() in a Python loop.
  // Stage 0 of the tiny model holds 2 of its 4 layers (12 tensors each) and the word embedding.
  const Program prog = build_program(megatron_2021(false));
  const auto& comp = prog.ranks[1].streams[kCompute];
  const auto& copy = comp.tasks[static_cast<std::size_t>(index_of(comp, "optimizer grad to fp32"))];
  EXPECT_EQ(copy.kernels, 12 * 2 + 1);
  EXPECT_DOUBLE_EQ(copy.host_per_kernel, 10e-6);  // the device's eager_copy_call
  // The other optimizer passes are multi-tensor calls at the program's cost per kernel.
  const auto& unscale = comp.tasks[static_cast<std::size_t>(index_of(comp, "optimizer unscale and inf check"))];
  EXPECT_EQ(unscale.kernels, 1);
  EXPECT_DOUBLE_EQ(unscale.host_per_kernel, 0);
}

}  // namespace
}  // namespace trainsim::program

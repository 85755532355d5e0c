// Megatron's pipeline exchanges (program/pipeline_exchanges.hpp) as plain data, and how the PTD-P
// program waits on them.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "program/build_program.hpp"
#include "program/pipeline_exchanges.hpp"
#include "support/pipeline_fixture.hpp"
#include "support/program_lookup.hpp"

namespace trainsim::program {
namespace {

using testing_support::index_of;
using testing_support::waits_for;

/// Slots as F<mb>/B<mb> (c<chunk> when not 0), exchanges as [s|r A|G <boundary> m<mb> ...].
/// An exchange left in flight (overlap_p2p_comm) as {...}.
std::string text(plan::PipelineSchedule schedule, long pp, long stage, long m, long v,
                 plan::PipelineEngine engine = plan::PipelineEngine::megatron, bool overlap_p2p = false) {
  const auto steps = pipeline_exchanges(schedule, pp, m, v, engine, overlap_p2p)[static_cast<std::size_t>(stage)];
  const auto order = pipeline_order(schedule, pp, stage, m, v);
  std::string s;
  for (const auto& step : steps) {
    if (step.compute) {
      const auto& o = order[step.slot];
      s += (o.forward ? "F" : "B") + std::to_string(o.micro_batch) + (o.chunk ? "c" + std::to_string(o.chunk) : "") + " ";
      continue;
    }
    s += step.waited ? "[" : "{";
    for (std::size_t k = 0; k < step.transfers.size(); ++k) {
      const auto& x = step.transfers[k];
      s += (k ? " " : "") + std::string(x.send ? "s" : "r") + (x.gradient ? "G" : "A") + std::to_string(x.boundary) +
           "m" + std::to_string(x.micro_batch);
    }
    s += step.waited ? "] " : "} ";
  }
  return s;
}

TEST(PipelineExchanges, OneFOneBPairsEachSendWithTheWaitForTheNextTensor) {
  // Stage 0 of 2 (megatron/schedules.py forward_backward_pipelining_without_interleaving): one
  // warm-up forward and its send_forward; then send_forward_recv_backward after each forward;
  // the cool-down's recv_backward. Its first stage sends no gradient and receives no input.
  EXPECT_EQ(text(plan::PipelineSchedule::one_f_one_b, 2, 0, 3, 1),
            "F0 [sA0m0] F1 [sA0m1 rG0m0] B0 F2 [sA0m2 rG0m1] B1 [rG0m2] B2 ");
  // Stage 1 (last): recv_forward before the loop, then send_backward_recv_forward after each
  // backward but the last, which is a plain send_backward.
  EXPECT_EQ(text(plan::PipelineSchedule::one_f_one_b, 2, 1, 3, 1),
            "[rA0m0] F0 B0 [sG0m0 rA0m1] F1 B1 [sG0m1 rA0m2] F2 B2 [sG0m2] ");
}

std::string deepspeed(long pp, long stage, long m) {
  return text(plan::PipelineSchedule::one_f_one_b, pp, stage, m, 1, plan::PipelineEngine::deepspeed);
}

TEST(PipelineExchanges, DeepSpeedIssuesEveryTransferAloneInTrainScheduleOrder) {
  // The sequences DeepSpeed v0.6.2's TrainSchedule(micro_batches, stages, stage_id).steps()
  // yields (run from deepspeed/runtime/pipe/schedule.py, LoadMicroBatch and the step's tail left
  // out). A stage's output leaves at the start of its next (backward) step, its input gradient at
  // the start of its next (forward) step; each transfer blocks alone.
  EXPECT_EQ(deepspeed(2, 0, 3), "F0 [sA0m0] F1 [sA0m1] [rG0m0] B0 F2 [sA0m2] [rG0m1] B1 [rG0m2] B2 ");
  EXPECT_EQ(deepspeed(2, 1, 3), "[rA0m0] F0 B0 [rA0m1] [sG0m0] F1 B1 [rA0m2] [sG0m1] F2 B2 [sG0m2] ");
  EXPECT_EQ(deepspeed(4, 0, 3), "F0 [sA0m0] F1 [sA0m1] F2 [sA0m2] [rG0m0] B0 [rG0m1] B1 [rG0m2] B2 ");
  EXPECT_EQ(deepspeed(4, 1, 3),
            "[rA0m0] F0 [sA1m0] [rA0m1] F1 [sA1m1] [rA0m2] F2 [sA1m2] [rG1m0] B0 [sG0m0] [rG1m1] B1 [sG0m1] "
            "[rG1m2] B2 [sG0m2] ");
  EXPECT_EQ(deepspeed(4, 3, 3), "[rA2m0] F0 B0 [rA2m1] [sG2m0] F1 B1 [rA2m2] [sG2m1] F2 B2 [sG2m2] ");
}

TEST(PipelineExchanges, DeepSpeedRunsOneFOneBSlotsAndPairsEverySendForAnyShape) {
  // StageSteps checks each stage's slots against pipeline_order's 1F1B and pipeline_exchanges
  // that every receive meets its peer's send and every input arrives before its slot.
  for (long pp : {2, 3, 4, 5, 12})
    for (long m : {1, 2, 3, 7, 24}) EXPECT_NO_THROW((void)pipeline_exchanges(plan::PipelineSchedule::one_f_one_b, pp, m, 1, plan::PipelineEngine::deepspeed)) << pp << " " << m;
  EXPECT_ANY_THROW((void)pipeline_exchanges(plan::PipelineSchedule::interleaved, 4, 8, 2, plan::PipelineEngine::deepspeed));
}

TEST(PipelineExchanges, GpipeReceivesBeforeAndSendsAfterEverySlot) {
  EXPECT_EQ(text(plan::PipelineSchedule::gpipe, 2, 1, 2, 1), "[rA0m0] F0 [rA0m1] F1 B0 [sG0m0] B1 [sG0m1] ");
}

TEST(PipelineExchanges, InterleavedWrapsAroundAndBatchesBothDirections) {
  // pp 2, 2 chunks, 4 micro-batches, stage 0: warm-up of (2-0-1)*2 + (2-1)*2 = 4 forwards. Its
  // chunk 1 takes its input from stage 1's chunk 0 (boundary 1, the wrap-around), the last
  // warm-up exchange also waits for the first gradient, and the steady state sends an output
  // and an input gradient and receives both directions in one batch.
  EXPECT_EQ(text(plan::PipelineSchedule::interleaved, 2, 0, 4, 2),
            "F0 [sA0m0] F1 [sA0m1 rA1m0] F0c1 [sA2m0 rA1m1] F1c1 [sA2m1 rG2m0] "
            "F2 B0c1 [sA0m2 sG1m0 rG2m1] F3 B1c1 [sA0m3 sG1m1 rA1m2 rG0m0] "
            "F2c1 B0 [sA2m2 rA1m3 rG0m1] F3c1 B1 [sA2m3 rG2m2] "
            "B2c1 [sG1m2 rG2m3] B3c1 [sG1m3 rG0m2] B2 [rG0m3] B3 ");
}

TEST(PipelineExchanges, OverlappedInterleavedLeavesTheSteadyStateExchangesInFlight) {
  // The same stage as above with Megatron-core's overlap_p2p_comm (core_r0.10.0 schedules.py):
  // the warm-up exchanges one direction at a time, waited (send_forward_recv_forward), the last
  // warm-up forward then posts the first gradient's receive; in the steady state each forward
  // sends its output and posts the next input's receive, each backward likewise its input
  // gradient, all left in flight; the cool-down's send_backward_recv_backward is waited again.
  EXPECT_EQ(text(plan::PipelineSchedule::interleaved, 2, 0, 4, 2, plan::PipelineEngine::megatron, true),
            "F0 [sA0m0] F1 [sA0m1 rA1m0] F0c1 [sA2m0 rA1m1] F1c1 [sA2m1] {rG2m0} "
            "F2 {sA0m2} B0c1 {sG1m0 rG2m1} F3 {sA0m3 rA1m2} B1c1 {sG1m1 rG0m0} "
            "F2c1 {sA2m2 rA1m3} B0 {rG0m1} F3c1 {sA2m3} B1 {rG2m2} "
            "B2c1 [sG1m2 rG2m3] B3c1 [sG1m3 rG0m2] B2 [rG0m3] B3 ");
  // Every shape still pairs each receive with its peer's send and feeds every slot in time.
  for (long pp : {2, 3, 4})
    for (long v : {2, 3})
      for (long m = pp; m <= 3 * pp; m += pp)
        EXPECT_NO_THROW((void)pipeline_exchanges(plan::PipelineSchedule::interleaved, pp, m, v,
                                                 plan::PipelineEngine::megatron, true))
            << pp << " " << v << " " << m;
  EXPECT_ANY_THROW((void)pipeline_exchanges(plan::PipelineSchedule::one_f_one_b, 2, 4, 1, plan::PipelineEngine::megatron, true));
}

TEST(PipelineExchanges, EveryScheduleShapePairsUpAndFeedsItsSlots) {
  // pipeline_exchanges checks that every receive meets a send of its peer, in order, and that each
  // slot's input has arrived before it runs; as many micro-batches as stages runs Megatron's
  // all-warm-up interleaved case.
  for (long pp : {2, 3, 4})
    for (long v : {1, 2, 3})
      for (long m = pp; m <= 3 * pp; m += pp) {
        const auto schedule = v > 1 ? plan::PipelineSchedule::interleaved : plan::PipelineSchedule::one_f_one_b;
        const auto stages = pipeline_exchanges(schedule, pp, m, v);
        ASSERT_EQ(stages.size(), static_cast<std::size_t>(pp));
        long sends = 0;
        for (const auto& steps : stages)
          for (const auto& step : steps) {
            EXPECT_TRUE(step.compute || !step.transfers.empty());
            for (const auto& x : step.transfers) sends += x.send ? 1 : 0;
          }
        // Every boundary but the ends carries each micro-batch's activation and its gradient.
        EXPECT_EQ(sends, 2 * (pp * v - 1) * m) << "pp " << pp << " v " << v << " m " << m;
      }
  EXPECT_NO_THROW((void)pipeline_exchanges(plan::PipelineSchedule::gpipe, 4, 5, 1));
}

TEST(PipelineExchanges, AsManyMicroBatchesAsStagesRunsEveryInterleavedForwardFirst) {
  const auto order = pipeline_order(plan::PipelineSchedule::interleaved, 2, 1, 2, 2);
  std::string s;
  for (const auto& o : order) s += o.forward ? "F" : "B";
  EXPECT_EQ(s, "FFFFBBBB");  // schedules.py: all_warmup_microbatches
}

// --- the PTD-P program: tasks, groups, bytes and what waits for what ---

enum { kCompute = 0, kTensor = 1, kRecvPrev = 3, kSendNext = 4, kRecvNext = 5, kSendPrev = 6 };

TEST(PipelineExchangeProgram, ABatchWaitsForTheSlotAndTheNextSlotForTheWholeBatch) {
  const ScheduleInputs in = testing_support::tiny_tp2_pp2_dp2();  // 4 micro-batches, TP 2
  const Program prog = build_program(in);
  validate(prog);
  const auto& r = prog.ranks[1];  // stage 0, dp 0, tp 1
  const auto& comp = r.streams[kCompute];
  const auto& tensor = r.streams[kTensor];
  // After F1: send_forward_recv_backward. Both operations wait for the forward's end (its last
  // TP all-reduce), the received gradient is all-gathered over TP after both (scatter/gather),
  // and B0 starts after that gather.
  const int send = index_of(r.streams[kSendNext], "send activation 0->1 mb1");
  const int recv = index_of(r.streams[kRecvNext], "recv gradient 0<-1 mb0");
  const Task& send_task = r.streams[kSendNext].tasks[static_cast<std::size_t>(send)];
  const Task& recv_task = r.streams[kRecvNext].tasks[static_cast<std::size_t>(recv)];
  EXPECT_EQ(send_task.deps, recv_task.deps);
  ASSERT_EQ(send_task.deps.size(), 1u);
  EXPECT_EQ(send_task.deps[0].stream, kTensor);
  EXPECT_EQ(tensor.tasks[static_cast<std::size_t>(send_task.deps[0].index)].name, "tp all-reduce mb1 c0");
  EXPECT_EQ(tensor.tasks[static_cast<std::size_t>(send_task.deps[0].index)].phase, Phase::forward);
  const int gather = index_of(tensor, "tp gather gradient 0<-1 mb0");
  const Task& g = tensor.tasks[static_cast<std::size_t>(gather)];
  EXPECT_TRUE(waits_for(g, kSendNext, send));
  EXPECT_TRUE(waits_for(g, kRecvNext, recv));
  // The head is on stage 1: stage 0's B0 starts with its first layer pass.
  EXPECT_TRUE(waits_for(comp.tasks[static_cast<std::size_t>(index_of(comp, "backward mb0 c0 layer 0"))], kTensor, gather));
  // Bytes and groups: each TP rank sends half of b x s x h in fp16 to the same TP rank of the next
  // stage; the gather rebuilds the whole tensor over the TP group.
  const double activation = 2.0 * static_cast<double>(in.plan.micro_batch * in.model.seq_len * in.model.hidden);
  const auto& sent = prog.collectives[static_cast<std::size_t>(r.streams[kSendNext].tasks[static_cast<std::size_t>(send)].collective)];
  EXPECT_EQ(sent.op, collective::Op::send_recv);
  EXPECT_EQ(sent.group, (std::vector<int>{1, 5}));
  EXPECT_DOUBLE_EQ(sent.size, activation / 2);
  const auto& gathered = prog.collectives[static_cast<std::size_t>(g.collective)];
  EXPECT_EQ(gathered.op, collective::Op::all_gather);
  EXPECT_EQ(gathered.group, (std::vector<int>{0, 1}));
  EXPECT_DOUBLE_EQ(gathered.size, activation);
  // The peer (rank 5, stage 1) holds the same two transfers in one exchange: the gradient it
  // sends back and the activation it receives.
  const auto& peer = prog.ranks[5];
  const Task& peer_send = peer.streams[kSendPrev].tasks[static_cast<std::size_t>(index_of(peer.streams[kSendPrev], "send gradient 0<-1 mb0"))];
  const Task& peer_recv = peer.streams[kRecvPrev].tasks[static_cast<std::size_t>(index_of(peer.streams[kRecvPrev], "recv activation 0->1 mb1"))];
  EXPECT_EQ(peer_send.deps, peer_recv.deps);
  EXPECT_EQ(peer_send.collective, r.streams[kRecvNext].tasks[static_cast<std::size_t>(recv)].collective);
  // The step's last exchange (stage 1's last gradient going back) comes before its gradient
  // all-reduce.
  const auto& dp = peer.streams[2];
  EXPECT_TRUE(waits_for(dp.tasks.front(), kSendPrev, static_cast<int>(peer.streams[kSendPrev].tasks.size()) - 1));
}

TEST(PipelineExchangeProgram, WithoutScatterGatherEveryTensorRankSendsTheWholeTensor) {
  ScheduleInputs in = testing_support::tiny_tp2_pp2_dp2();
  in.plan.pipeline_scatter_gather = false;
  const Program prog = build_program(in);
  validate(prog);
  const auto& r = prog.ranks[1];
  const double activation = 2.0 * static_cast<double>(in.plan.micro_batch * in.model.seq_len * in.model.hidden);
  EXPECT_DOUBLE_EQ(prog.collectives[static_cast<std::size_t>(r.streams[kSendNext].tasks.front().collective)].size, activation);
  for (const auto& t : r.streams[kTensor].tasks) EXPECT_EQ(t.name.str().rfind("tp gather", 0), std::string::npos);
}

TEST(PipelineExchangeProgram, InterleavedProgramIsConsistent) {
  ScheduleInputs in = testing_support::tiny_tp2_pp2_dp2();
  in.plan.pipeline = plan::PipelineSchedule::interleaved;
  in.plan.virtual_stages = 2;
  const Program prog = build_program(in);
  validate(prog);  // every transfer on both peers, in an order neither can deadlock on
  // Stage 0's chunk 1 receives from stage 1's chunk 0: rank 1 <- rank 5.
  const auto& r = prog.ranks[1];
  const int wrap = index_of(r.streams[kRecvPrev], "recv activation 1->2 mb0");
  EXPECT_EQ(prog.collectives[static_cast<std::size_t>(r.streams[kRecvPrev].tasks[static_cast<std::size_t>(wrap)].collective)].group,
            (std::vector<int>{5, 1}));
}

TEST(PipelineExchangeProgram, OverlappedExchangesHoldBackOnlyTheSlotThatReadsThem) {
  ScheduleInputs in = testing_support::tiny_tp2_pp2_dp2();
  in.plan.pipeline = plan::PipelineSchedule::interleaved;
  in.plan.virtual_stages = 2;
  in.plan.pipeline_scatter_gather = false;  // Megatron-core sends whole tensors
  const Program batched = build_program(in);
  in.plan.overlap_p2p_comm = true;
  const Program prog = build_program(in);
  validate(prog);
  const auto& r = prog.ranks[1];  // stage 0
  auto task = [&](const Program& p, int stream, const std::string& name) -> const Task& {
    const auto& st = p.ranks[1].streams[static_cast<std::size_t>(stream)];
    return st.tasks[static_cast<std::size_t>(index_of(st, name))];
  };
  // Steady state: F2 sends its output (left in flight); B0c1 does not wait for that send, only
  // for its own gradient, received in flight since the warm-up's end; nor does F3, which follows
  // B0c1's exchange. The batched schedule makes F3 wait for the whole exchange after F2 B0c1.
  const int send = index_of(r.streams[kSendNext], "send activation 0->1 mb2");
  const int gradient = index_of(r.streams[kRecvNext], "recv gradient 2<-3 mb0");
  const Task& b0c1 = task(prog, kCompute, "backward mb0 c1 layer 0");
  EXPECT_FALSE(waits_for(b0c1, kSendNext, send));
  EXPECT_TRUE(waits_for(b0c1, kRecvNext, gradient));
  EXPECT_FALSE(waits_for(task(prog, kCompute, "embedding forward mb3 c0"), kSendNext, send));
  EXPECT_FALSE(task(prog, kCompute, "embedding forward mb3 c0").host_sync);
  EXPECT_TRUE(waits_for(task(batched, kCompute, "embedding forward mb3 c0"), kSendNext,
                        index_of(batched.ranks[1].streams[kSendNext], "send activation 0->1 mb2")));
  EXPECT_TRUE(task(batched, kCompute, "embedding forward mb3 c0").host_sync);
  // F3's send waits for F2's (send_next_wait_handle) before the compute after it, B1c1.
  const int send3 = index_of(r.streams[kSendNext], "send activation 0->1 mb3");
  EXPECT_TRUE(waits_for(task(prog, kCompute, "backward mb1 c1 layer 0"), kSendNext, send));
  EXPECT_FALSE(waits_for(task(prog, kCompute, "backward mb1 c1 layer 0"), kSendNext, send3));
  // A forward of chunk 1 waits for its input from the wrap-around, received in flight.
  const int wrap = index_of(r.streams[kRecvPrev], "recv activation 1->2 mb2");
  EXPECT_TRUE(waits_for(task(prog, kCompute, "forward mb2 c1 layer 0"), kRecvPrev, wrap));
}

/// A ZB-V plan over `pp` stages (tp 1, dp 1) of tiny_tp2_pp2_dp2's model, 4 layers per stage.
ScheduleInputs zero_bubble_v_inputs(long pp, long m) {
  ScheduleInputs in = testing_support::tiny_tp2_pp2_dp2();
  in.model.layers = 4 * pp;
  in.plan.tp = 1;
  in.plan.pp = pp;
  in.plan.accumulation = m;
  in.plan.pipeline = plan::PipelineSchedule::zero_bubble_v;
  in.plan.virtual_stages = 2;
  in.layout = plan::layout_of(in.plan, pp, pp);
  in.stages.assign(static_cast<std::size_t>(pp), {100, 10, 1});
  return in;
}

TEST(ZeroBubbleVPrograms, TheVTurnsOnTheLastStageAndEachBatchGoesOutWhereItsReaderOrAComputeIsNext) {
  const plan::TrainingPlan p = zero_bubble_v_inputs(4, 8).plan;
  EXPECT_EQ(plan::virtual_stage_of(p, 3, 1), 4);
  EXPECT_EQ(plan::virtual_stage_of(p, 0, 1), 7);
  EXPECT_EQ(plan::stage_of_virtual(p, 5), 2);
  EXPECT_EQ(plan::head_stage(p), 0);
  const auto programs = zero_bubble_v_programs(zero_bubble_v_schedule(4, 8, {6, 4, 4, 1}, {4, -3, 0}), p);
  for (long s = 0; s < 4; ++s) {
    const auto& steps = programs.steps[static_cast<std::size_t>(s)];
    const auto& slots = programs.slots[static_cast<std::size_t>(s)];
    // Every (pass, chunk, micro-batch) once: 8 x 2 forwards, B and W each.
    EXPECT_EQ(slots.size(), 48u);
    for (std::size_t i = 0; i < steps.size(); ++i) {
      if (steps[i].compute) continue;
      // Nothing is waited for at the exchange, and it never sends a tensor across the V's tip.
      EXPECT_FALSE(steps[i].waited);
      for (const auto& t : steps[i].transfers) EXPECT_NE(t.boundary, 3) << "stage " << s;
      // A batch is cut only before a compute or where the compute next reads it.
      if (i + 1 < steps.size() && !steps[i + 1].compute) {
        std::size_t next = i + 1;
        while (!steps[next].compute) ++next;
        const auto& reader = slots[steps[next].slot];
        const long vs = plan::virtual_stage_of(p, s, reader.chunk);
        const bool reads = std::any_of(steps[i].transfers.begin(), steps[i].transfers.end(), [&](const auto& t) {
          return !t.send && t.micro_batch == reader.micro_batch &&
                 (reader.forward ? !t.gradient && t.boundary == vs - 1 : t.gradient && t.boundary == vs);
        });
        EXPECT_TRUE(reads) << "stage " << s << " step " << i;
      }
    }
  }
  // The first stage ends the V: its chunk 1 forward of micro-batch 0 reads boundary 6 (from
  // stage 1), and its input gradients of chunk 1 need none (the loss is there).
  const auto& first = programs.steps[0];
  bool received = false;
  for (const auto& step : first)
    for (const auto& t : step.transfers) received |= !t.send && !t.gradient && t.boundary == 6 && t.micro_batch == 0;
  EXPECT_TRUE(received);
  for (const auto& step : first)
    for (const auto& t : step.transfers) EXPECT_FALSE(!t.send && t.gradient && t.boundary == 7);
}

TEST(ZeroBubbleVPrograms, AReaderWaitsForItsWholeBatchAndTheLastStageFeedsItselfAcrossTheTip) {
  ScheduleInputs in = zero_bubble_v_inputs(2, 4);
  const Program prog = build_program(in);
  validate(prog);
  auto task = [&](int rank, int stream, const std::string& name) -> const Task& {
    const auto& st = prog.ranks[static_cast<std::size_t>(rank)].streams[static_cast<std::size_t>(stream)];
    return st.tasks[static_cast<std::size_t>(index_of(st, name))];
  };
  // Stage 1 (rank 1) runs chunk 0 (virtual stage 1) and chunk 1 (virtual stage 2): its chunk 1
  // forward reads chunk 0's output in place, no receive.
  const Task& tip = task(1, kCompute, "forward mb0 c1 layer 0");
  for (const auto& d : tip.deps) EXPECT_NE(d.stream, kRecvPrev);
  // Stage 0's head forward (virtual stage 3) waits for the activation stage 1 sent back.
  const int back = index_of(prog.ranks[0].streams[kRecvPrev], "recv activation 2->3 mb0");
  EXPECT_GE(back, 0);
  EXPECT_TRUE(waits_for(task(0, kCompute, "forward mb0 c1 layer 0"), kRecvPrev, back));
  // The first stage holds the embedding and the head; no tied-embedding all-reduce crosses stages.
  EXPECT_GE(index_of(prog.ranks[0].streams[kCompute], "head forward mb0 c1"), 0);
  for (const auto& c : prog.collectives) EXPECT_EQ(std::string(c.name).find("word-embedding"), std::string::npos);
  // Sends are waited for only at the step's end, before the gradients are reduced: each
  // direction's last one (its stream runs them in order).
  const Task& wait = task(1, kCompute, "wait for the step's sends");
  EXPECT_DOUBLE_EQ(wait.duration, 0);
  const auto& sends = prog.ranks[1].streams[kSendNext];
  EXPECT_TRUE(waits_for(wait, kSendNext, static_cast<int>(sends.tasks.size()) - 1));
  const auto& gradients = prog.ranks[1].streams[kSendPrev];
  EXPECT_TRUE(waits_for(wait, kSendPrev, static_cast<int>(gradients.tasks.size()) - 1));
}

TEST(ZeroBubbleVPrograms, WithTensorParallelismEveryTpRankSendsTheWholeTensorAndOnlyBReduces) {
  ScheduleInputs in = zero_bubble_v_inputs(2, 4);
  in.plan.tp = 2;
  in.plan.pipeline_scatter_gather = false;
  in.layout = plan::layout_of(in.plan, 4, 4);
  const Program prog = build_program(in);
  validate(prog);
  double sent = 0;
  for (const auto& c : prog.collectives)
    if (std::string(c.name) == "activation 0->1 mb0") sent = c.size;
  EXPECT_DOUBLE_EQ(sent, 2.0 * static_cast<double>(in.plan.micro_batch * in.model.seq_len * in.model.hidden));  // bf16
  // The TP all-reduces of a backward belong to its input gradients; a W has none between its GEMMs.
  const auto& tensor = prog.ranks[0].streams[kTensor];
  EXPECT_GE(index_of(tensor, "tp all-reduce mb0 c0"), 0);
  for (const auto& t : tensor.tasks) EXPECT_EQ(std::string(t.name).find("weight gradient"), std::string::npos);
  in.plan.pipeline_scatter_gather = true;
  EXPECT_THROW((void)build_program(in), std::exception);
}

TEST(ZeroBubbleVPrograms, ABKeepsWhatItsWNeedsUntilTheW) {
  ScheduleInputs in = zero_bubble_v_inputs(2, 4);
  for (auto& m : in.stages) m.queued_weight_gradients_per_micro_batch = 7;
  const Program prog = build_program(in);
  const auto& compute = prog.ranks[1].streams[kCompute];
  auto task = [&](const std::string& name) -> const Task& {
    return compute.tasks[static_cast<std::size_t>(index_of(compute, name))];
  };
  // A chunk's input gradients end by freeing its activations (10 / 2 per chunk) and taking the
  // W's inputs; its W frees them.
  const Task& b = task("backward mb1 c0 layer 1");
  EXPECT_DOUBLE_EQ(b.release, 5);
  EXPECT_DOUBLE_EQ(b.alloc, 7);
  EXPECT_DOUBLE_EQ(task("weight gradient mb1 c0 layer 1").release, 7);
  EXPECT_DOUBLE_EQ(testing_support::allocated_bytes(prog.ranks[1]), 4 * 2 * (5 + 7));
}

}  // namespace
}  // namespace trainsim::program

// Hugging Face's Trainer loop after the backward (model/hf_trainer_step.hpp) and its tasks in the
// DDP schedule (program/data_parallel_schedule.hpp), no SimGrid: the phases, their kernels and
// bytes, where the host reads a device value back, and which run as Python loops.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/hf_trainer_step.hpp"
#include "program/data_parallel_schedule.hpp"
#include "support/fixtures.hpp"

namespace trainsim::program {
namespace {

model::TransformerSpec bert_base() {
  model::TransformerSpec s{"BERT-base", 12, 768, 12, 3072, 32000, 512, true};
  s.causal = false;
  return s;
}

/// A small BERT-like model (MLM head) and the DDP schedule over 2 ranks of one node, under the
/// transformers 4.21 Trainer's loop.
model::TransformerSpec small_bert() { return {"small", 2, 64, 4, 256, 1000, 32, true}; }

DataParallelConfig trainer_ddp(long micro_batch, long accumulation) {
  DataParallelConfig c;
  c.world = 2;
  c.ranks_per_node = 2;
  c.micro_batch = micro_batch;
  c.accumulation = accumulation;
  c.bucket_elements = 20e3;
  c.gradient_bytes = 4;
  c.trainer = model::TrainingLoop::hf_trainer_4_21;
  return c;
}

TEST(HfTrainerStep, ParameterTensorsOfBertForMaskedLm) {
  // 12 x 16 in the layers, word / position / token-type tables and the embedding LayerNorm's two,
  // the head's dense (2), LayerNorm (2) and decoder bias; the decoder weight is the word table.
  EXPECT_EQ(model::hf_parameter_tensors(bert_base()), 12 * 16 + 5 + 5);
}

TEST(HfTrainerStep, Transformers421LoopOnAmp) {
  const double params = 110e6;
  const long tensors = 202;
  const auto phases = model::trainer_step_phases(model::TrainingLoop::hf_trainer_4_21, params, tensors);
  std::vector<std::string> names;
  for (const auto& p : phases) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"trainer loss nan/inf check", "GradScaler unscale_",
                                             "clip_grad_norm_ per-parameter norms", "clip_grad_norm_ total and coefficient",
                                             "clip_grad_norm_ per-parameter scale", "transformers AdamW per-parameter loop",
                                             "GradScaler update", "model.zero_grad"}));
  // The host reads back: isnan / isinf before unscale_, get_scale() and found_inf before the
  // optimizer, get_scale() after update before zero_grad.
  std::vector<bool> syncs, loops;
  for (const auto& p : phases) {
    syncs.push_back(p.host_sync_before);
    loops.push_back(p.python_loop);
  }
  EXPECT_EQ(syncs, (std::vector<bool>{false, true, false, false, false, true, false, true}));
  EXPECT_EQ(loops, (std::vector<bool>{false, false, true, false, true, true, false, true}));
  // transformers' AdamW: 7 kernels per parameter tensor, 8 + 12 + 8 + 12 + 8 + 8 + 16 = 72 bytes
  // per fp32 element.
  const auto& adam = phases[5].ops;
  EXPECT_EQ(model::ops_kernels(adam), 7 * tensors);
  double bytes = 0;
  for (const auto& op : adam) bytes += op.bytes;
  EXPECT_DOUBLE_EQ(bytes, 72 * params);
  // unscale_: 4 scalar kernels, then multi_tensor_apply's launches: 110e6 / 65,536 + 202 = 1,880
  // chunks, 320 per launch: 6 (the 110-tensor limit would give 2).
  EXPECT_EQ(model::ops_kernels(phases[1].ops), 4 + 6);
  EXPECT_EQ(model::ops_kernels(phases[7].ops), tensors);  // zero_ per gradient
}

TEST(HfTrainerStep, PhasesReplaceTheOptimizerStepInDdp) {
  model::DeviceProfile dev = testing_support::round_number_device();
  dev.eager_copy_call = 10e-6;
  const model::TransformerSpec s = small_bert();
  const DataParallelConfig c = trainer_ddp(2, 1);
  const Program p = build_data_parallel(s, dev, c);
  validate(p);
  const auto& comp = p.ranks[0].streams[0].tasks;
  const auto phases = model::trainer_step_phases(model::TrainingLoop::hf_trainer_4_21, model::parameter_count(s),
                                                 model::hf_parameter_tensors(s));
  ASSERT_GE(comp.size(), phases.size());
  const std::size_t first = comp.size() - phases.size();
  for (const auto& t : comp) EXPECT_NE(t.name.str(), "optimizer step");
  const auto buckets = p.ranks[0].streams[1].tasks.size();
  ASSERT_GE(buckets, 2U);
  // The loss check waits for every bucket's all-reduce, without a host read-back before it.
  EXPECT_EQ(comp[first].deps.size(), buckets);
  EXPECT_FALSE(comp[first].host_sync);
  for (std::size_t i = 0; i < phases.size(); ++i) {
    const auto& t = comp[first + i];
    EXPECT_EQ(t.name.str(), phases[i].name);
    EXPECT_EQ(t.phase, Phase::optimizer);
    EXPECT_EQ(t.kernels, model::ops_kernels(phases[i].ops));
    EXPECT_DOUBLE_EQ(t.duration, model::phase_duration(phases[i], dev));
    EXPECT_EQ(t.host_sync, phases[i].host_sync_before) << phases[i].name;
    // A read-back waits for the task before it on the compute stream.
    if (i > 0 && phases[i].host_sync_before) {
      EXPECT_TRUE(t.deps.size() == 1 && t.deps[0].index == static_cast<int>(first + i - 1)) << phases[i].name;
    }
    EXPECT_DOUBLE_EQ(t.host_per_kernel, phases[i].python_loop ? 10e-6 : 0.0);
  }
}

TEST(HfTrainerStep, MainProcessCollationHoldsTheHostBeforeEachMicroBatchsForward) {
  model::DeviceProfile dev = testing_support::round_number_device();
  model::TransformerSpec s = small_bert();
  const DataParallelConfig c = trainer_ddp(3, 2);
  // Without a measured per-token time: no host stream.
  const std::size_t streams = build_data_parallel(s, dev, c).ranks[0].streams.size();
  dev.mlm_collate_token = 2e-6;
  const Program p = build_data_parallel(s, dev, c);
  validate(p);
  for (const auto& r : p.ranks) {
    ASSERT_EQ(r.streams.size(), streams + 1);
    const Stream& host = r.streams.back();
    EXPECT_EQ(host.kind, StreamKind::host);
    ASSERT_EQ(host.tasks.size(), 2U);  // one per micro-batch
    const int host_index = static_cast<int>(r.streams.size()) - 1;
    for (int mb = 0; mb < 2; ++mb) {
      EXPECT_EQ(host.tasks[static_cast<std::size_t>(mb)].kind, TaskKind::host);
      EXPECT_DOUBLE_EQ(host.tasks[static_cast<std::size_t>(mb)].duration, 2e-6 * 3 * 32);  // micro-batch x seq tokens
      const std::string fwd = "forward mb" + std::to_string(mb);
      int found = 0;
      for (const auto& t : r.streams[0].tasks)
        if (t.name.str() == fwd) {
          ++found;
          ASSERT_EQ(t.deps.size(), 1U);
          EXPECT_EQ(t.deps[0].stream, host_index);
          EXPECT_EQ(t.deps[0].index, mb);
        }
      EXPECT_EQ(found, 1) << fwd;
    }
  }
  // A model without the MLM head (not run_mlm.py's collator): none.
  s.mlm_head = false;
  EXPECT_EQ(build_data_parallel(s, dev, c).ranks[0].streams.size(), streams);
}

}  // namespace
}  // namespace trainsim::program

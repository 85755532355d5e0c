// Each memory term against hand arithmetic written here (memory/rank_memory.hpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "memory/rank_memory.hpp"
#include "plan/gradient_state.hpp"

namespace trainsim::memory {
namespace {

// A GPT-style model with round numbers: h 1024, 16 heads, 8 layers, seq 512, vocab 32000.
model::TransformerSpec gpt() {
  model::TransformerSpec s{"test", 8, 1024, 16, 4096, 32000, 512, false};
  s.embedding_norm = false;
  s.final_norm = true;
  return s;
}

plan::TrainingPlan amp_adam(plan::Sharding sharding, long micro_batch = 2) {
  plan::TrainingPlan p;
  p.sharding = sharding;
  EXPECT_TRUE(plan::precision_recipe("amp", p.precision));
  p.micro_batch = micro_batch;
  p.bucket_elements = 1e6;
  return p;
}

MemoryInputs inputs(const plan::TrainingPlan& p, long world = 8) {
  return {gpt(), p, plan::layout_of(p, world, 8), 80.0 * (1ull << 30), 1e9};
}

TEST(RankMemory, AmpAdamIsTwentyBytesPerParameterUnsharded) {
  const auto r = stage_memory(inputs(amp_adam(plan::Sharding::none)), 0);
  const double P = model::parameter_count(gpt());
  // Source 002: fp16 weights 2 + fp16 gradients 2 + fp32 master 4 + fp32 gradients 4 + Adam 8.
  EXPECT_DOUBLE_EQ(r.term("weights"), 2 * P);
  EXPECT_DOUBLE_EQ(r.term("gradients"), 2 * P);
  EXPECT_DOUBLE_EQ(r.term("master_weights"), 4 * P);
  EXPECT_DOUBLE_EQ(r.term("master_gradients"), 4 * P);
  EXPECT_DOUBLE_EQ(r.term("optimizer_states"), 8 * P);
  // DDP's buckets are a copy of the gradients in the wire dtype (bf16).
  EXPECT_DOUBLE_EQ(r.term("communication_buffers"), 2 * P);
  EXPECT_DOUBLE_EQ(r.term("runtime_reserve"), 1e9);
  double sum = 0;
  for (const auto& t : r.terms) sum += t.bytes;
  EXPECT_DOUBLE_EQ(r.peak, sum);
}

TEST(RankMemory, HfBertUnderAutocastKeepsFp32ParametersAndWhatAutogradSaves) {
  // A small BERT (4 layers, h 256, 4 heads, f 1024, vocab 1000, seq 128) under hf-bert with the
  // amp recipe: torch.cuda.amp keeps fp32 parameters and fp32 .grad (the Trainer zeroes, not
  // frees, them), no master copy; AdamW's two fp32 moments.
  model::TransformerSpec s{"small-bert", 4, 256, 4, 1024, 1000, 128, true};
  s.causal = false;
  plan::TrainingPlan p = amp_adam(plan::Sharding::none, 2);
  p.module_kernels = plan::ModuleKernels::hf_bert;
  p.gradient_wire_bytes = 4;
  MemoryInputs in{s, p, plan::layout_of(p, 8, 8), 80.0 * (1ull << 30), 1e9};
  const auto r = stage_memory(in, 0);
  const double P = model::parameter_count(s);
  EXPECT_DOUBLE_EQ(r.term("weights"), 4 * P);
  EXPECT_DOUBLE_EQ(r.term("gradients"), 4 * P);
  EXPECT_DOUBLE_EQ(r.term("master_weights"), 0);
  EXPECT_DOUBLE_EQ(r.term("master_gradients"), 0);
  EXPECT_DOUBLE_EQ(r.term("optimizer_states"), 8 * P);
  EXPECT_DOUBLE_EQ(r.term("communication_buffers"), 4 * P);  // DDP's fp32 buckets, a copy
  // Activations, by hand: t = 256 tokens, th = t x 256, e = 2 x 4 x 128^2 scores, per layer
  // 42 th + 7 e + 16 t + 2 B x the layer's 4 h^2 + 2 h f weights; the embeddings 5 th + 8 t; the
  // head 10 th + 8 t + 2 B x (h^2 + h V) weights + the fp32 log-probabilities 4 t V.
  const double t = 256, th = t * 256, e = 2 * 4 * 128.0 * 128, V = 1000;
  const double layer = 42 * th + 7 * e + 16 * t + 2 * (4 * 256.0 * 256 + 2 * 256.0 * 1024);
  const double embedding = 5 * th + 8 * t;
  const double head = 10 * th + 8 * t + 2 * (256.0 * 256 + 256 * V) + 4 * t * V;
  EXPECT_DOUBLE_EQ(r.term("activations"), 4 * layer + embedding + head);
  // Backward workspace: the larger of two gradients of the layer's largest tensor (the fp32
  // softmax output, 4 e) and the loss's two fp32 gradients of the logits (8 t V).
  EXPECT_DOUBLE_EQ(r.term("activation_workspace"), std::max(2 * 4 * e, 8 * t * V));
  // Without hf-bert the same plan counts the fused bf16 layer and the amp recipe's 20 B.
  plan::TrainingPlan fused = p;
  fused.module_kernels = plan::ModuleKernels::fused;
  in.plan = fused;
  const auto f = stage_memory(in, 0);
  EXPECT_DOUBLE_EQ(f.term("master_weights"), 4 * P);
  EXPECT_LT(f.term("activations"), r.term("activations"));
}

TEST(RankMemory, ZeroStagesShardOneMoreCopyEach) {
  const double P = model::parameter_count(gpt());
  const auto z1 = stage_memory(inputs(amp_adam(plan::Sharding::zero1)), 0);
  EXPECT_DOUBLE_EQ(z1.term("weights"), 2 * P);
  EXPECT_DOUBLE_EQ(z1.term("gradients"), 2 * P);
  EXPECT_DOUBLE_EQ(z1.term("master_weights") + z1.term("master_gradients") + z1.term("optimizer_states"),
                   16 * P / 8);
  // Two DeepSpeed buckets of 1e6 bf16 elements.
  EXPECT_DOUBLE_EQ(z1.term("communication_buffers"), 2 * 1e6 * 2);
  const auto z2 = stage_memory(inputs(amp_adam(plan::Sharding::zero2)), 0);
  EXPECT_DOUBLE_EQ(z2.term("gradients"), 2 * P / 8);
  EXPECT_DOUBLE_EQ(z2.term("weights"), 2 * P);
  const auto z3 = stage_memory(inputs(amp_adam(plan::Sharding::zero3)), 0);
  EXPECT_DOUBLE_EQ(z3.term("weights"), 2 * P / 8);
  EXPECT_DOUBLE_EQ(z3.term("communication_buffers"), 0);
  // Gathered: the unit in use and the prefetched one, plus one unit of gradients, in bf16. The
  // largest unit on this (only) stage is the embedding, 32000 x 1024 + 512 x 1024.
  const double unit = (32000.0 + 512.0) * 1024.0;
  ASSERT_GT(unit, model::parameters_per_layer(gpt()));
  EXPECT_DOUBLE_EQ(z3.term("gathered_parameters"), 2 * unit * 2);
  EXPECT_DOUBLE_EQ(z3.term("gathered_gradients"), unit * 2);
}

TEST(RankMemory, FsdpMixedPrecisionKeepsOnlyShardedFp32State) {
  plan::TrainingPlan p = amp_adam(plan::Sharding::fsdp);
  ASSERT_TRUE(plan::precision_recipe("fsdp_mixed", p.precision));
  p.shard_degree = 4;  // hybrid: shard over 4, replicate over 2
  const auto r = stage_memory(inputs(p), 0);
  const double P = model::parameter_count(gpt());
  EXPECT_DOUBLE_EQ(r.term("weights"), 0);
  EXPECT_DOUBLE_EQ(r.term("gradients"), 0);
  EXPECT_DOUBLE_EQ(r.term("master_weights") + r.term("master_gradients") + r.term("optimizer_states"),
                   (4 + 4 + 8) * P / 4);
}

TEST(RankMemory, Fsdp2InsidePipelineStagesHoldsTheWholeStageGatheredAndItsFp32Gradients) {
  // torchtitan's PP: no unit resharded after forward, gradients accumulated unsharded in fp32.
  plan::TrainingPlan p = amp_adam(plan::Sharding::fsdp);
  ASSERT_TRUE(plan::precision_recipe("fsdp_mixed", p.precision));
  p.fsdp_implementation = plan::FsdpImplementation::torch_fsdp2;
  p.gradient_wire_bytes = 4;
  p.pp = 2;  // 4 layers a stage; DP 4
  p.accumulation = 4;
  const auto r = stage_memory(inputs(p), 1);
  const double layer = model::parameters_per_layer(gpt());
  // The last stage's layers, head and (tied embeddings) its copy of the word embedding.
  const double stage = 4 * layer + model::head_parameters(gpt()) + 32000.0 * 1024;
  const double unit = std::max(layer, model::head_parameters(gpt()));
  EXPECT_DOUBLE_EQ(r.term("gathered_parameters"), 2 * stage);
  EXPECT_DOUBLE_EQ(r.term("gathered_gradients"), 4 * stage + 2 * unit);
  EXPECT_DOUBLE_EQ(r.term("master_weights") + r.term("master_gradients") + r.term("optimizer_states"),
                   (4 + 4 + 8) * stage / 4);
}

TEST(RankMemory, TorchFsdp1HoldsThePostBackwardCopiesAndTheRootUnit) {
  plan::TrainingPlan p = amp_adam(plan::Sharding::fsdp);
  ASSERT_TRUE(plan::precision_recipe("fsdp_mixed", p.precision));
  const double layer = model::parameters_per_layer(gpt());
  const double root = model::embedding_parameters(gpt()) + model::head_parameters(gpt());
  ASSERT_GT(root, layer);
  // Generic: two of the largest unit (here the embedding) in flight, one gradient.
  auto r = stage_memory(inputs(p), 0);
  EXPECT_DOUBLE_EQ(r.term("gathered_parameters"), 2 * model::embedding_parameters(gpt()) * 2);
  EXPECT_DOUBLE_EQ(r.term("gathered_gradients"), model::embedding_parameters(gpt()) * 2);
  p.fsdp_implementation = plan::FsdpImplementation::torch_fsdp1;
  // Two layers in flight and the root kept; bf16 reduce (mixed_precision PURE): the largest
  // unit's gradient, the one before's and its pad copy.
  r = stage_memory(inputs(p), 0);
  EXPECT_DOUBLE_EQ(r.term("gathered_parameters"), (2 * layer + root) * 2);
  EXPECT_DOUBLE_EQ(r.term("gathered_gradients"), root * (2 + 2 + 2));
  // fp32 reduce (DEFAULT): the one before's bf16 gradient, its fp32 cast and the fp32 pad copy.
  p.gradient_wire_bytes = 4;
  r = stage_memory(inputs(p), 0);
  EXPECT_DOUBLE_EQ(r.term("gathered_gradients"), root * (2 + 2 + 4 + 4));
  // PyTorch 2.x pads only a unit that does not divide by the 8 ranks, and the root does.
  ASSERT_EQ(std::fmod(root, 8), 0);
  p.fsdp_pad_copy = plan::FsdpPadCopy::uneven;
  EXPECT_DOUBLE_EQ(stage_memory(inputs(p), 0).term("gathered_gradients"), root * (2 + 2 + 4));
  p.gradient_wire_bytes = 2;
  EXPECT_DOUBLE_EQ(stage_memory(inputs(p), 0).term("gathered_gradients"), root * (2 + 2));
  p.gradient_wire_bytes = 4;
  p.fsdp_pad_copy = plan::FsdpPadCopy::always;
  // BACKWARD_PRE or forward_prefetch: the next unit's gather is issued before the current one is
  // resharded, so the limiter's two free events leave three layers gathered.
  p.fsdp_backward_prefetch = plan::FsdpBackwardPrefetch::backward_pre;
  EXPECT_DOUBLE_EQ(stage_memory(inputs(p), 0).term("gathered_parameters"), (3 * layer + root) * 2);
  p.fsdp_backward_prefetch = plan::FsdpBackwardPrefetch::none;
  EXPECT_DOUBLE_EQ(stage_memory(inputs(p), 0).term("gathered_parameters"), (2 * layer + root) * 2);
  p.fsdp_forward_prefetch = true;
  EXPECT_DOUBLE_EQ(stage_memory(inputs(p), 0).term("gathered_parameters"), (3 * layer + root) * 2);
  // SHARD_GRAD_OP frees no unit after its forward: every layer is gathered when it ends, whatever
  // the prefetching.
  p.fsdp_sharding_strategy = plan::FsdpShardingStrategy::shard_grad_op;
  const double layers = static_cast<double>(gpt().layers);
  EXPECT_DOUBLE_EQ(stage_memory(inputs(p), 0).term("gathered_parameters"), (layers * layer + root) * 2);
  p.fsdp_forward_prefetch = false;
  EXPECT_DOUBLE_EQ(stage_memory(inputs(p), 0).term("gathered_parameters"), (layers * layer + root) * 2);
}

TEST(RankMemory, ContextParallelismHalvesTheActivationsAndShardsOverDataTimesContext) {
  plan::TrainingPlan p = amp_adam(plan::Sharding::zero1);
  p.flash_attention = true;
  const auto without = stage_memory(inputs(p), 0);  // DP 8
  p.cp = 2;
  const auto with = stage_memory(inputs(p), 0);  // DP 4 x CP 2: seq 256 per rank
  EXPECT_DOUBLE_EQ(with.term("activations") * 2, without.term("activations"));
  // The optimizer is sharded over the 8 ranks of DP x CP either way.
  EXPECT_DOUBLE_EQ(with.term("optimizer_states"), without.term("optimizer_states"));
  EXPECT_DOUBLE_EQ(with.term("weights"), without.term("weights"));
}

TEST(RankMemory, Bf16OptimizerStateHalvesTheMomentsAndTheParameterCopy) {
  plan::TrainingPlan p = amp_adam(plan::Sharding::zero1);
  ASSERT_TRUE(plan::precision_recipe("bf16_fp32_grads", p.precision));
  p.gradient_buffers = plan::GradientBuffers::apex_distributed_fused_adam;
  const auto fp32 = stage_memory(inputs(p), 0);
  p.optimizer_state_element_bytes = 2;
  p.precision.master_weights = 2;
  const auto bf16 = stage_memory(inputs(p), 0);
  EXPECT_DOUBLE_EQ(bf16.term("optimizer_states"), fp32.term("optimizer_states") / 2);
  EXPECT_DOUBLE_EQ(bf16.term("master_weights"), fp32.term("master_weights") / 2);
  EXPECT_DOUBLE_EQ(bf16.term("weights"), fp32.term("weights"));
}

// NeMo's GPT3-5B row (scenarios/nemo-h100-fp8.json): TP1 PP1, DP 64, Megatron-core's
// distributed optimizer with fp32 gradient reduction (grad_reduce_in_fp32).
plan::TrainingPlan megatron_core_zero1() {
  plan::TrainingPlan p;
  p.sharding = plan::Sharding::zero1;
  EXPECT_TRUE(plan::precision_recipe("bf16_fp32_grads", p.precision));
  p.micro_batch = 4;
  p.accumulation = 8;
  p.flash_attention = true;
  p.bucket_elements = 64e6;
  p.gradient_wire_bytes = 4;
  p.gradient_buffers = plan::GradientBuffers::megatron_core_distributed_optimizer;
  return p;
}

model::TransformerSpec gpt3_5b() {
  model::TransformerSpec s{"GPT3-5B", 24, 4096, 32, 16384, 51200, 2048, false};
  s.embedding_norm = false;
  s.final_norm = true;
  return s;
}

TEST(RankMemory, MegatronCoreDistributedOptimizerKeepsTheWholeGradientBuffer) {
  const auto p = megatron_core_zero1();
  const MemoryInputs in{gpt3_5b(), p, plan::layout_of(p, 64, 8), 80.0 * (1ull << 30), 1e9};
  ASSERT_EQ(in.layout.shard, 64);
  // 24 layers x (12 h^2 + 13 h) + 51200 x h tokens + 2048 x h positions + the final norm's 2 h,
  // h = 4096: 5,051,228,160 parameters.
  const double h = 4096, P = 24 * (12 * h * h + 13 * h) + 51200 * h + 2048 * h + 2 * h;
  ASSERT_DOUBLE_EQ(P, 5051228160.0);
  ASSERT_DOUBLE_EQ(model::parameter_count(gpt3_5b()), P);
  const auto r = stage_memory(in, 0);
  // The fp32 buffer, whole: 20.2 GB = 18.82 GiB (0.29 GiB, 4 P / 64, when it was sharded).
  EXPECT_DOUBLE_EQ(r.term("gradients"), 4 * P);
  EXPECT_NEAR(r.term("gradients") / (1ull << 30), 18.82, 0.005);
  // The fp32 shards' grads are views of it; master weights and moments are sharded over DP.
  EXPECT_DOUBLE_EQ(r.term("master_gradients"), 0);
  EXPECT_DOUBLE_EQ(r.term("master_weights"), 4 * P / 64);
  EXPECT_DOUBLE_EQ(r.term("optimizer_states"), 8 * P / 64);
  EXPECT_DOUBLE_EQ(r.term("weights"), 2 * P);
  // Reduce-scatter and all-gather run inside the buffers: no bucket copies.
  EXPECT_DOUBLE_EQ(r.term("communication_buffers"), 0);

  // A bf16 buffer (grad_reduce_in_fp32 off): half of it, and an fp32 copy of the rank's shard.
  plan::TrainingPlan bf16 = p;
  bf16.gradient_wire_bytes = 2;
  const auto b = stage_memory({gpt3_5b(), bf16, in.layout, in.capacity, in.runtime_reserve}, 0);
  EXPECT_DOUBLE_EQ(b.term("gradients"), 2 * P);
  EXPECT_DOUBLE_EQ(b.term("master_gradients"), 4 * P / 64);
}

TEST(RankMemory, OtherZero1OptimizersKeepTheirOwnGradientCopies) {
  const MemoryInputs base{gpt3_5b(), megatron_core_zero1(), plan::Layout{64, 8, 64, 64}, 80.0 * (1ull << 30), 0};
  const double P = model::parameter_count(gpt3_5b());
  // Apex's DistributedFusedAdam (bf16 state, grad_sync_dtype bf16 as Nemotron-340B's row): the
  // whole bf16 buffer and the rank's bf16 shard of the reduced gradients; no bucket copies.
  MemoryInputs apex = base;
  apex.plan.optimizer_state_element_bytes = 2;
  apex.plan.gradient_wire_bytes = 2;
  apex.plan.gradient_buffers = plan::GradientBuffers::apex_distributed_fused_adam;
  auto r = stage_memory(apex, 0);
  EXPECT_DOUBLE_EQ(r.term("gradients"), 2 * P);
  EXPECT_DOUBLE_EQ(r.term("master_gradients"), 2 * P / 64);
  EXPECT_DOUBLE_EQ(r.term("communication_buffers"), 0);
  // DeepSpeed's ZeRO-1 with AMP: the fp16 gradients whole, the fp32 copy sharded.
  MemoryInputs deepspeed = base;
  ASSERT_TRUE(plan::precision_recipe("amp", deepspeed.plan.precision));
  deepspeed.plan.gradient_buffers = plan::GradientBuffers::generic;
  r = stage_memory(deepspeed, 0);
  EXPECT_DOUBLE_EQ(r.term("gradients"), 2 * P);
  EXPECT_DOUBLE_EQ(r.term("master_gradients"), 4 * P / 64);
}

TEST(RankMemory, MegatronLocalDdpKeepsOneFp32MainGradBufferUnderBf16) {
  plan::TrainingPlan p = amp_adam(plan::Sharding::none);
  ASSERT_TRUE(plan::precision_recipe("bf16_fp32_grads", p.precision));
  p.gradient_buffers = plan::GradientBuffers::megatron_local_ddp;
  const double P = model::parameter_count(gpt());
  // fp16 with the default flags (Megatron 2021): the fp16 main_grad, its flattened all-reduce
  // copy and the fp32 grads of the master parameters, 2 + 4 B beside the buckets' copy.
  p.gradient_wire_bytes = 2;
  ASSERT_FALSE(plan::megatron_fp32_main_grad_buffer(p.gradient_buffers, p.gradient_wire_bytes));
  auto r = stage_memory(inputs(p), 0);
  EXPECT_DOUBLE_EQ(r.term("gradients") + r.term("master_gradients") + r.term("communication_buffers"), 6 * P);
  // bf16 forces accumulate_allreduce_grads_in_fp32: one fp32 buffer, all-reduced in place, whose
  // tensors are the master parameters' grads.
  p.gradient_wire_bytes = 4;
  ASSERT_TRUE(plan::megatron_fp32_main_grad_buffer(p.gradient_buffers, p.gradient_wire_bytes));
  r = stage_memory(inputs(p), 0);
  EXPECT_DOUBLE_EQ(r.term("gradients"), 4 * P);
  EXPECT_DOUBLE_EQ(r.term("master_gradients"), 0);
  EXPECT_DOUBLE_EQ(r.term("communication_buffers"), 0);
  EXPECT_DOUBLE_EQ(r.term("master_weights"), 4 * P);  // unsharded
  EXPECT_DOUBLE_EQ(r.term("optimizer_states"), 8 * P);
}

TEST(RankMemory, Megatron2021GradientCopiesAreNotAllBesideTheActivations) {
  // Megatron-LM 6985e58, fp16 local DDP with Float16OptimizerWithFloat16Params, PP 4, 1F1B:
  // zero_grad(set_to_none=True) frees the fp32 grads before the forward, the step freed the
  // fp16 ones; autograd makes those again in the stage's first backward.
  plan::TrainingPlan p = amp_adam(plan::Sharding::none, 1);
  ASSERT_TRUE(plan::precision_recipe("bf16_fp32_grads", p.precision));
  p.gradient_buffers = plan::GradientBuffers::megatron_local_ddp;
  p.gradient_wire_bytes = 2;
  p.optimizer_implementation = plan::OptimizerImplementation::megatron_fp16;
  p.pp = 4;
  p.pipeline = plan::PipelineSchedule::one_f_one_b;
  p.accumulation = 4;  // stage 0: four forwards, then four backwards
  ASSERT_TRUE(megatron_step_gradients(p));
  auto r = stage_memory(inputs(p, 32), 0);
  const double params = r.term("weights") / 2;
  EXPECT_DOUBLE_EQ(r.term("gradients"), 2 * params);
  EXPECT_DOUBLE_EQ(r.term("communication_buffers"), 2 * params);
  EXPECT_DOUBLE_EQ(r.term("master_gradients"), 4 * params);
  const double acts = r.term("activations") + r.term("activation_workspace");
  const double base = r.sum_of_terms() - acts - 8 * params;  // 2 + 4 + 8 B of states + reserve
  EXPECT_FALSE(forward_after_first_backward(p, 0));
  // The activations' moment without any gradient (here the larger: 4 micro-batches of
  // h 1024 x seq 512 layers against 4 B per parameter), the step's with 4 B.
  EXPECT_DOUBLE_EQ(r.peak, std::max(base + acts, base + 4 * params));
  EXPECT_LT(r.peak, r.sum_of_terms());
  // Eight micro-batches: stage 0 runs forward 5 after backward 1, beside its fp16 gradients.
  p.accumulation = 8;
  EXPECT_TRUE(forward_after_first_backward(p, 0));
  EXPECT_TRUE(forward_after_first_backward(p, 3));  // the last stage alternates from the start
  r = stage_memory(inputs(p, 32), 0);
  EXPECT_DOUBLE_EQ(r.peak, std::max(base + acts + 2 * params, base + 4 * params));
  // Not under GPipe (every forward first) nor the generic or fp32-buffer paths.
  p.pipeline = plan::PipelineSchedule::gpipe;
  EXPECT_FALSE(forward_after_first_backward(p, 0));
  p.optimizer_implementation = plan::OptimizerImplementation::fused;
  EXPECT_FALSE(megatron_step_gradients(p));
}

// BLOOM's layout, scaled down: PP 2 under DeepSpeed's pipeline engine, ZeRO-1 over DP 4, the
// BF16_Optimizer all-reducing in bf16 (communication_data_type).
plan::TrainingPlan deepspeed_bf16_optimizer_pp2() {
  plan::TrainingPlan p = amp_adam(plan::Sharding::zero1, 1);
  EXPECT_TRUE(plan::precision_recipe("bf16_fp32_grads", p.precision));
  p.pp = 2;
  p.pipeline_engine = plan::PipelineEngine::deepspeed;
  p.gradient_wire_bytes = 2;
  p.zero1_gradient_all_reduce = true;
  p.gradient_buffers = plan::GradientBuffers::deepspeed_bf16_optimizer;
  return p;
}

TEST(RankMemory, DeepSpeedBf16OptimizerKeepsBf16AndFp32GradientsWhole) {
  plan::TrainingPlan p = deepspeed_bf16_optimizer_pp2();
  const auto s = gpt();
  const double P = 4 * model::parameters_per_layer(s) + model::embedding_parameters(s);  // stage 0
  p.bucket_elements = 1e6;  // smaller than the stage's flat group: all-reduced in place
  ASSERT_GT(P, p.bucket_elements);
  auto r = stage_memory(inputs(p), 0);
  EXPECT_DOUBLE_EQ(r.term("gradients"), 2 * P);
  EXPECT_DOUBLE_EQ(r.term("master_gradients"), 4 * P);
  EXPECT_DOUBLE_EQ(r.term("master_weights"), 4 * P / 4);
  EXPECT_DOUBLE_EQ(r.term("optimizer_states"), 8 * P / 4);
  EXPECT_DOUBLE_EQ(r.term("communication_buffers"), 0);
  p.bucket_elements = 5e8;  // both groups in one bucket: flattened into a copy
  r = stage_memory(inputs(p), 0);
  EXPECT_DOUBLE_EQ(r.term("communication_buffers"), 4 * P);
}

// DeepSpeed's allreduce_bucket all-reduces a bf16 copy of the BF16_Optimizer's fp32 gradients
// after the flush: 2 B x the stage's parameters, counted at that moment (model states + copy),
// not on top of the backward's activations; the peak is the larger moment.
TEST(RankMemory, DeepSpeedBf16ReduceCopiesTheFp32GradientsToBf16AfterTheFlush) {
  plan::TrainingPlan p = deepspeed_bf16_optimizer_pp2();
  p.bucket_elements = 1e6;
  const auto s = gpt();
  const double P = 4 * model::parameters_per_layer(s) + model::embedding_parameters(s);  // stage 0
  const auto r = stage_memory(inputs(p), 0);
  EXPECT_DOUBLE_EQ(r.term("gradient_reduce_copy"), 2 * P);
  const double backward = r.sum_of_terms() - 2 * P;
  const double reduce = r.sum_of_terms() - r.term("activations") - r.term("activation_workspace");
  EXPECT_DOUBLE_EQ(r.peak, std::max(backward, reduce));
  EXPECT_LT(r.peak, r.sum_of_terms());  // the copy and the activations never coexist
  // A config setting communication_data_type fp32 all-reduces the buffer itself: no copy.
  p.gradient_wire_bytes = 4;
  EXPECT_DOUBLE_EQ(stage_memory(inputs(p), 0).term("gradient_reduce_copy"), 0);
  // Other optimizers make no such copy.
  p.gradient_buffers = plan::GradientBuffers::megatron_core_distributed_optimizer;
  p.pipeline_engine = plan::PipelineEngine::megatron;
  p.zero1_gradient_all_reduce = false;
  const auto mcore = stage_memory(inputs(p), 0);
  EXPECT_DOUBLE_EQ(mcore.term("gradient_reduce_copy"), 0);
  EXPECT_DOUBLE_EQ(mcore.peak, mcore.sum_of_terms());
}

// DeepSpeed's PipelineEngine (fb0dc00f8 pipe/engine.py) keeps each in-flight micro-batch's stage
// output until its backward, as a 1/TP slice under TP > 1 (PartitionedTensor) or whole, restores
// the output and its gradient whole for the backward, and keeps receive buffers, the loaded
// inputs of each pipe buffer and the model's causal mask (memory/deepspeed_pipe_buffers.hpp).
TEST(RankMemory, DeepSpeedPipeEngineKeepsTheStageOutputAndItsBuffers) {
  const auto s = gpt();
  const double b = 2, seq = 512, h = 1024, output = 2 * b * seq * h, mask = seq * seq;
  for (long tp : {1L, 2L}) {
    plan::TrainingPlan p = deepspeed_bf16_optimizer_pp2();
    p.micro_batch = 2;
    p.accumulation = 8;
    p.tp = tp;
    plan::TrainingPlan megatron = p;
    megatron.pipeline_engine = plan::PipelineEngine::megatron;
    const double in_flight = micro_batches_in_flight(p, 0);
    ASSERT_DOUBLE_EQ(in_flight, 2);  // 1F1B, PP 2: DeepSpeed's TrainSchedule peaks at the same count
    const double kept = tp > 1 ? output / static_cast<double>(tp) : output;
    const auto first = stage_memory(inputs(p), 0), first_megatron = stage_memory(inputs(megatron), 0);
    EXPECT_DOUBLE_EQ(first.term("activations") - first_megatron.term("activations"), in_flight * kept) << tp;
    EXPECT_DOUBLE_EQ(first.term("activation_workspace") - first_megatron.term("activation_workspace"),
                     tp > 1 ? 2 * output : 0)
        << tp;
    // Three pipe buffers on stage 0 (max(2, min(pp - stage + 1, micro-batches))), each with int64
    // tokens and position ids and the bool causal mask; the gradient receive buffer; args.attn_mask.
    EXPECT_DOUBLE_EQ(first.term("pipe_buffers"), mask + kept + 3 * (2 * 8 * b * seq + mask)) << tp;
    EXPECT_DOUBLE_EQ(first_megatron.term("pipe_buffers"), 0);
    // The last stage sends nothing: no output kept; it receives (pipe_recv_buf) and loads labels
    // (int64) and the loss mask (fp32) into two buffers.
    const auto last = stage_memory(inputs(p), 1), last_megatron = stage_memory(inputs(megatron), 1);
    EXPECT_DOUBLE_EQ(last.term("activations"), last_megatron.term("activations")) << tp;
    EXPECT_DOUBLE_EQ(last.term("activation_workspace"), last_megatron.term("activation_workspace")) << tp;
    EXPECT_DOUBLE_EQ(last.term("pipe_buffers"), mask + kept + 2 * 12 * b * seq) << tp;
  }
}

// One small job, stage 0 of PP 2 x DP 4 with Megatron's recipe, under each training.gradient_buffers
// value: the gradient copies each implementation's code keeps (plan/gradient_state.hpp).
TEST(RankMemory, EachGradientBuffersValueCountsItsOwnCopies) {
  using plan::GradientBuffers;
  const auto s = gpt();
  const double P = 4 * model::parameters_per_layer(s) + model::embedding_parameters(s);  // stage 0
  struct Case {
    GradientBuffers buffers;
    plan::Sharding sharding;
    double wire;                                            // gradient_dtype's bytes
    double gradients, master_gradients, communication;     // expected bytes
  };
  const Case cases[] = {
      // The recipe's copies: no bf16 gradient term (bf16_fp32_grads counts the fp32 one), the
      // fp32 copy over the 4 shards, DeepSpeed's reduce and all-gather buckets 2 x 1e6 x 2 B.
      {GradientBuffers::generic, plan::Sharding::zero1, 2, 0, 4 * P / 4, 2 * 1e6 * 2},
      // Megatron-LM's fp32 main_grad buffer, all-reduced in place, the master grads its views.
      {GradientBuffers::megatron_local_ddp, plan::Sharding::none, 4, 4 * P, 0, 0},
      // Its fp16 main_grad: the fp32 grads of every master parameter and the bucket copy.
      {GradientBuffers::megatron_local_ddp, plan::Sharding::none, 2, 0, 4 * P, 2 * P},
      // Megatron-core's whole buffer; an fp32 one is the fp32 shard's grad, a bf16 one is not.
      {GradientBuffers::megatron_core_distributed_optimizer, plan::Sharding::zero1, 4, 4 * P, 0, 0},
      {GradientBuffers::megatron_core_distributed_optimizer, plan::Sharding::zero1, 2, 2 * P, 4 * P / 4, 0},
      // Apex's whole buffer in grad_sync_dtype and the rank's reduced shard of it.
      {GradientBuffers::apex_distributed_fused_adam, plan::Sharding::zero1, 2, 2 * P, 2 * P / 4, 0},
      // BF16_Optimizer's bf16 and fp32 gradients, both whole; buckets of 1e6 < P all-reduced in place.
      {GradientBuffers::deepspeed_bf16_optimizer, plan::Sharding::zero1, 4, 2 * P, 4 * P, 0},
  };
  for (const Case& c : cases) {
    plan::TrainingPlan p = amp_adam(c.sharding, 1);
    ASSERT_TRUE(plan::precision_recipe("bf16_fp32_grads", p.precision));
    p.pp = 2;
    p.gradient_wire_bytes = c.wire;
    p.gradient_buffers = c.buffers;
    if (c.buffers == GradientBuffers::deepspeed_bf16_optimizer) {
      p.pipeline_engine = plan::PipelineEngine::deepspeed;
      p.zero1_gradient_all_reduce = true;
    }
    const auto r = stage_memory(inputs(p), 0);
    const std::string what = "gradient_buffers " + std::to_string(static_cast<int>(c.buffers)) + ", " +
                             std::to_string(c.wire) + " B gradients";
    EXPECT_DOUBLE_EQ(r.term("gradients"), c.gradients) << what;
    EXPECT_DOUBLE_EQ(r.term("master_gradients"), c.master_gradients) << what;
    EXPECT_DOUBLE_EQ(r.term("communication_buffers"), c.communication) << what;
    // Master weights and moments: sharded over DP 4 under every ZeRO-1 optimizer, whole under DDP.
    const double shards = c.sharding == plan::Sharding::zero1 ? 4 : 1;
    EXPECT_DOUBLE_EQ(r.term("master_weights"), 4 * P / shards) << what;
    EXPECT_DOUBLE_EQ(r.term("optimizer_states"), 8 * P / shards) << what;
  }
}

TEST(RankMemory, DeferredOutputLayerWeightGradientsKeepInputsAndLogitGradients) {
  plan::TrainingPlan p = amp_adam(plan::Sharding::none, 2);
  p.pp = 2;
  p.tp = 2;
  p.sequence_parallel = true;
  p.accumulation = 8;
  const auto in = [&] { return inputs(p, 8); };
  EXPECT_DOUBLE_EQ(stage_memory(in(), 1).term("deferred_head_wgrad"), 0);
  p.defer_embedding_wgrad_compute = true;
  p.wgrad_deferral_limit = 3;
  // Per deferred micro-batch: the output layer's input, sequence-parallel shard, 2 B x t x h / TP,
  // and the bf16 gradient of its vocab/TP logits, 2 B x t x v / TP; t = 2 x 512 tokens.
  const double t = 2 * 512, h = 1024, v = 32000;
  EXPECT_DOUBLE_EQ(stage_memory(in(), 1).term("deferred_head_wgrad"), 3 * (2 * t * h / 2 + 2 * t * v / 2));
  EXPECT_DOUBLE_EQ(stage_memory(in(), 0).term("deferred_head_wgrad"), 0);  // the last stage only
  p.wgrad_deferral_limit = 0;  // every micro-batch
  EXPECT_DOUBLE_EQ(stage_memory(in(), 1).term("deferred_head_wgrad"), 8 * (2 * t * h / 2 + 2 * t * v / 2));
  p.wgrad_deferral_limit = 50;  // more than the step has
  EXPECT_DOUBLE_EQ(stage_memory(in(), 1).term("deferred_head_wgrad"), 8 * (2 * t * h / 2 + 2 * t * v / 2));
  // Without sequence parallelism the input is whole.
  p.sequence_parallel = false;
  p.wgrad_deferral_limit = 3;
  EXPECT_DOUBLE_EQ(stage_memory(in(), 1).term("deferred_head_wgrad"), 3 * (2 * t * h + 2 * t * v / 2));
}

TEST(RankMemory, TensorParallelismDividesTheParameters) {
  plan::TrainingPlan p = amp_adam(plan::Sharding::none);
  p.tp = 4;
  const auto r = stage_memory(inputs(p), 0);
  EXPECT_DOUBLE_EQ(r.term("optimizer_states"), 8 * model::parameter_count(gpt()) / 4);
}

TEST(Activations, KorthikantiGeluLayerWithoutParallelism) {
  // Korthikanti et al. 2022, eq. 1: 34sbh + 5as^2b bytes per layer (with dropout, no flash).
  const auto s = gpt();
  const double sq = 512, b = 2, h = 1024, a = 16;
  const double expected = sq * b * h * 34 + 5 * a * sq * sq * b;
  EXPECT_DOUBLE_EQ(model::total_bytes(model::layer_stored_activations(s, {2})), expected);
}

TEST(Activations, KorthikantiWithTensorAndSequenceParallelism) {
  const auto s = gpt();
  const double sq = 512, b = 2, h = 1024, a = 16, t = 4;
  // Eq. 2, TP alone: sbh(10 + 24/t + 5as/(ht)).
  EXPECT_DOUBLE_EQ(model::total_bytes(model::layer_stored_activations(s, {2, 4})),
                   sq * b * h * (10 + 24 / t + 5 * a * sq / (h * t)));
  // Eq. 4, TP + SP: sbh/t (34 + 5as/h).
  EXPECT_DOUBLE_EQ(model::total_bytes(model::layer_stored_activations(s, {2, 4, true})),
                   sq * b * h / t * (34 + 5 * a * sq / h));
}

TEST(Activations, FlashAttentionDropsTheScores) {
  const auto s = gpt();
  const double sq = 512, b = 2, h = 1024, a = 16;
  // 34sbh without the 5as^2b of softmax output, its dropout mask and output; plus the fp32
  // log-sum-exp per head and token.
  EXPECT_DOUBLE_EQ(model::total_bytes(model::layer_stored_activations(s, {2, 1, false, true})),
                   sq * b * h * 34 + 4 * b * a * sq);
}

TEST(Activations, CheckpointingKeepsLayerInputsAndRecomputesOneLayer) {
  plan::TrainingPlan p = amp_adam(plan::Sharding::none);
  p.activation_checkpointing = true;
  const auto r = stage_memory(inputs(p), 0);
  const double sq = 512, b = 2, h = 1024;
  const double head = model::total_bytes(model::head_stored_activations(gpt(), {2}));
  const double emb = model::total_bytes(model::embedding_stored_activations(gpt(), {2}));
  EXPECT_DOUBLE_EQ(r.term("activations"), 8 * (2 * sq * b * h) + head + emb);
  const double layer = model::total_bytes(model::layer_stored_activations(gpt(), {2}));
  // Recompute holds one whole layer beside the gradients of its largest tensor (the softmax
  // output, 2as^2b) in and out, unless the fp32 logits gradient is larger (6 B x tokens x V).
  const double largest = 2 * 16 * sq * sq * b;
  const double logits = 6 * sq * b * 32000;
  EXPECT_DOUBLE_EQ(r.term("activation_workspace"), std::max(layer + 2 * largest, logits));
}

TEST(Activations, FusedLossGradientNotInPlaceIsBf16LogitsBesideTheLayerWorkspace) {
  // flash-attn's CrossEntropyLoss() (inplace_backward False) allocates the bf16 gradient of the
  // logits, 2 B x tokens x V, at the head's backward, when no layer is recomputed: the workspace
  // is the larger of it and the recomputed layer's, not their sum.
  plan::TrainingPlan p = amp_adam(plan::Sharding::none);
  p.activation_checkpointing = true;
  p.flash_attention = true;
  p.fused_cross_entropy = true;
  const double t = 512 * 2;
  const double layer = model::total_bytes(model::layer_stored_activations(gpt(), {2, 1, false, true, true}));
  const double largest = 2 * t * 4096;  // the GELU input or output, 2 B x t x 4h
  const double recompute = layer + 2 * largest;
  const double logits_grad = 2 * t * 32000;
  ASSERT_GT(logits_grad, recompute);  // h 1024 against V 32000: the loss's gradient is larger
  EXPECT_DOUBLE_EQ(stage_memory(inputs(p), 0).term("activation_workspace"), recompute);  // in place
  p.fused_cross_entropy_inplace = false;
  EXPECT_DOUBLE_EQ(stage_memory(inputs(p), 0).term("activation_workspace"), logits_grad);
  // Activations are unchanged: the logits themselves were already counted (bf16).
  plan::TrainingPlan in_place = p;
  in_place.fused_cross_entropy_inplace = true;
  EXPECT_DOUBLE_EQ(stage_memory(inputs(p), 0).term("activations"),
                   stage_memory(inputs(in_place), 0).term("activations"));
  // A small vocabulary's gradient hides under the recomputed layer.
  MemoryInputs small = inputs(p);
  small.model.vocab = 1000;
  EXPECT_DOUBLE_EQ(stage_memory(small, 0).term("activation_workspace"), recompute);
}

TEST(Activations, SelectiveOpCheckpointingKeepsWhatThePolicySaves) {
  plan::TrainingPlan p = amp_adam(plan::Sharding::fsdp);
  p.activation_checkpointing = true;
  p.checkpoint_policy = plan::CheckpointPolicy::selective_op;
  p.flash_attention = true;
  const auto r = stage_memory(inputs(p), 0);
  const double sq = 512, b = 2, h = 1024, f = 4096, a = 16, t = sq * b;
  const model::LayerShape shape{2, 1, false, true};
  const double head = model::total_bytes(model::head_stored_activations(gpt(), shape));
  const double emb = model::total_bytes(model::embedding_stored_activations(gpt(), shape));
  // Per layer: the input, q, v (multi-head: h), the MLP's first matmul (f), the attention output
  // and its log-sum-exp; between full checkpointing (the input) and none.
  const double kept = 2 * t * (h + h + h + f + h) + 4 * b * a * sq;
  EXPECT_DOUBLE_EQ(r.term("activations"), 8 * kept + head + emb);
  // The recompute rebuilds what the layer would keep less what the policy holds.
  const double layer = model::total_bytes(model::layer_stored_activations(gpt(), shape));
  const double recomputed = layer - (kept - 2 * t * h);
  double largest = 0;
  for (const auto& x : model::layer_stored_activations(gpt(), shape)) largest = std::max(largest, x.bytes);
  EXPECT_DOUBLE_EQ(r.term("activation_workspace"), std::max(recomputed + 2 * largest, 6 * t * 32000));
}

TEST(Activations, SelectiveAttentionKeepsThePapers34sbhOverTPerLayer) {
  // Megatron's selective recomputation with TP 2 and sequence parallelism (Korthikanti et al.
  // 2022, section 5): 34 s b h / t per layer; the recompute rebuilds the scores, 5 a s^2 b / t.
  plan::TrainingPlan p = amp_adam(plan::Sharding::none);
  p.tp = 2;
  p.sequence_parallel = true;
  p.activation_checkpointing = true;
  p.checkpoint_policy = plan::CheckpointPolicy::selective_attention;
  const auto r = stage_memory(inputs(p), 0);
  const double sq = 512, b = 2, h = 1024, a = 16, t = 2;
  const model::LayerShape shape{2, 2, true, false};
  const double head = model::total_bytes(model::head_stored_activations(gpt(), shape));
  const double emb = model::total_bytes(model::embedding_stored_activations(gpt(), shape));
  EXPECT_DOUBLE_EQ(r.term("activations"), 8 * 34 * sq * b * h / t + head + emb);
  double largest = 0;
  for (const auto& x : model::layer_stored_activations(gpt(), shape)) largest = std::max(largest, x.bytes);
  EXPECT_DOUBLE_EQ(r.term("activation_workspace"),
                   std::max(5 * a * sq * sq * b / t + 2 * largest, 6 * sq * b * 32000 / t));
  // Between full recompute (layer inputs) and none (everything).
  plan::TrainingPlan full = p, none = p;
  full.checkpoint_policy = plan::CheckpointPolicy::full;
  none.activation_checkpointing = false;
  EXPECT_GT(r.term("activations"), stage_memory(inputs(full), 0).term("activations"));
  EXPECT_LT(r.term("activations"), stage_memory(inputs(none), 0).term("activations"));
}

TEST(Activations, OffloadingLeavesTwoLayerInputsOnDevice) {
  plan::TrainingPlan p = amp_adam(plan::Sharding::none);
  p.activation_checkpointing = true;
  p.activation_offloading = true;
  const auto r = stage_memory(inputs(p), 0);
  const double head = model::total_bytes(model::head_stored_activations(gpt(), {2}));
  const double emb = model::total_bytes(model::embedding_stored_activations(gpt(), {2}));
  EXPECT_DOUBLE_EQ(r.term("activations"), 2 * (2.0 * 512 * 2 * 1024) + head + emb);
}

TEST(Pipeline, ZeroBubbleH1KeepsOneFOneBsInFlightAndQueuesStageManyWeightGradients) {
  plan::TrainingPlan p;
  p.pp = 4;
  p.accumulation = 8;
  p.pipeline = plan::PipelineSchedule::zero_bubble_h1;
  for (long stage = 0; stage < 4; ++stage) {
    EXPECT_DOUBLE_EQ(micro_batches_in_flight(p, stage), 4.0 - static_cast<double>(stage));
    EXPECT_DOUBLE_EQ(queued_weight_gradients(p, stage), static_cast<double>(stage));  // stage 0 never splits
  }
  p.accumulation = 4;  // stage 3: 4 steady iterations, 3 queued before the last
  EXPECT_DOUBLE_EQ(queued_weight_gradients(p, 3), 3);
  EXPECT_DOUBLE_EQ(queued_weight_gradients(p, 1), 1);  // warm-up 2, 2 steady iterations
  p.pipeline = plan::PipelineSchedule::one_f_one_b;
  EXPECT_DOUBLE_EQ(queued_weight_gradients(p, 3), 0);
  // The term: a stage's layers' deferred-W tensors per queued micro-batch.
  p.pipeline = plan::PipelineSchedule::zero_bubble_h1;
  p.accumulation = 8;
  p.micro_batch = 2;
  const auto r = stage_memory(inputs(p), 2);
  const double layers = static_cast<double>(plan::layers_of_stage(p, gpt().layers, 2));
  EXPECT_DOUBLE_EQ(r.term("queued_weight_gradients"), 2 * layers * model::weight_gradient_inputs_bytes(gpt(), {2}));
}

TEST(Pipeline, ZeroBubbleVHoldsOneFOneBsFirstStageEverywhereAndBothEndsOnTheFirstStage) {
  plan::TrainingPlan p = amp_adam(plan::Sharding::none);
  p.pp = 4;
  p.accumulation = 8;
  p.virtual_stages = 2;
  p.pipeline = plan::PipelineSchedule::zero_bubble_v;
  // The schedule's limit: 2pp chunk forwards, pp micro-batches of a stage's two chunks, on
  // every stage; fewer micro-batches than stages hold only theirs.
  for (long stage = 0; stage < 4; ++stage) EXPECT_DOUBLE_EQ(micro_batches_in_flight(p, stage), 4.0);
  EXPECT_DOUBLE_EQ(queued_weight_gradients(p, 2), 0);  // inside that limit
  EXPECT_DOUBLE_EQ(head_micro_batches_in_flight(p), 1);
  // The first stage holds the embedding and the head (one tied table), the last neither.
  const auto first = stage_memory(inputs(p), 0), last = stage_memory(inputs(p), 3);
  const auto one_f_one_b = [&] {
    plan::TrainingPlan q = p;
    q.pipeline = plan::PipelineSchedule::one_f_one_b;
    q.virtual_stages = 1;
    return stage_memory(inputs(q), 3);
  }();
  EXPECT_LT(last.term("weights"), one_f_one_b.term("weights"));
  EXPECT_GT(first.term("weights"), last.term("weights"));
  EXPECT_EQ(first.kind, "stage 0 (first, both ends)");
  EXPECT_EQ(last.kind, "stage 3");
  p.accumulation = 3;
  EXPECT_DOUBLE_EQ(micro_batches_in_flight(p, 3), 3.0);
  // What a B keeps for its W, for the timeline: half the stage's layers' linear inputs and
  // output gradients (a chunk), the first stage also half the head's; none under other schedules.
  const double layer_w = model::weight_gradient_inputs_bytes(gpt(), {p.micro_batch});
  const double layers = static_cast<double>(plan::layers_of_stage(p, gpt().layers, 3));
  EXPECT_DOUBLE_EQ(zero_bubble_v_weight_gradient_inputs(inputs(p), 3), layers * layer_w / 2);
  EXPECT_DOUBLE_EQ(zero_bubble_v_weight_gradient_inputs(inputs(p), 0),
                   (layers * layer_w + model::head_weight_gradient_inputs_bytes(gpt(), {p.micro_batch})) / 2);
  p.pipeline = plan::PipelineSchedule::zero_bubble_h1;
  EXPECT_DOUBLE_EQ(zero_bubble_v_weight_gradient_inputs(inputs(p), 3), 0);
}

TEST(Pipeline, MicroBatchesInFlightFollowTheSchedule) {
  plan::TrainingPlan p;
  p.pp = 4;
  p.accumulation = 8;
  p.pipeline = plan::PipelineSchedule::gpipe;
  EXPECT_DOUBLE_EQ(micro_batches_in_flight(p, 0), 8);  // every forward before any backward
  p.pipeline = plan::PipelineSchedule::one_f_one_b;
  EXPECT_DOUBLE_EQ(micro_batches_in_flight(p, 0), 4);  // pp - stage
  EXPECT_DOUBLE_EQ(micro_batches_in_flight(p, 3), 1);
  p.pipeline = plan::PipelineSchedule::interleaved;
  p.virtual_stages = 2;
  // Stage 0: (4 - 0 - 1) x 2 + (2 - 1) x 4 + 1 = 11 chunks of half a stage = 5.5 micro-batches.
  EXPECT_DOUBLE_EQ(micro_batches_in_flight(p, 0), 5.5);
  p.pp = 1;
  EXPECT_DOUBLE_EQ(micro_batches_in_flight(p, 0), 1);
}

TEST(Pipeline, TheLastStageHoldsTheHeadOfOneMicroBatchUnderInterleaving) {
  plan::TrainingPlan p;
  p.pp = 4;
  p.accumulation = 8;
  p.pipeline = plan::PipelineSchedule::one_f_one_b;
  EXPECT_DOUBLE_EQ(head_micro_batches_in_flight(p), 1);
  p.pipeline = plan::PipelineSchedule::gpipe;
  EXPECT_DOUBLE_EQ(head_micro_batches_in_flight(p), 8);
  p.pipeline = plan::PipelineSchedule::interleaved;
  p.virtual_stages = 3;
  // Last rank: warm-up (3 - 1) x 4 = 8 forwards of chunks 0 and 1, then chunk 2's first
  // forward and its backward: one micro-batch's head at a time, not 9 / 3 = 3 stages' worth.
  EXPECT_DOUBLE_EQ(micro_batches_in_flight(p, 3), 3);
  EXPECT_DOUBLE_EQ(head_micro_batches_in_flight(p), 1);
  // One chunk per stage: the last stage alternates forward and backward from the start.
  p.accumulation = 4;
  p.virtual_stages = 1;
  EXPECT_DOUBLE_EQ(head_micro_batches_in_flight(p), 1);
  plan::TrainingPlan q = amp_adam(plan::Sharding::none, 1);
  q.pp = 2;
  q.accumulation = 8;
  q.pipeline = plan::PipelineSchedule::interleaved;
  q.virtual_stages = 2;
  const auto last = stage_memory(inputs(q), 1);
  const auto s = gpt();
  const model::LayerShape shape{1};
  const double layers = 4 * model::total_bytes(model::layer_stored_activations(s, shape));  // 8 layers / 2 stages
  const double head = model::total_bytes(model::head_stored_activations(s, shape));
  EXPECT_DOUBLE_EQ(last.term("activations"), micro_batches_in_flight(q, 1) * layers + head);
}

TEST(Pipeline, Megatron2021KeepsEachInFlightStageOutputButTheLastStagesLoss) {
  // gpt(): 8 layers of h 1024, seq 512, micro-batch 1 over 4 stages of 2 layers, 8 micro-batches.
  plan::TrainingPlan p = amp_adam(plan::Sharding::none, 1);
  p.pp = 4;
  p.accumulation = 8;
  p.pipeline = plan::PipelineSchedule::one_f_one_b;
  plan::TrainingPlan kept = p;
  kept.pipeline_outputs_kept = true;
  const double output = 2.0 * 512 * 1024;  // b x s x h x 2 B: the stage's last hidden state
  // 1F1B: stage 0 holds pp = 4 micro-batches, stage 2 holds 2, each with one output more.
  EXPECT_DOUBLE_EQ(stage_memory(inputs(kept), 0).term("activations") - stage_memory(inputs(p), 0).term("activations"),
                   4 * output);
  EXPECT_DOUBLE_EQ(stage_memory(inputs(kept), 2).term("activations") - stage_memory(inputs(p), 2).term("activations"),
                   2 * output);
  // The last stage's output_tensor is the loss.
  EXPECT_DOUBLE_EQ(stage_memory(inputs(kept), 3).term("activations"), stage_memory(inputs(p), 3).term("activations"));
  // Checkpointed layers keep their inputs and the stage still keeps its output.
  p.activation_checkpointing = kept.activation_checkpointing = true;
  EXPECT_DOUBLE_EQ(stage_memory(inputs(kept), 0).term("activations") - stage_memory(inputs(p), 0).term("activations"),
                   4 * output);
  // Interleaved, 2 chunks: one output per chunk in flight (stage 0: 11 chunks = 5.5
  // micro-batches x 2); the last stage's last chunk returns the loss: 1 of its 2.
  p.activation_checkpointing = kept.activation_checkpointing = false;
  p.pipeline = kept.pipeline = plan::PipelineSchedule::interleaved;
  p.virtual_stages = kept.virtual_stages = 2;
  EXPECT_DOUBLE_EQ(stage_memory(inputs(kept), 0).term("activations") - stage_memory(inputs(p), 0).term("activations"),
                   5.5 * 2 * output);
  EXPECT_DOUBLE_EQ(stage_memory(inputs(kept), 3).term("activations") - stage_memory(inputs(p), 3).term("activations"),
                   micro_batches_in_flight(p, 3) * 1 * output);
  // Without pipelining the schedule keeps no list.
  p.pp = kept.pp = 1;
  EXPECT_DOUBLE_EQ(stage_memory(inputs(kept), 0).term("activations"), stage_memory(inputs(p), 0).term("activations"));
}

TEST(Activations, SequenceParallelOutputLayerKeepsItsInputSharded) {
  const auto s = gpt();
  const double t = 2 * 512, h = 1024, v = 32000;
  double projection_input = 0;
  for (const auto& k : model::head_stored_activations(s, {2, 4, true}))
    if (k.name == "vocab_projection_input") projection_input = k.bytes;
  EXPECT_DOUBLE_EQ(projection_input, 2 * t * h / 4);
  EXPECT_DOUBLE_EQ(model::total_bytes(model::head_stored_activations(s, {2, 4, true})),
                   2 * t * h / 4 + 2 * t * h / 4 + 4 * t * v / 4);
}

TEST(Pipeline, StagesSplitLayersAndEndsHoldEmbeddingAndHead) {
  EXPECT_EQ(layers_of_stage(10, 4, 0), 3);
  EXPECT_EQ(layers_of_stage(10, 4, 1), 3);
  EXPECT_EQ(layers_of_stage(10, 4, 2), 2);
  plan::TrainingPlan p = amp_adam(plan::Sharding::none);
  p.pp = 2;
  const auto in = inputs(p);
  const auto ranks = rank_memory(in);
  ASSERT_EQ(ranks.size(), 2u);
  const auto s = gpt();
  const double first = 4 * model::parameters_per_layer(s) + model::embedding_parameters(s);
  // The last stage keeps its own copy of the tied word embedding (Megatron).
  const double last = 4 * model::parameters_per_layer(s) + model::head_parameters(s) + 32000.0 * 1024;
  EXPECT_DOUBLE_EQ(ranks[0].term("optimizer_states"), 8 * first);
  EXPECT_DOUBLE_EQ(ranks[1].term("optimizer_states"), 8 * last);
}

TEST(SourceExamples, TenBillionParametersNeedAbout200GB) {
  model::TransformerSpec s{"10B", 32, 5120, 40, 20480, 50257, 2048, false};
  const auto r = stage_memory({s, amp_adam(plan::Sharding::none, 1), plan::Layout{8, 8, 8, 1}, 40.0 * (1ull << 30), 0}, 0);
  const double states = r.term("weights") + r.term("gradients") + r.term("master_weights") +
                        r.term("master_gradients") + r.term("optimizer_states");
  EXPECT_NEAR(states, 200e9, 0.05 * 200e9);  // 20 B x 10.3e9
  EXPECT_FALSE(r.fits());
  EXPECT_EQ(r.largest().name, "optimizer_states");
}

TEST(Pipeline, Zero1ShardsEachStagesOptimizerStatesOverItsDataParallelGroup) {
  plan::TrainingPlan p = amp_adam(plan::Sharding::zero1);
  p.pp = 2;
  const auto in = inputs(p, 8);  // dp 4 per stage
  ASSERT_EQ(in.layout.dp, 4);
  ASSERT_EQ(in.layout.shard, 4);
  const auto ranks = rank_memory(in);
  const auto s = gpt();
  const double first = 4 * model::parameters_per_layer(s) + model::embedding_parameters(s);
  EXPECT_DOUBLE_EQ(ranks[0].term("optimizer_states"), 8 * first / 4);
  EXPECT_DOUBLE_EQ(ranks[0].term("master_weights"), 4 * first / 4);
  EXPECT_DOUBLE_EQ(ranks[0].term("weights"), 2 * first);    // ZeRO-1 keeps working weights ...
  EXPECT_DOUBLE_EQ(ranks[0].term("gradients"), 2 * first);  // ... and gradients whole
}

}  // namespace
}  // namespace trainsim::memory

TEST(PipelinePartition, TransformerAndEmbeddingGivesTheEndStagesOneLayerFewer) {
  // BLOOM-176B (train/tr11-176B-ml README): embed + 5, 6 x 10, 5 + embed over 12 stages.
  trainsim::plan::TrainingPlan p;
  p.pp = 12;
  p.partition = trainsim::plan::PipelinePartition::transformer_and_embedding;
  long total = 0;
  for (long stage = 0; stage < 12; ++stage) {
    const long n = trainsim::plan::layers_of_stage(p, 70, stage);
    EXPECT_EQ(n, stage == 0 || stage == 11 ? 5 : 6) << "stage " << stage;
    total += n;
  }
  EXPECT_EQ(total, 70);
  p.partition = trainsim::plan::PipelinePartition::uniform;
  EXPECT_EQ(trainsim::plan::layers_of_stage(p, 70, 0), 6);
  EXPECT_EQ(trainsim::plan::layers_of_stage(p, 70, 11), 5);
}

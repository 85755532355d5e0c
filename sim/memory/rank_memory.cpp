#include "memory/rank_memory.hpp"

#include <algorithm>
#include <cstdio>

#include "core/error.hpp"
#include "memory/deepspeed_pipe_buffers.hpp"
#include "model/checkpointing.hpp"
#include "model/encoder_decoder.hpp"
#include "plan/gradient_state.hpp"

namespace trainsim::memory {

namespace {

using plan::Sharding;

std::string bytes(double v) { return format_bytes(v); }

std::string num(double v) {
  char buf[48];
  if (v >= 1e9)
    std::snprintf(buf, sizeof buf, "%.3gB", v / 1e9);
  else if (v >= 1e6)
    std::snprintf(buf, sizeof buf, "%.3gM", v / 1e6);
  else
    std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

bool shards_optimizer(Sharding s) { return s != Sharding::none; }
bool shards_gradients(Sharding s) { return s == Sharding::zero2 || s == Sharding::zero3 || s == Sharding::fsdp; }
bool shards_weights(Sharding s) { return s == Sharding::zero3 || s == Sharding::fsdp; }

model::LayerShape shape_of(const plan::TrainingPlan& p) {
  model::LayerShape shape{p.micro_batch, p.tp, p.sequence_parallel, p.flash_attention, p.fused_cross_entropy,
                          p.eager_kernels};
  // Of the framework module codes only hf-bert changes what a layer stores (its op list keeps
  // autograd's saved tensors beside it: model/hf_bert_ops.hpp).
  if (p.module_kernels == plan::ModuleKernels::hf_bert) shape.module_kernels = model::ModuleKernels::hf_bert;
  // What an FP8 layer stores depends only on FP8 being on (the casts' costs are the schedules').
  shape.fp8.enabled = p.linear_precision == plan::LinearPrecision::fp8;
  return shape;
}

}  // namespace

const MemoryTerm& RankMemory::largest() const {
  TRAINSIM_CHECK(!terms.empty(), "a rank's memory has terms");
  return *std::max_element(terms.begin(), terms.end(),
                           [](const MemoryTerm& a, const MemoryTerm& b) { return a.bytes < b.bytes; });
}

Bytes RankMemory::term(const std::string& name) const {
  for (const auto& t : terms)
    if (t.name == name) return t.bytes;
  return 0;
}

Bytes RankMemory::sum_of_terms() const {
  Bytes sum = 0;
  for (const auto& t : terms) sum += t.bytes;
  return sum;
}

Bytes gradient_reduce_copy_bytes(const plan::TrainingPlan& p, double gradient_elements) {
  if (!plan::deepspeed_reduce_casts_to_wire(p.gradient_buffers, p.gradient_wire_bytes)) return 0;
  // DeepSpeed v0.6.2 (32d9797; the same lines in v0.5.10 and v0.6.0, and at 56c522386 where the
  // BF16_Optimizer was merged): _exec_reduce_grads -> _bf16_reduce_grads ->
  // buffered_allreduce_fallback(optimizer.get_grads_for_reduction(): the fp32 flat group of
  // each parameter group, whole) -> allreduce_no_retain -> allreduce_bucket (runtime/engine.py
  // 2059-2086): flatten (a view for one tensor), then `tensor.to(self.communication_data_type)`
  // when the dtypes differ, all-reduce it, copy it back. communication_data_type (engine.py
  // 712-721) is bf16 with bf16 enabled, ZeRO stage 0 and no "communication_data_type" in the
  // config (BLOOM's ds_config sets none). Each group is one bucket (a flat tensor; Megatron's
  // two groups, the larger of them above MEMORY_OPT_ALLREDUCE_SIZE), copied one at a time: at
  // most 2 B x the rank's gradient elements live (counted whole: the no-weight-decay group,
  // biases and norms, is < 0.1% of them).
  return p.gradient_wire_bytes * gradient_elements;
}

long layers_of_stage(long layers, long pp, long stage) {
  return layers / pp + (stage < layers % pp ? 1 : 0);
}

double micro_batches_in_flight(const plan::TrainingPlan& p, long stage) {
  const double m = static_cast<double>(p.accumulation);
  if (p.pp == 1) return 1;
  switch (p.pipeline) {
    case plan::PipelineSchedule::gpipe: return m;
    // ZB-H1 keeps 1F1B's micro-batches in flight (its design, Qi et al. 2024 section 3.1); what a
    // deferred weight gradient keeps (its linears' inputs and output gradients) is not counted.
    case plan::PipelineSchedule::one_f_one_b:
    case plan::PipelineSchedule::zero_bubble_h1: return std::min(m, static_cast<double>(p.pp - stage));
    case plan::PipelineSchedule::interleaved: {
      // Megatron's warm-up: (pp - stage - 1) * 2 + (v - 1) * pp chunk forwards, plus the one in
      // the steady state; each chunk is 1/v of the stage's layers.
      const double v = static_cast<double>(p.virtual_stages);
      const double chunks = std::min(m * v, static_cast<double>((p.pp - stage - 1) * 2 + (p.virtual_stages - 1) * p.pp + 1));
      return chunks / v;
    }
    // ZB-V's order keeps a stage's stored activations, with what its queued W hold, under 1F1B's
    // first stage's: 2pp chunk forwards (zero_bubble_v.hpp's memory limit), pp micro-batches of
    // the stage's two chunks, counted whole. The runtime weighs the W's share in its own units;
    // the simulated timeline, which follows the order in bytes, can come out a little above.
    case plan::PipelineSchedule::zero_bubble_v: return std::min(m, static_cast<double>(p.pp));
  }
  return 1;
}

double head_micro_batches_in_flight(const plan::TrainingPlan& p) {
  // ZB-V's first stage runs each micro-batch's head backward soon after its forward, before the
  // next head forward (the head ends the V on the stage: zero_bubble_v.hpp).
  if (p.pp > 1 && p.pipeline == plan::PipelineSchedule::zero_bubble_v) return 1;
  if (p.pp == 1 || p.pipeline != plan::PipelineSchedule::interleaved) return micro_batches_in_flight(p, p.pp - 1);
  // Megatron-core's schedules.py (forward_backward_pipelining_with_interleaving): forward k runs
  // model chunk (k / pp) % v; the last rank's warm-up is (v - 1) x pp forwards, then one more
  // before its first backward. The last chunk's forwards among those hold the head's tensors.
  const long v = p.virtual_stages, forwards = p.accumulation * v;
  const long before_first_backward = std::min(forwards, (v - 1) * p.pp + 1);
  long last_chunk = 0;
  for (long k = 0; k < before_first_backward; ++k)
    if ((k / p.pp) % v == v - 1) ++last_chunk;
  return static_cast<double>(std::max(1L, last_chunk));
}

double queued_weight_gradients(const plan::TrainingPlan& p, long stage) {
  if (p.pipeline != plan::PipelineSchedule::zero_bubble_h1 || p.pp == 1 || stage == 0) return 0;
  // pipeline_order: the first `stage` steady iterations queue their W, popped only from the last
  // iteration on; before iteration i's backward the stage holds pp - stage micro-batches in
  // flight and min(i, stage) queued.
  const long warmup = std::min(p.pp - stage - 1, p.accumulation), remaining = p.accumulation - warmup;
  return static_cast<double>(std::min(stage, std::max(0L, remaining - 1)));
}

Bytes zero_bubble_v_weight_gradient_inputs(const MemoryInputs& in, long stage) {
  const auto& p = in.plan;
  if (p.pipeline != plan::PipelineSchedule::zero_bubble_v || p.pp == 1) return 0;
  const model::LayerShape shape = shape_of(p);
  const double layers = static_cast<double>(plan::layers_of_stage(p, in.model.layers, stage));
  const Bytes head = stage == plan::head_stage(p) ? model::head_weight_gradient_inputs_bytes(in.model, shape) : 0.0;
  return (layers * model::weight_gradient_inputs_bytes(in.model, shape) + head) / 2;
}

double deferred_head_micro_batches(const plan::TrainingPlan& p) {
  if (!p.defer_embedding_wgrad_compute || p.pp == 1) return 0;
  return static_cast<double>(p.wgrad_deferral_limit == 0 ? p.accumulation
                                                         : std::min(p.wgrad_deferral_limit, p.accumulation));
}

bool megatron_step_gradients(const plan::TrainingPlan& p) {
  return p.gradient_buffers == plan::GradientBuffers::megatron_local_ddp &&
         !plan::megatron_fp32_main_grad_buffer(p.gradient_buffers, p.gradient_wire_bytes) &&
         p.optimizer_implementation == plan::OptimizerImplementation::megatron_fp16 && (p.tp > 1 || p.pp > 1 || p.cp > 1);
}

bool forward_after_first_backward(const plan::TrainingPlan& p, long stage) {
  if (p.pp == 1) return p.accumulation > 1;
  switch (p.pipeline) {
    case plan::PipelineSchedule::gpipe: return false;
    case plan::PipelineSchedule::one_f_one_b:
    case plan::PipelineSchedule::zero_bubble_h1: return p.accumulation > p.pp - stage;
    case plan::PipelineSchedule::interleaved: {
      // Megatron runs every forward first when the micro-batches are as many as the stages.
      if (p.accumulation == p.pp) return false;
      return p.accumulation * p.virtual_stages > (p.pp - stage - 1) * 2 + (p.virtual_stages - 1) * p.pp + 1;
    }
    // Beyond pp micro-batches a stage must have run a backward to stay under its memory limit.
    case plan::PipelineSchedule::zero_bubble_v: return p.accumulation > p.pp;
  }
  return true;
}

RankMemory stage_memory(const MemoryInputs& job, long stage) {
  // Under context parallelism a rank holds the activations of seq / CP tokens of each sequence
  // (fused attention only: no s x s term) and shards the distributed optimizer over the data- x
  // context-parallel group (Megatron-core); its model states are a DP rank's. Not counted: TE's
  // two KV ring buffers (2 x 2 x b x s/CP x kv-heads/TP x d bf16), transient.
  MemoryInputs in = job;
  if (job.plan.cp > 1) {
    in.model = model::context_parallel_share(job.model, job.plan.cp);
    in.layout = plan::context_parallel_rank_layout(job.layout);
  }
  const auto& s = in.model;
  const auto& p = in.plan;
  const double tp = static_cast<double>(p.tp);
  const double shard = static_cast<double>(in.layout.shard);
  const bool first = stage == 0, last = stage == plan::head_stage(p);
  const long layers = plan::layers_of_stage(p, s.layers, stage);

  // Parameters this rank owns: its layers and, on the end stages, the embedding and the head
  // (Megatron keeps a copy of a tied embedding on the last stage), all split by TP.
  // An encoder-decoder (one stage only: scenario.cpp) holds both stacks' blocks.
  double params = model::is_encoder_decoder(s) ? model::block_parameters(s)
                                               : static_cast<double>(layers) * model::parameters_per_layer(s);
  if (first) params += model::embedding_parameters(s);
  if (last) params += model::head_parameters(s);
  if (last && !first && s.tied_embeddings) params += static_cast<double>(s.vocab * s.hidden);
  params /= tp;

  RankMemory r;
  r.stage = stage;
  r.capacity = in.capacity;
  r.kind = p.pp == 1 ? "every rank"
                     : "stage " + std::to_string(stage) +
                           (first && last ? " (first, both ends)" : first ? " (first)" : last ? " (last)" : "");
  auto add = [&](const char* name, Bytes bytes, std::string formula) {
    r.terms.push_back({name, bytes, std::move(formula)});
  };
  auto state = [&](const char* name, double bytes_per_param, bool sharded) {
    const double divisor = sharded ? shard : 1.0;
    add(name, bytes_per_param * params / divisor,
        num(bytes_per_param) + " B x " + num(params) + " params" +
            (divisor > 1 ? " / " + num(divisor) + " shards" : ""));
  };
  const bool hf_bert = p.module_kernels == plan::ModuleKernels::hf_bert;
  const bool step_gradients = megatron_step_gradients(p);
  // hf-bert runs under torch.cuda.amp (model/hf_bert_ops.hpp): the parameters stay fp32 and
  // their .grad fp32, which the optimizer updates directly (no master copy); the fp16 weights
  // are autocast's casts, made at each forward and kept by the GEMMs' saved operands until
  // their backward: activations. The Trainer (4.21) zeroes .grad instead of freeing it
  // (model.zero_grad(), set_to_none=False in torch 1.11), so the fp32 gradients live through
  // the forward and the backward's peak. GradScaler's state is three scalars (not counted).
  const plan::PrecisionRecipe rec = hf_bert ? plan::PrecisionRecipe{"autocast", 4, 4, 0, 0, true} : p.precision;
  // The scenario reader admits the four named implementations only on the stage each shards by
  // (memory_advice's ZeRO-3 what-if sets generic).
  using plan::GradientBuffers;
  const bool mcore_distributed_optimizer = p.gradient_buffers == GradientBuffers::megatron_core_distributed_optimizer;
  const bool deepspeed_bf16 = p.gradient_buffers == GradientBuffers::deepspeed_bf16_optimizer;
  const bool apex_dfa = p.gradient_buffers == GradientBuffers::apex_distributed_fused_adam;
  const bool megatron_fp32_main_grad = plan::megatron_fp32_main_grad_buffer(p.gradient_buffers, p.gradient_wire_bytes);
  state("weights", rec.weights_resident ? rec.weights : 0.0, shards_weights(p.sharding));
  if (mcore_distributed_optimizer) {
    // Megatron-core (core_r0.10.0, 7ee599a): DistributedDataParallel puts every gradient in
    // one contiguous buffer per dtype, fp32 where grad_reduce_in_fp32 else the parameters'
    // (distributed_data_parallel.py:122), the whole numel on every rank
    // (param_and_grad_buffer.py:587 grad_data = torch.zeros(self.numel, dtype=self.grad_dtype)),
    // and reduce-scatters each bucket inside it (:309-318, the output a view of the bucket).
    // The reduce dtype is the buffer's, so gradient_wire_bytes is the buffer's element. Not
    // counted: each bucket's padding to a multiple of lcm(DP, 128) elements (:477).
    add("gradients", p.gradient_wire_bytes * params,
        num(p.gradient_wire_bytes) + " B x " + num(params) +
            " params (Megatron-core's gradient buffer, whole on every rank)");
    state("master_weights", rec.master_weights, true);
    // DistributedOptimizer._copy_model_grads_to_main_grads (distrib_optimizer.py:1674) sets
    // each fp32 shard's grad to its slice of the buffer .float(): a view of an fp32 buffer, a
    // new fp32 copy of the rank's shard of a bf16 one.
    if (p.gradient_wire_bytes == 4)
      add("master_gradients", 0, "0 B: the fp32 shard's grad is a view of the fp32 gradient buffer");
    else
      state("master_gradients", rec.master_gradients, true);
  } else if (apex_dfa) {
    // Apex's DistributedFusedAdam (f3f0492, 2024-04, contrib/optimizers/distributed_fused_adam.py)
    // with contiguous_grad_buffer: one buffer of every bucket in grad_sync_dtype, whole
    // (_init_grad_buffer, :1117), reduce-scattered into a new shard per bucket (:1856
    // sync_grads_shard = torch.empty([bucket / DP])) that becomes the bucket's grads_shard
    // (:1918), kept for the step.
    add("gradients", p.gradient_wire_bytes * params,
        num(p.gradient_wire_bytes) + " B x " + num(params) + " params (Apex's contiguous gradient buffer, whole)");
    state("master_weights", rec.master_weights, true);
    state("master_gradients", p.gradient_wire_bytes, true);
  } else if (deepspeed_bf16) {
    // DeepSpeed v0.6.2 (32d9797) BF16_Optimizer: the fp32 gradients of the whole flattened
    // group, torch.zeros_like(bf16_groups_flat, dtype=float32) (runtime/bf16_optimizer.py:164),
    // of which the optimizer reads its partition (:183); the bf16 gradients whole too, as the
    // pipeline engine clears them before each backward, not after (pipe/engine.py:746-760:
    // clear_lp_grads, then update_hp_grads(clear_lp_grads=False)). Only the fp32 master weights
    // (:157) and the moments are partitioned.
    add("gradients", 2 * params, "2 B x " + num(params) + " params (bf16 gradients, whole)");
    state("master_weights", rec.master_weights, true);
    add("master_gradients", 4 * params, "4 B x " + num(params) + " params (BF16_Optimizer's fp32 gradients, whole)");
  } else if (megatron_fp32_main_grad) {
    // Megatron-LM's local DDP with accumulate_allreduce_grads_in_fp32 (2e90a342): one fp32
    // MemoryBuffer of every gradient, whole (model/distributed.py:129-150, main_grad views of
    // it); Float16OptimizerWithFloat16Params sets main_param.grad = main_grad.float()
    // (optimizer/optimizer.py:316), the same fp32 tensor.
    add("gradients", 4 * params, "4 B x " + num(params) + " params (Megatron's fp32 main_grad buffer, whole)");
    state("master_weights", rec.master_weights, false);
    add("master_gradients", 0, "0 B: the fp32 master parameters' grads are the main_grad buffer");
  } else {
    // generic: the recipe's copies, each sharded as the ZeRO stage says. Megatron 2021's local
    // DDP and Float16Optimizer (6985e58, the default flags for fp16) keep the same: main_grad is
    // the fp16/bf16 autograd gradient (model/distributed.py:206), all-reduced through a
    // flattened copy (the communication buffers below), then copied to an fp32 grad of every
    // master parameter (optimizer/optimizer.py:316-319): 2 + 4 B, unsharded.
    if (step_gradients) {
      // Megatron 2021's fp16 .grad: autograd allocates it at each parameter's first backward
      // of the step; the step frees it, and its main_grad alias, once copied to fp32
      // (optimizer/optimizer.py:316-327 at 6985e58).
      add("gradients", p.gradient_wire_bytes * params,
          num(p.gradient_wire_bytes) + " B x " + num(params) + " params (fp16 .grad, from the stage's first backward to the step" +
              (forward_after_first_backward(p, stage) ? ")" : "; not at the activations' peak)"));
    } else {
      state("gradients", rec.gradients, shards_gradients(p.sharding));
    }
    state("master_weights", rec.master_weights, shards_optimizer(p.sharding));
    if (step_gradients) {
      // main_param.grad = main_grad.float() in the step (optimizer.py:316); the next step's
      // optimizer.zero_grad() (training.py:358), set_to_none=True (optimizer.py:290-301), drops it
      // before any forward.
      add("master_gradients", rec.master_gradients * params,
          num(rec.master_gradients) + " B x " + num(params) + " params (fp32 grads, in the step only)");
    } else {
      state("master_gradients", rec.master_gradients, shards_optimizer(p.sharding));
    }
  }
  state("optimizer_states", plan::optimizer_state_bytes(p.optimizer, p.optimizer_state_element_bytes),
        shards_optimizer(p.sharding));

  if (shards_weights(p.sharding)) {
    // The unit in use and the one prefetched, gathered in the wire dtype; the largest unit is
    // a layer or, on an end stage, the embedding / head.
    double unit = model::largest_block_parameters(s);
    if (first) unit = std::max(unit, model::embedding_parameters(s));
    if (last) unit = std::max(unit, model::head_parameters(s));
    unit /= tp;
    const bool torch_fsdp1 = p.fsdp_implementation == plan::FsdpImplementation::torch_fsdp1 && first && last;
    if (p.pp > 1) {
      // FSDP2 inside a pipeline stage (program/pipeline_schedule.hpp): no unit is resharded after
      // its forward (torchtitan: reshard_after_forward = not pp_enabled), so from the step's
      // first forward to its last backward the stage's whole parameters are gathered, beside the
      // gradients accumulated unsharded in the reduce dtype across its micro-batches and the
      // bf16 gradient of the unit being added in.
      add("gathered_parameters", params * p.parameter_wire_bytes,
          "every unit of the stage: " + num(params) + " params x " + num(p.parameter_wire_bytes) + " B");
      add("gathered_gradients", params * p.gradient_wire_bytes + unit * p.parameter_wire_bytes,
          num(params) + " params x " + num(p.gradient_wire_bytes) + " B accumulated + 1 unit x " + num(unit) +
              " params x " + num(p.parameter_wire_bytes) + " B");
    } else if (torch_fsdp1) {
      // FullyShardedDataParallel (1.13): the root unit, the embedding and head, is not
      // resharded after forward and stays gathered beside the two layers in flight.
      const double layer = model::largest_block_parameters(s) / tp;  // an encoder-decoder's: a decoder block
      const double root = (model::embedding_parameters(s) + model::head_parameters(s)) / tp;
      // BACKWARD_PRE and forward_prefetch issue the next unit's gather before the current one is
      // resharded: the rate limiter's two free events then leave three layers gathered.
      const bool prefetch_early =
          p.fsdp_backward_prefetch == plan::FsdpBackwardPrefetch::backward_pre || p.fsdp_forward_prefetch;
      // SHARD_GRAD_OP frees no unit after its forward: at the end of the forward every layer is
      // gathered (plan::FsdpShardingStrategy).
      const bool shard_grad_op = p.fsdp_sharding_strategy == plan::FsdpShardingStrategy::shard_grad_op;
      // Without the rate limiter (limit_all_gathers=False) nothing holds the gathers back: at
      // worst every layer is gathered at once, the bound taken here (the allocator replay follows
      // the host's actual run-ahead).
      const bool unlimited = !p.fsdp_limit_all_gathers;
      const long all_blocks = model::is_encoder_decoder(s) ? model::total_blocks(s) : layers;
      const double in_flight =
          shard_grad_op || unlimited ? static_cast<double>(all_blocks) : prefetch_early ? 3 : 2;
      // Every block gathered: their sum (an encoder-decoder's are of two sizes).
      const bool every_block = shard_grad_op || unlimited;
      const bool two_sizes = every_block && model::is_encoder_decoder(s);
      const double blocks = two_sizes ? model::block_parameters(s) / tp : in_flight * layer;
      const std::string why = shard_grad_op ? " (all: SHARD_GRAD_OP)" : unlimited ? " (all: no rate limiter)" : "";
      add("gathered_parameters", (blocks + root) * p.parameter_wire_bytes,
          "(" + (two_sizes ? num(in_flight) + " blocks" + why + " " + num(blocks)
                           : num(in_flight) + " layers" + why + " x " + num(layer)) +
              " + root unit " + num(root) + ") params x " + num(p.parameter_wire_bytes) + " B");
      // Its _post_backward_hook: autograd leaves a unit's unsharded gradient in the compute
      // dtype; the hook casts it to the reduce dtype when they differ and F.pad copies it (always
      // on PyTorch 1.13, only an uneven unit later: plan::FsdpPadCopy) as the reduce-scatter's
      // input, on the post_backward stream, and record_stream keeps them until the
      // reduce-scatter is done, while the next unit's gradient is being computed.
      const double compute = p.parameter_wire_bytes, reduce = p.gradient_wire_bytes;
      const double largest = std::max(layer, root);
      const bool pad = plan::fsdp_pads(p.fsdp_pad_copy, largest, in.layout.shard);
      const double per_param = compute + compute + (reduce != compute ? reduce : 0.0) + (pad ? reduce : 0.0);
      add("gathered_gradients", largest * per_param,
          "1 unit x " + num(largest) + " params x " + num(per_param) + " B (its gradient; the unit before's" +
              (reduce != compute ? ", its reduce-dtype cast" : "") + (pad ? " and F.pad copy)" : ")"));
    } else {
      add("gathered_parameters", 2 * unit * p.parameter_wire_bytes,
          "2 units x " + num(unit) + " params x " + num(p.parameter_wire_bytes) + " B");
      add("gathered_gradients", unit * p.gradient_wire_bytes,
          "1 unit x " + num(unit) + " params x " + num(p.gradient_wire_bytes) + " B");
    }
  }
  if (p.linear_precision == plan::LinearPrecision::fp8) {
    const double linear = static_cast<double>(layers) * model::linear_weight_parameters(s) / tp;
    const double per_param = plan::fp8_weight_copy_bytes(p.fp8_implementation);
    add("fp8_weight_copies", per_param * linear,
        num(per_param) + " B x " + num(linear) + " linear-layer params (" +
            (p.fp8_implementation == plan::Fp8Implementation::transformer_engine
                 ? "Transformer Engine's FP8 weight and its transpose)"
                 : "torchao's FP8 weights saved for backward)"));
  }
  if (megatron_fp32_main_grad) {
    // allreduce_gradients all-reduces the contiguous buffer in place (model/distributed.py:198-202).
    add("communication_buffers", 0, "none: the fp32 main_grad buffer is all-reduced in place");
  } else if (step_gradients) {
    // allreduce_gradients flattens the fp16 grads into one tensor, all-reduces it and copies it
    // back (model/distributed.py:208-218), after the flush, whatever the data-parallel size.
    add("communication_buffers", params * p.gradient_wire_bytes,
        "the flattened all-reduce copy of " + num(params) + " gradients x " + num(p.gradient_wire_bytes) +
            " B, after the flush only");
  } else if (p.sharding == Sharding::none) {
    add("communication_buffers", params * p.gradient_wire_bytes,
        "DDP gradient buckets: a copy of " + num(params) + " gradients x " + num(p.gradient_wire_bytes) + " B");
  } else if (mcore_distributed_optimizer) {
    // Buckets are views of the gradient buffer and the updated parameters are all-gathered
    // into the contiguous parameter buffer (param_and_grad_buffer.py:581, start_param_sync):
    // no copy.
  } else if (apex_dfa) {
    // The buckets are slices of the contiguous buffer (distributed_fused_adam.py:1591-1598).
  } else if (deepspeed_bf16) {
    // _bf16_reduce_grads (pipe/engine.py:263) all-reduces the fp32 groups in buckets of
    // bucket_elements (engine.py:2091 allreduce_no_retain); a bucket of one flat group is
    // flattened as a view (no copy), so a copy is made only where a stage's groups share a
    // bucket: at most the whole fp32 gradient.
    const double copy = params > p.bucket_elements ? 0.0 : 4 * params;
    add("communication_buffers", copy,
        copy > 0 ? "fp32 gradients flattened into one all-reduce bucket: 4 B x " + num(params)
                 : "none: each parameter group's fp32 gradients fill a bucket of " + num(p.bucket_elements) +
                       " alone and are all-reduced in place");
  } else if (p.sharding == Sharding::zero1 || p.sharding == Sharding::zero2) {
    add("communication_buffers", 2 * p.bucket_elements * p.gradient_wire_bytes,
        "reduce + all-gather buckets: 2 x " + num(p.bucket_elements) + " x " + num(p.gradient_wire_bytes) + " B");
  }

  // Activations of one micro-batch on this stage.
  const auto shape = shape_of(p);
  // An encoder-decoder's blocks are of two kinds (model/encoder_decoder.hpp): what a layer keeps
  // is summed over them, the one-layer transients below are the larger kind's.
  const auto groups = model::block_groups(s);
  const bool two_stacks = groups.size() > 1;
  auto over_blocks = [&](auto per_block) {
    Bytes sum = 0;
    for (const auto& g : groups) sum += static_cast<double>(g.count) * per_block(g.block);
    return sum;
  };
  auto largest_block = [&](auto per_block) {
    Bytes most = 0;
    for (const auto& g : groups) most = std::max(most, per_block(g.block));
    return most;
  };
  std::vector<model::StoredTensor> layer_tensors;
  for (const auto& g : groups)
    for (auto& t : model::layer_stored_activations(g.block, shape)) layer_tensors.push_back(std::move(t));
  const Bytes layer_full = largest_block([&](const model::TransformerSpec& b) {
    return model::total_bytes(model::layer_stored_activations(b, shape));
  });
  const Bytes layer_input = model::layer_input_bytes(s, shape);
  Bytes per_micro_batch = 0;
  std::string how;
  const bool selective = p.activation_checkpointing && p.checkpoint_policy == plan::CheckpointPolicy::selective_op;
  const bool attention_only = p.activation_checkpointing && p.checkpoint_policy == plan::CheckpointPolicy::selective_attention;
  // Selective: the layer input and the outputs the policy saves; the rest is recomputed.
  const Bytes layer_selective =
      selective ? model::total_bytes(model::checkpointed_layer_activations(s, shape, model::Checkpointing::selective_op))
                : 0;
  // Megatron's selective recomputation: all but the core attention's s x s tensors.
  const Bytes layer_attention_only =
      attention_only
          ? model::total_bytes(model::checkpointed_layer_activations(s, shape, model::Checkpointing::selective_attention))
          : 0;
  if (two_stacks) {
    // scenario.cpp allows no checkpointing or full checkpointing only.
    per_micro_batch = over_blocks([&](const model::TransformerSpec& b) {
      return p.activation_checkpointing ? model::layer_input_bytes(b, shape)
                                        : model::total_bytes(model::layer_stored_activations(b, shape));
    });
    how = std::to_string(groups[0].count) + " encoder + " + std::to_string(groups[1].count) + " decoder layers" +
          (p.activation_checkpointing ? " (checkpointed: their inputs) " : " ") + bytes(per_micro_batch);
  } else if (!p.activation_checkpointing) {
    per_micro_batch = static_cast<double>(layers) * layer_full;
    how = std::to_string(layers) + " layers x " + bytes(layer_full);
  } else if (attention_only) {
    per_micro_batch = static_cast<double>(layers) * layer_attention_only;
    how = std::to_string(layers) + " layers x " + bytes(layer_attention_only) +
          " (selective recomputation: all but what only the core attention keeps)";
  } else if (selective) {
    per_micro_batch = static_cast<double>(layers) * layer_selective;
    how = std::to_string(layers) + " layers x " + bytes(layer_selective) +
          " (selective: input, attention output, every other matmul's output)";
  } else if (!p.activation_offloading) {
    per_micro_batch = static_cast<double>(layers) * layer_input;
    how = std::to_string(layers) + " layer inputs x " + bytes(layer_input) + " (checkpointed)";
  } else {
    per_micro_batch = static_cast<double>(std::min<long>(layers, 2)) * layer_input;
    how = "2 layer inputs x " + bytes(layer_input) + " on device (the rest offloaded to host)";
  }
  const DeepSpeedPipeBuffers pipe = deepspeed_pipe_buffers(s, p, stage);
  if (pipe.per_micro_batch > 0) {
    per_micro_batch += pipe.per_micro_batch;
    how += " + " + pipe.per_micro_batch_how;
  }
  if (p.pipeline_outputs_kept && p.pp > 1) {
    // Megatron-LM 6985e58's schedules keep each forward's output_tensor in output_tensors until
    // its backward pops it (megatron/schedules.py:207 interleaved, :409 warm-up, :436 steady
    // state); nothing autograd saves holds it (the next layer, whose norm would, is on the next
    // stage), and deallocate_output_tensor, which empties it once sent, came after (86da10e9d9,
    // 2021-12-07). It is the stage's last hidden state, b x s x h in the working dtype: a layer
    // input. Per micro-batch, one per model chunk; the last stage's last chunk returns the loss
    // instead, so there v - 1 of the v (its chunks taken as evenly in flight: an approximation
    // under interleaving, exact without it, where the last stage keeps none).
    const bool chunked =
        p.pipeline == plan::PipelineSchedule::interleaved || p.pipeline == plan::PipelineSchedule::zero_bubble_v;
    const double v = static_cast<double>(chunked ? p.virtual_stages : 1);
    const double outputs = last ? v - 1 : v;
    if (outputs > 0) {
      per_micro_batch += outputs * layer_input;
      how += " + " + num(outputs) + " stage output(s) x " + bytes(layer_input);
    }
  }
  Bytes ends = 0;
  if (first) ends += model::total_bytes(model::embedding_stored_activations(s, shape));
  const Bytes head = last ? model::total_bytes(model::head_stored_activations(s, shape)) : 0.0;
  const double in_flight = micro_batches_in_flight(p, stage);
  const double head_in_flight = last ? head_micro_batches_in_flight(p) : 0.0;
  std::string activations_how = num(in_flight) + " micro-batch(es) x (" + how + " + " + bytes(ends) + " embedding)";
  if (last) activations_how += " + " + num(head_in_flight) + " x " + bytes(head) + " head";
  add("activations", in_flight * (per_micro_batch + ends) + head_in_flight * head, activations_how);
  if (const double queued = queued_weight_gradients(p, stage); queued > 0) {
    // What B leaves for each queued W (model::weight_gradient_inputs_bytes), beside the
    // micro-batches in flight.
    const Bytes layer_w = model::weight_gradient_inputs_bytes(s, shape);
    const Bytes head_w = last ? model::head_weight_gradient_inputs_bytes(s, shape) : 0.0;
    add("queued_weight_gradients", queued * (static_cast<double>(layers) * layer_w + head_w),
        num(queued) + " micro-batch(es)' deferred weight gradients (ZB-H1) x (" + std::to_string(layers) + " layers x " +
            bytes(layer_w) + (last ? " + head " + bytes(head_w) : std::string()) + "): linear inputs and output gradients");
  }
  if (last && deferred_head_micro_batches(p) > 0) {
    // Megatron-core's defer_embedding_wgrad_compute (core_r0.10.0, 7ee599a, tensor_parallel/
    // layers.py): the output layer's forward appends its input (the sequence-parallel shard,
    // the tensor its backward saves) to embedding_activation_buffer (:928-933) and its backward
    // appends grad_output, the bf16 gradient of the vocab/TP logits, to grad_output_buffer
    // (:454-456), for the first wgrad_deferral_limit micro-batches (0: all); both are held
    // until drain_embedding_wgrad_compute after the last backward. At the last deferred
    // micro-batch's backward the stage holds every deferred one's input beyond the micro-batches
    // in flight (counted above); exact where the deferred and in-flight micro-batches do not
    // overlap (limit + head micro-batches in flight <= micro-batches), an upper bound otherwise.
    const double deferred = deferred_head_micro_batches(p);
    Bytes input = 0;
    for (const auto& t : model::head_stored_activations(s, shape))
      if (t.name == "vocab_projection_input") input = t.bytes;
    const Bytes grad_output = 2.0 * static_cast<double>(p.micro_batch * s.seq_len * s.vocab) / tp;
    add("deferred_head_wgrad", deferred * (input + grad_output),
        num(deferred) + " micro-batch(es) x (head input " + bytes(input) + " + bf16 logits gradient " +
            bytes(grad_output) + ")");
  }

  // Transient at the worst moment of the backward pass.
  Bytes largest = 0;
  for (const auto& t : layer_tensors) largest = std::max(largest, t.bytes);
  Bytes workspace = 2 * largest;
  std::string ws_how = "gradients of the largest layer tensor in and out: 2 x " + bytes(largest);
  if (attention_only) {
    // One layer's core attention recomputed: its scores, probabilities and dropout output.
    const Bytes recomputed = layer_full - layer_attention_only;
    workspace += recomputed;
    ws_how = "one layer's recomputed core attention " + bytes(recomputed) + " + " + ws_how;
  } else if (selective) {
    // The recomputed tensors: what the layer would keep less what the policy already holds.
    const Bytes recomputed = std::max(0.0, layer_full - (layer_selective - layer_input));
    workspace += recomputed;
    ws_how = "one layer's recomputed tensors " + bytes(recomputed) + " + " + ws_how;
  } else if (p.activation_checkpointing) {
    workspace += layer_full;
    ws_how = "one recomputed layer " + bytes(layer_full) + " + " + ws_how;
  }
  if (p.cp > 1 && p.sharding == plan::Sharding::fsdp) {
    // PyTorch's ring attention at its backward's peak (program/torch_ring_attention.hpp): the
    // gathered K, V (allgather: every CP rank's; alltoall: this step's and the next's), the fp32
    // dQ, dK, dV, and the fp32 dK, dV sent and received; K and V at every query head, as
    // torchtitan's model repeats them before SDPA.
    const double q = 2.0 * static_cast<double>(p.micro_batch * s.seq_len * s.hidden) / tp;  // bf16, this rank's tokens
    const double kv = 2 * q;
    const double held = p.cp_rotate == plan::CpRotateMethod::allgather ? static_cast<double>(p.cp) : 2.0;
    const Bytes ring = held * kv + 2 * q + 6 * kv;
    workspace += ring;
    ws_how += " + PyTorch's ring attention buffers " + bytes(ring) + " (" + num(held) +
              " x K, V gathered, fp32 dQ, dK, dV and the dK, dV in flight)";
  }
  if (last && hf_bert) {
    // CrossEntropyLoss's backward under autocast: nll_loss_backward's zeroed fp32 gradient of the
    // log-probabilities and _log_softmax_backward_data's fp32 output, both live while the latter
    // runs beside the kept log-probabilities (in activations); the fp16 cast for the decoder's
    // backward comes after the first two are freed (hf_bert_head_backward's order).
    const Bytes logits_grad = 8.0 * static_cast<double>(p.micro_batch * s.seq_len * s.vocab);
    if (logits_grad > workspace) {
      workspace = logits_grad;
      ws_how = "nll_loss's and log_softmax's fp32 gradients of the logits: 8 B x tokens x vocabulary";
    }
  } else if (last && !p.fused_cross_entropy) {
    // The loss backward writes the fp32 gradient of the logits and its bf16 cast.
    const Bytes logits_grad = 6.0 * static_cast<double>(p.micro_batch * model::decoder_tokens(s) * s.vocab) / tp;
    if (logits_grad > workspace) {
      workspace = logits_grad;
      ws_how = "gradient of the logits in fp32 and bf16: 6 B x tokens x vocabulary / TP";
    }
  } else if (last && !p.fused_cross_entropy_inplace) {
    // flash-attn's CrossEntropyLoss with inplace_backward=False (its default, v1.0.3.post0 and
    // v1.0.9 flash_attn/losses/cross_entropy.py:109, which llm-foundry constructs without the
    // argument: 300cc5c58 llmfoundry/models/mosaic_gpt/mosaic_gpt.py:515, v0.3.0
    // llmfoundry/models/mpt/modeling_mpt.py:727): xentropy's backward allocates the gradient,
    // at::empty_like(logits) (csrc/xentropy/xentropy_kernel.cu:697 at v0.2.8 and v1.0.9), bf16
    // beside the bf16 logits the activations hold, until the output projection's backward has
    // read it. No layer is being recomputed then, so it stands beside the layer workspace, not on it.
    const Bytes logits_grad = 2.0 * static_cast<double>(p.micro_batch * model::decoder_tokens(s) * s.vocab) / tp;
    if (logits_grad > workspace) {
      workspace = logits_grad;
      ws_how = "the fused loss's bf16 gradient of the logits, not in place: 2 B x tokens x vocabulary / TP";
    }
  }
  if (pipe.backward > 0) {
    workspace += pipe.backward;
    ws_how += " + " + pipe.backward_how;
  }
  add("activation_workspace", workspace, ws_how);
  const Bytes reduce_copy = gradient_reduce_copy_bytes(p, params);
  if (reduce_copy > 0)
    add("gradient_reduce_copy", reduce_copy,
        num(p.gradient_wire_bytes) + " B x " + num(params) +
            " fp32 gradients copied to the wire dtype for DeepSpeed's all-reduce, after the flush (not beside the activations)");
  if (pipe.resident > 0) add("pipe_buffers", pipe.resident, "DeepSpeed's pipeline engine: " + pipe.resident_how);
  add("runtime_reserve", in.runtime_reserve, "device profile");

  const Bytes all = r.sum_of_terms();
  const Bytes backward_moment = all - reduce_copy;
  const Bytes reduce_moment =
      all - r.term("activations") - r.term("activation_workspace") - r.term("deferred_head_wgrad");
  r.peak = reduce_copy > 0 ? std::max(backward_moment, reduce_moment) : all;
  if (step_gradients) {
    // Megatron 2021: the activations' moment holds the fp16 gradients only after the stage's
    // first backward; the step's moment the fp16 gradients and their flattened copy, then the
    // fp32 grads, made tensor by tensor as each fp16 one is freed (optimizer.py:314-327).
    const Bytes fp16 = r.term("gradients"), copy = r.term("communication_buffers"),
                fp32 = r.term("master_gradients");
    const Bytes base = all - r.term("activations") - r.term("activation_workspace") - r.term("deferred_head_wgrad") -
                       fp16 - copy - fp32;
    const Bytes activations_moment = all - copy - fp32 - (forward_after_first_backward(p, stage) ? 0.0 : fp16);
    r.peak = std::max(activations_moment, base + std::max(fp16 + copy, fp32));
  }
  return r;
}

std::vector<RankMemory> rank_memory(const MemoryInputs& in) {
  std::vector<RankMemory> out;
  const long pp = in.plan.pp;
  if (pp == 1) return {stage_memory(in, 0)};
  out.push_back(stage_memory(in, 0));
  if (pp > 2) {
    // The middle stage with the most memory (the earliest: most micro-batches in flight).
    RankMemory worst = stage_memory(in, 1);
    for (long st = 2; st < pp - 1; ++st) {
      RankMemory m = stage_memory(in, st);
      if (m.peak > worst.peak) worst = m;
    }
    out.push_back(worst);
  }
  out.push_back(stage_memory(in, pp - 1));
  return out;
}

}  // namespace trainsim::memory

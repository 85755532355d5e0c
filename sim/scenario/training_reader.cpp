#include "scenario/training_reader.hpp"

#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"

namespace trainsim::scenario {

namespace {

double wire_bytes(JsonObject& o, const std::string& key) {
  return o.choice_or(key, {"fp32", "bf16", "fp16"}, "bf16") == "fp32" ? 4.0 : 2.0;
}

/// training.gradient_buffers, read once the schedule, precision, pipeline engine, ZeRO-1
/// collective, optimizer and its state dtype are: whose optimizer holds the gradients
/// (plan/gradient_state.hpp), where that implementation exists.
plan::GradientBuffers read_gradient_buffers(JsonObject& o, const plan::TrainingPlan& t) {
  using plan::GradientBuffers;
  using plan::Sharding;
  const std::string key = "gradient_buffers";
  const std::vector<std::string> names = {"generic", "megatron-local-ddp", "megatron-core-distributed-optimizer",
                                          "apex-distributed-fused-adam", "deepspeed-bf16-optimizer"};
  // The named implementations are modelled with Megatron's recipe on ddp or zero1, where they
  // keep different copies: no default there.
  const bool megatron_recipe = t.precision.name == "bf16_fp32_grads";
  if (!o.has(key) && megatron_recipe && (t.sharding == Sharding::none || t.sharding == Sharding::zero1))
    o.fail(key, "required with precision bf16_fp32_grads and schedule ddp or zero1, where the gradient copies depend "
                "on whose optimizer holds them: expected \"megatron-local-ddp\" (ddp), "
                "\"megatron-core-distributed-optimizer\", \"apex-distributed-fused-adam\", "
                "\"deepspeed-bf16-optimizer\" (zero1) or \"generic\" (PyTorch, DeepSpeed ZeRO)");
  const std::string name = o.choice_or(key, names, "generic");
  const GradientBuffers g = name == "megatron-local-ddp"                    ? GradientBuffers::megatron_local_ddp
                            : name == "megatron-core-distributed-optimizer" ? GradientBuffers::megatron_core_distributed_optimizer
                            : name == "apex-distributed-fused-adam"         ? GradientBuffers::apex_distributed_fused_adam
                            : name == "deepspeed-bf16-optimizer"            ? GradientBuffers::deepspeed_bf16_optimizer
                                                                            : GradientBuffers::generic;
  const bool bf16_state = t.optimizer_state_element_bytes != 4;
  if (bf16_state && g != GradientBuffers::apex_distributed_fused_adam)
    o.fail("optimizer_state_dtype", "bf16 optimizer state is modelled for Apex's DistributedFusedAdam: needs "
                                    "gradient_buffers \"apex-distributed-fused-adam\", got \"" + name + "\"");
  // Both reduce-scatter their gradient buffer's buckets (memory/rank_memory.cpp cites the lines:
  // param_and_grad_buffer.py:309-318 at core_r0.10.0, distributed_fused_adam.py:1856 at f3f0492).
  if (t.zero1_gradient_all_reduce && (g == GradientBuffers::megatron_core_distributed_optimizer ||
                                      g == GradientBuffers::apex_distributed_fused_adam))
    o.fail("zero1_gradient_collective", "\"" + name + "\" reduce-scatters the gradients inside its buffer: "
                                        "needs zero1_gradient_collective \"reduce_scatter\" (all_reduce is DeepSpeed's "
                                        "BF16_Optimizer, \"deepspeed-bf16-optimizer\")");
  if (g == GradientBuffers::generic) return g;
  // Each named implementation: the schedule it shards by, Megatron's recipe, its pipeline code.
  const std::string schedule = t.sharding == Sharding::none ? "ddp" : plan::sharding_name(t.sharding);
  const bool zero1 = g != GradientBuffers::megatron_local_ddp;
  if (zero1 && t.sharding != Sharding::zero1)
    o.fail(key, "\"" + name + "\" shards the fp32 master weights and optimizer states and nothing else (ZeRO-1): "
                "needs schedule zero1, got " + schedule);
  if (!zero1 && t.sharding != Sharding::none)
    o.fail(key, "\"megatron-local-ddp\" replicates the optimizer on every data-parallel rank: needs schedule ddp, got " +
                    schedule);
  if (!megatron_recipe)
    o.fail(key, "\"" + name + "\" is modelled with Megatron's recipe: needs precision bf16_fp32_grads, got " +
                    t.precision.name);
  const bool deepspeed = g == GradientBuffers::deepspeed_bf16_optimizer;
  if (deepspeed && t.pipeline_engine != plan::PipelineEngine::deepspeed)
    o.fail(key, "\"deepspeed-bf16-optimizer\" is modelled under DeepSpeed's pipeline engine (it clears the bf16 "
                "gradients before each backward): needs pipeline_engine \"deepspeed\"");
  if (deepspeed && !t.zero1_gradient_all_reduce)
    o.fail(key, "\"deepspeed-bf16-optimizer\" all-reduces the fp32 gradients (pipe/engine.py _bf16_reduce_grads): "
                "needs zero1_gradient_collective \"all_reduce\"");
  if (!deepspeed && t.pipeline_engine != plan::PipelineEngine::megatron)
    o.fail(key, "\"" + name + "\" runs under Megatron's code: needs pipeline_engine \"megatron\"");
  if (g == GradientBuffers::apex_distributed_fused_adam && t.optimizer != plan::Optimizer::adam)
    o.fail(key, "Apex's DistributedFusedAdam is Adam: needs optimizer adam or adamw");
  return g;
}

}  // namespace

plan::TrainingPlan read_training(JsonObject o) {
  using plan::Sharding;
  plan::TrainingPlan t;
  const std::string sched = o.choice("schedule", {"ddp", "zero1", "zero2", "zero3", "fsdp"});
  t.sharding = sched == "ddp"     ? Sharding::none
               : sched == "zero1" ? Sharding::zero1
               : sched == "zero2" ? Sharding::zero2
               : sched == "zero3" ? Sharding::zero3
                                  : Sharding::fsdp;
  if (o.has("hybrid_shard_degree")) {
    if (t.sharding == Sharding::none)
      o.fail("hybrid_shard_degree", "DDP shards nothing; use zero1/2/3 or fsdp");
    t.shard_degree = o.positive_integer("hybrid_shard_degree");
  }
  t.tp = o.positive_integer_or("tensor_parallel", 1);
  t.sequence_parallel = o.boolean_or("sequence_parallel", false);
  if (t.sequence_parallel && t.tp == 1)
    o.fail("sequence_parallel", "sequence parallelism needs tensor_parallel > 1");
  t.tp_comm_overlap = o.boolean_or("tp_comm_overlap", false);
  if (t.tp_comm_overlap && (t.tp == 1 || !t.sequence_parallel))
    o.fail("tp_comm_overlap", "Transformer Engine's TP communication overlap needs tensor_parallel > 1 and sequence_parallel true");
  t.pp = o.positive_integer_or("pipeline_parallel", 1);
  if (t.pp > 1 && (t.sharding == Sharding::zero2 || t.sharding == Sharding::zero3))
    o.fail("pipeline_parallel",
           "DeepSpeed's pipeline engine rejects ZeRO-2 and ZeRO-3 with pipeline parallelism "
           "(deepspeed/runtime/pipe/engine.py: \"ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism\"; "
           "both reduce-scatter gradients at every micro-batch, ZeRO-3 also gathers parameters, and a pipeline "
           "runs many micro-batches per step); use schedule zero1 or ddp");
  const std::string ps = o.choice_or("pipeline_schedule", {"gpipe", "1f1b", "interleaved", "zb-h1", "zb-v"}, "1f1b");
  t.pipeline = ps == "gpipe"   ? plan::PipelineSchedule::gpipe
               : ps == "1f1b"  ? plan::PipelineSchedule::one_f_one_b
               : ps == "zb-h1" ? plan::PipelineSchedule::zero_bubble_h1
               : ps == "zb-v"  ? plan::PipelineSchedule::zero_bubble_v
                               : plan::PipelineSchedule::interleaved;
  if (t.pipeline == plan::PipelineSchedule::zero_bubble_v) {
    // ZB-V's V is two model chunks per stage.
    t.virtual_stages = o.positive_integer_or("virtual_stages", 2);
    if (t.virtual_stages != 2) o.fail("virtual_stages", "pipeline_schedule \"zb-v\" places two model chunks per stage");
    if (t.pp < 2) o.fail("pipeline_schedule", "pipeline_schedule \"zb-v\" needs pipeline_parallel > 1");
  } else {
    t.virtual_stages = o.positive_integer_or("virtual_stages", 1);
    if (t.virtual_stages > 1 && t.pipeline != plan::PipelineSchedule::interleaved)
      o.fail("virtual_stages", "virtual stages need pipeline_schedule \"interleaved\" (or \"zb-v\", two)");
  }
  if (o.choice_or("pipeline_partition", {"uniform", "transformer_and_embedding"}, "uniform") ==
      "transformer_and_embedding") {
    if (t.pp < 2) o.fail("pipeline_partition", "a partition of pipeline stages needs pipeline_parallel > 1");
    // Under interleaving the first and last virtual stages give up a layer (the zero-bubble
    // paper's Megatron-LM, ed85b11c megatron/model/transformer.py: is_pipeline_first_stage /
    // is_pipeline_last_stage hold num_layers - 1); modelled without FSDP inside the stages and
    // without overlap_param_gather, whose buckets follow a chunk's layers.
    if (t.virtual_stages > 1 && t.sharding == Sharding::fsdp)
      o.fail("pipeline_partition", "transformer_and_embedding with virtual stages is not modelled with FSDP inside the stages");
    t.partition = plan::PipelinePartition::transformer_and_embedding;
  }
  const std::string precision = o.choice("precision", {"amp", "fp32", "fsdp_mixed", "bf16_fp32_grads"});
  if (!plan::precision_recipe(precision, t.precision)) o.fail("precision", "unknown recipe");
  if (precision == "fsdp_mixed" && t.sharding != Sharding::fsdp)
    o.fail("precision", "fsdp_mixed is FSDP's MixedPrecision; use it with schedule fsdp");
  if (o.choice_or("linear_precision", {"bf16", "fp8"}, "bf16") == "fp8") {
    t.linear_precision = plan::LinearPrecision::fp8;
    t.fp8_implementation = o.choice("fp8_implementation", {"transformer-engine", "torchao"}) == "torchao"
                               ? plan::Fp8Implementation::torchao
                               : plan::Fp8Implementation::transformer_engine;
  } else if (o.has("fp8_implementation")) {
    o.fail("fp8_implementation", "says whose FP8 linear layers run: set linear_precision \"fp8\"");
  }
  const std::string opt = o.choice_or("optimizer", {"adam", "adamw", "sgd_momentum", "sgd"}, "adamw");
  t.optimizer = opt == "sgd" ? plan::Optimizer::sgd
                : opt == "sgd_momentum" ? plan::Optimizer::sgd_momentum
                                        : plan::Optimizer::adam;
  t.micro_batch = o.positive_integer("micro_batch");
  t.accumulation = o.positive_integer_or("gradient_accumulation", 1);
  t.activation_checkpointing = o.boolean_or("activation_checkpointing", false);
  t.activation_offloading = o.boolean_or("activation_offloading", false);
  if (t.activation_offloading && !t.activation_checkpointing)
    o.fail("activation_offloading", "offloading moves checkpointed layer inputs: enable activation_checkpointing");
  t.flash_attention = o.boolean_or("flash_attention", false);
  if (o.has("checkpoint_policy")) {
    if (!t.activation_checkpointing)
      o.fail("checkpoint_policy", "says what checkpointed layers keep: enable activation_checkpointing");
    const std::string policy = o.choice("checkpoint_policy", {"full", "selective_op", "selective_attention"});
    if (policy == "selective_attention") {
      t.checkpoint_policy = plan::CheckpointPolicy::selective_attention;
      // Modelled where Megatron-LM 2022 runs it: the PTD-P schedule, unfused core attention.
      if (t.sharding != Sharding::none && t.sharding != Sharding::zero1)
        o.fail("checkpoint_policy", "selective_attention is modelled in the PTD-P schedule only (schedule ddp or zero1)");
      if (t.tp == 1 && t.pp == 1)
        o.fail("checkpoint_policy",
               "selective_attention is modelled in the PTD-P schedule only (tensor_parallel or pipeline_parallel > 1)");
      if (t.activation_offloading)
        o.fail("checkpoint_policy", "activation_offloading moves full checkpoints' layer inputs; not modelled with selective_attention");
    }
    if (policy == "selective_op") {
      t.checkpoint_policy = plan::CheckpointPolicy::selective_op;
      // torchtitan's policy: its FSDP (with or without TP), and its pipeline stages (the PTD-P
      // schedule, DDP or FSDP2 inside the stages), with SDPA's flash kernel.
      if (t.sharding == Sharding::zero2)
        o.fail("checkpoint_policy", "selective_op is torchtitan's policy: modelled with schedule fsdp, zero3, ddp or zero1");
      if ((t.sharding == Sharding::none || t.sharding == Sharding::zero1) && t.tp == 1 && t.pp == 1)
        o.fail("checkpoint_policy", "selective_op with schedule ddp or zero1 is modelled in the PTD-P schedule only "
                                    "(tensor_parallel or pipeline_parallel > 1)");
      if (!t.flash_attention)
        o.fail("checkpoint_policy", "selective_op saves the fused attention kernel's output: enable flash_attention");
      if (t.activation_offloading)
        o.fail("checkpoint_policy", "activation_offloading moves full checkpoints' layer inputs; not modelled with selective_op");
    }
  }
  t.attention_kernel = o.string_or("attention_kernel", "");
  if (!t.attention_kernel.empty() && !t.flash_attention)
    o.fail("attention_kernel", "names a fused attention kernel: enable flash_attention");
  t.fused_cross_entropy = o.boolean_or("fused_cross_entropy", false);
  t.fused_cross_entropy_inplace = o.boolean_or("fused_cross_entropy_inplace", true);
  if (o.has("fused_cross_entropy_inplace") && !t.fused_cross_entropy)
    o.fail("fused_cross_entropy_inplace", "says where the fused loss writes its gradient: enable fused_cross_entropy");
  if (o.has("context_parallel")) {
    t.cp = o.positive_integer("context_parallel");
    // Modelled as Megatron-core with Transformer Engine runs it (program/context_parallel.hpp):
    // the PTD-P schedule, TE's fused attention split into ring steps, whole layers recomputed.
    if (t.cp > 1) {
      // Under schedule fsdp: torchtitan's, PyTorch's ring attention in FSDP2's schedule
      // (program/torch_ring_attention.hpp; its conditions below, once the FSDP keys are read).
      if (t.sharding != Sharding::none && t.sharding != Sharding::zero1 && t.sharding != Sharding::fsdp)
        o.fail("context_parallel", "is modelled in the PTD-P schedule (schedule ddp or zero1) and in FSDP2's "
                                   "(schedule fsdp, as torchtitan runs it)");
      if (t.shard_degree > 0 && t.sharding != Sharding::fsdp)
        o.fail("context_parallel", "with hybrid_shard_degree is modelled under schedule fsdp only (Megatron's "
                                   "distributed optimizer shards over the whole data-parallel x context-parallel group)");
      if (!t.flash_attention)
        o.fail("context_parallel", "splits Transformer Engine's fused attention into ring steps: enable flash_attention");
      // Full recompute runs the ring again; torchtitan's op policy saves SDPA's output (the ring
      // attention's, which its dispatch mode sees as one op), so nothing of the ring is recomputed.
      const bool torchtitan_policy =
          t.sharding == Sharding::fsdp && t.checkpoint_policy == plan::CheckpointPolicy::selective_op;
      if (t.activation_checkpointing && t.checkpoint_policy != plan::CheckpointPolicy::full && !torchtitan_policy)
        o.fail("context_parallel", "with selective checkpointing is not modelled (checkpoint_policy \"full\" is: its "
                                   "recompute runs the KV ring again; under schedule fsdp also \"selective_op\")");
    }
  }
  t.eager_kernels = o.boolean_or("eager_kernels", false);
  t.allocator_retry_stalls = o.boolean_or("allocator_retry_stalls", false);
  t.allocator_host_issue = o.boolean_or("allocator_host_issue", false);
  if (t.tp_comm_overlap && t.sharding != Sharding::none && t.sharding != Sharding::zero1)
    o.fail("tp_comm_overlap", "modelled in the PTD-P schedule only (schedule ddp or zero1)");
  if (t.tp_comm_overlap && t.eager_kernels)
    o.fail("tp_comm_overlap", "Transformer Engine's fused QKV and MLP linears only; eager_kernels splits them");
  if (o.has("tp_comm_overlap_model")) {
    // Read without tp_comm_overlap too: a scenario's shared training block may choose the model
    // for the points that turn the overlap on, and it means nothing elsewhere.
    t.tp_overlap_model = o.choice_or("tp_comm_overlap_model", {"coarse", "per_step"}, "coarse") == "per_step"
                             ? plan::TpOverlapModel::per_step
                             : plan::TpOverlapModel::coarse;
  }
  if (o.has("tp_comm_overlap_fp8_buf")) {
    // TE's initialize_ub honours a config's fp8_buf only for the pipelined reduce-scatters.
    if (!t.tp_comm_overlap || t.linear_precision != plan::LinearPrecision::fp8 ||
        t.fp8_implementation != plan::Fp8Implementation::transformer_engine)
      o.fail("tp_comm_overlap_fp8_buf",
             "names Transformer Engine userbuffers to run in FP8: needs tp_comm_overlap true, linear_precision \"fp8\" "
             "and fp8_implementation \"transformer-engine\"");
    for (const std::string& name : o.string_array("tp_comm_overlap_fp8_buf")) {
      if (name == "proj_fprop") t.tp_overlap_fp8_proj_scatter = true;
      else if (name == "fc2_fprop") t.tp_overlap_fp8_fc2_scatter = true;
      else
        o.fail("tp_comm_overlap_fp8_buf", "expected \"proj_fprop\" or \"fc2_fprop\" (the reduce-scatter userbuffers "
                                          "whose fp8_buf Transformer Engine reads; its all-gather buffers are FP8 "
                                          "whenever FP8 is on), got \"" + name + "\"");
    }
  }
  t.host_dispatch = o.boolean_or("host_dispatch", true);
  t.cuda_launch_blocking = o.boolean_or("cuda_launch_blocking", false);
  if (t.cuda_launch_blocking && !t.host_dispatch)
    o.fail("cuda_launch_blocking", "needs host_dispatch (the host's time per kernel is what blocking launches expose)");
  {
    const std::string mk =
        o.choice_or("module_kernels", {"fused", "megatron", "mpt", "mpt-flash", "torch-layer", "hf-bert"}, "fused");
    t.module_kernels = mk == "megatron"      ? plan::ModuleKernels::megatron
                       : mk == "mpt"         ? plan::ModuleKernels::mpt
                       : mk == "mpt-flash"   ? plan::ModuleKernels::mpt_flash
                       : mk == "torch-layer" ? plan::ModuleKernels::torch_layer
                       : mk == "hf-bert"     ? plan::ModuleKernels::hf_bert
                                             : plan::ModuleKernels::fused;
    // Hugging Face's BertLayer as 4.21 runs it under torch.cuda.amp (model/hf_bert_ops.hpp): one
    // rank per layer, its own unfused attention and its own embedding and head code.
    if (mk == "hf-bert") {
      if (t.sharding != Sharding::none || t.tp > 1 || t.pp > 1 || t.cp > 1)
        o.fail("module_kernels", "hf-bert is Hugging Face's BertLayer on one rank per replica: needs schedule \"ddp\" "
                                 "without tensor, pipeline or context parallelism");
      if (t.flash_attention) o.fail("module_kernels", "hf-bert runs BertSelfAttention's unfused matmuls: disable flash_attention");
      if (t.precision.name != "amp")
        o.fail("module_kernels", "hf-bert models torch.cuda.amp autocast (fp32 weights, fp16 GEMMs): needs precision \"amp\"");
    }
    if (mk == "mpt-flash" && !t.flash_attention)
      o.fail("module_kernels", "mpt-flash is llm-foundry's flash_attn_fn around flash-attn's kernel: enable flash_attention");
  }
  t.bucket_elements = o.number_or("bucket_elements", 0);
  if (t.bucket_elements < 0) o.fail("bucket_elements", "expected a non-negative number of elements");
  t.overlap_grad_reduce = o.boolean_or("overlap_grad_reduce", false);
  t.overlap_param_gather = o.boolean_or("overlap_param_gather", false);
  if (t.overlap_param_gather) {
    // Megatron's own conditions (megatron/training/arguments.py): the distributed optimizer and
    // overlap_grad_reduce. It runs in the PTD-P schedule, data-parallel jobs included.
    if (t.sharding != Sharding::zero1)
      o.fail("overlap_param_gather", "overlaps the distributed optimizer's parameter all-gather: needs schedule zero1");
    if (!t.overlap_grad_reduce)
      o.fail("overlap_param_gather", "needs overlap_grad_reduce true (Megatron asserts both)");
    if (t.partition != plan::PipelinePartition::uniform && t.virtual_stages > 1)
      o.fail("overlap_param_gather", "is modelled on the uniform partition under interleaving (pipeline_partition \"uniform\")");
  }
  if (o.choice_or("zero1_gradient_collective", {"reduce_scatter", "all_reduce"}, "reduce_scatter") == "all_reduce") {
    if (t.sharding != Sharding::zero1 || t.pp < 2)
      o.fail("zero1_gradient_collective",
             "all_reduce (DeepSpeed's BF16_Optimizer under its pipeline engine) needs schedule zero1 and pipeline_parallel > 1");
    t.zero1_gradient_all_reduce = true;
  }
  if (o.choice_or("pipeline_engine", {"megatron", "deepspeed"}, "megatron") == "deepspeed") {
    // DeepSpeed's PipelineEngine runs only its TrainSchedule (1F1B, no model chunks) and reduces
    // the gradients in its ReduceGrads instruction after the flush.
    if (t.pp < 2) o.fail("pipeline_engine", "deepspeed runs a pipeline: needs pipeline_parallel > 1");
    if (t.pipeline != plan::PipelineSchedule::one_f_one_b)
      o.fail("pipeline_engine", "deepspeed's TrainSchedule is 1F1B: needs pipeline_schedule \"1f1b\"");
    if (t.overlap_grad_reduce)
      o.fail("pipeline_engine", "deepspeed reduces the gradients after the pipeline flush: needs overlap_grad_reduce false");
    t.pipeline_engine = plan::PipelineEngine::deepspeed;
    if (t.cp > 1) o.fail("pipeline_engine", "context_parallel is Megatron-core's: modelled with pipeline_engine \"megatron\"");
    if (t.activation_checkpointing && t.checkpoint_policy == plan::CheckpointPolicy::selective_attention)
      o.fail("pipeline_engine", "selective_attention is Megatron's recomputation: modelled with pipeline_engine \"megatron\"");
    if (t.activation_checkpointing && t.checkpoint_policy == plan::CheckpointPolicy::selective_op)
      o.fail("pipeline_engine", "selective_op is torchtitan's policy: modelled with pipeline_engine \"megatron\"");
  }
  // Without stages or TP there is nothing to split; allowed so a scenario's shared training
  // object can set it for points that override the degrees.
  t.pipeline_scatter_gather = o.boolean_or("pipeline_scatter_gather", true);
  t.fp8_amax_tp_only = o.boolean_or("tp_only_amax_red", false);
  if (t.fp8_amax_tp_only && (t.linear_precision != plan::LinearPrecision::fp8 ||
                             t.fp8_implementation != plan::Fp8Implementation::transformer_engine))
    o.fail("tp_only_amax_red", "narrows Transformer Engine's FP8 amax reduction: needs linear_precision \"fp8\" and "
                               "fp8_implementation \"transformer-engine\"");
  t.overlap_p2p_comm = o.boolean_or("overlap_p2p_comm", false);
  if (t.overlap_p2p_comm) {
    // Megatron-core's condition (schedules.py: overlap_p2p_comm is read only by the interleaved
    // schedule, and it rejects batch_p2p_comm with it); its stage exchanges move whole tensors
    // under sequence parallelism, never 2021's scatter/gather.
    if (t.pipeline != plan::PipelineSchedule::interleaved || t.virtual_stages < 2 || t.pp < 2)
      o.fail("overlap_p2p_comm", "Megatron-core overlaps the exchanges of its interleaved schedule only: needs "
                                 "pipeline_parallel > 1, pipeline_schedule \"interleaved\" and virtual_stages > 1");
    if (t.pipeline_engine != plan::PipelineEngine::megatron)
      o.fail("overlap_p2p_comm", "is Megatron-core's: needs pipeline_engine \"megatron\"");
    if (t.tp > 1 && !t.sequence_parallel && t.pipeline_scatter_gather)
      o.fail("overlap_p2p_comm", "Megatron-core has no scatter/gather of stage tensors: with tensor_parallel > 1 "
                                 "needs sequence_parallel true or pipeline_scatter_gather false");
  }
  if (o.choice_or("gradient_accumulation_add", {"fused", "autograd"}, "fused") == "autograd") {
    // Megatron 2021 (6985e58: neither --use-contiguous-buffers-in-ddp nor gradient-accumulation
    // fusion) left accumulation to autograd. Modelled in the PTD-P schedule's plain layer passes.
    if (t.pipeline_engine != plan::PipelineEngine::megatron)
      o.fail("gradient_accumulation_add", "autograd is Megatron 2021's accumulation: needs pipeline_engine \"megatron\"");
    if (t.tp_comm_overlap || t.cp > 1)
      o.fail("gradient_accumulation_add",
             "autograd is modelled in plain layer passes: not with tp_comm_overlap or context_parallel > 1");
    t.autograd_gradient_accumulation = true;
  }
  t.overlap_param_gather_with_optimizer_step = o.boolean_or("overlap_param_gather_with_optimizer_step", false);
  if (t.overlap_param_gather_with_optimizer_step) {
    // Megatron's own conditions (megatron/training/arguments.py, core_r0.10.0): the distributed
    // optimizer with overlap_param_gather, and virtual pipeline stages (the first model chunk gets
    // an optimizer of its own: megatron/core/optimizer/__init__.py).
    if (!t.overlap_param_gather)
      o.fail("overlap_param_gather_with_optimizer_step", "needs overlap_param_gather true (Megatron asserts it)");
    if (t.pipeline != plan::PipelineSchedule::interleaved || t.virtual_stages < 2 || t.pp < 2)
      o.fail("overlap_param_gather_with_optimizer_step",
             "is supported by Megatron with interleaved pipeline parallelism only: needs pipeline_parallel > 1, "
             "pipeline_schedule \"interleaved\" and virtual_stages > 1");
  }
  t.defer_embedding_wgrad_compute = o.boolean_or("defer_embedding_wgrad_compute", false);
  if (t.defer_embedding_wgrad_compute) {
    // Megatron-core's conditions (model_parallel_config.py __post_init__): pipeline stages (the
    // deferred GEMMs fill the last stage's flush); its gradient-accumulation fusion is assumed.
    if (t.pp < 2)
      o.fail("defer_embedding_wgrad_compute",
             "moves the output layer's weight gradients into the pipeline flush: needs pipeline_parallel > 1 "
             "(Megatron-core raises without pipeline parallelism)");
    if (t.pipeline_engine != plan::PipelineEngine::megatron)
      o.fail("defer_embedding_wgrad_compute", "is Megatron-core's: needs pipeline_engine \"megatron\"");
  }
  if (o.has("wgrad_deferral_limit")) {
    if (!t.defer_embedding_wgrad_compute)
      o.fail("wgrad_deferral_limit", "limits defer_embedding_wgrad_compute: needs it true");
    const double limit = o.number("wgrad_deferral_limit");
    if (limit < 0 || limit != static_cast<double>(static_cast<long>(limit)))
      o.fail("wgrad_deferral_limit", "expected a non-negative integer number of micro-batches (0: all deferred)");
    t.wgrad_deferral_limit = static_cast<long>(limit);
  }
  const std::string optimizer_kernels =
      o.choice_or("optimizer_implementation", {"fused", "megatron-fp16", "torch-foreach"}, "fused");
  if (optimizer_kernels == "torch-foreach") {
    if (t.sharding != Sharding::fsdp)
      o.fail("optimizer_implementation", "torch-foreach is modelled in the sharded schedule only (schedule fsdp)");
    if (t.optimizer != plan::Optimizer::adam)
      o.fail("optimizer_implementation", "torch-foreach is torch.optim's foreach AdamW: needs optimizer adam or adamw");
    t.optimizer_implementation = plan::OptimizerImplementation::torch_foreach;
  }
  if (o.choice_or("optimizer_state_dtype", {"fp32", "bf16"}, "fp32") == "bf16") {
    // Apex's DistributedFusedAdam (NeMo's distributed_fused_adam) with dtype bf16: both moments
    // and its distributed parameter copy (store_params) in bf16 instead of fp32. The gradient
    // buffers' check below says whose optimizer this is.
    if (t.optimizer != plan::Optimizer::adam)
      o.fail("optimizer_state_dtype", "bf16 optimizer state is Apex's DistributedFusedAdam: needs optimizer adam or adamw");
    t.optimizer_state_element_bytes = 2;
    t.precision.master_weights = 2;
  }
  t.clip_grad_norm = o.boolean_or("clip_grad_norm", false);
  if (t.clip_grad_norm && t.sharding != Sharding::fsdp)
    o.fail("clip_grad_norm", "torch.nn.utils.clip_grad_norm_ is modelled in the sharded schedule only (schedule fsdp); "
                             "megatron-fp16 counts Megatron's own norm");
  if (o.has("composer_train_metrics")) {
    // Composer's train metrics whose update is a cross-entropy over the logits (model/
    // composer_metrics.hpp); others (token accuracy, ...) are not modelled.
    const auto metrics = o.string_array("composer_train_metrics");
    for (std::size_t i = 0; i < metrics.size(); ++i) {
      if (metrics[i] != "LanguageCrossEntropy" && metrics[i] != "LanguagePerplexity")
        throw ConfigError(o.file(), o.path_of("composer_train_metrics") + "/" + std::to_string(i),
                          "\"" + metrics[i] + "\": expected \"LanguageCrossEntropy\" or \"LanguagePerplexity\"");
      for (std::size_t j = 0; j < i; ++j)
        if (metrics[j] == metrics[i])
          throw ConfigError(o.file(), o.path_of("composer_train_metrics") + "/" + std::to_string(i),
                            "repeats \"" + metrics[i] + "\": Composer keys its train metrics by name");
    }
    if (!metrics.empty() && t.sharding != Sharding::fsdp)
      o.fail("composer_train_metrics", "Composer's metric updates are modelled in the sharded schedule only (schedule fsdp)");
    if (!metrics.empty() && t.tp > 1)
      o.fail("composer_train_metrics", "Composer runs the metrics on whole logits: needs tensor_parallel 1");
    t.composer_train_metrics = static_cast<int>(metrics.size());
  }
  if (o.has("composer_train_metrics_autocast")) {
    if (t.composer_train_metrics == 0)
      o.fail("composer_train_metrics_autocast", "describes Composer's train-metric updates: needs composer_train_metrics");
    t.composer_train_metrics_autocast = o.boolean_or("composer_train_metrics_autocast", true);
  }
  if (o.has("composer_metric_sync")) {
    t.composer_metric_sync = o.boolean_or("composer_metric_sync", false);
    if (t.composer_metric_sync && t.composer_train_metrics == 0)
      o.fail("composer_metric_sync", "syncs Composer's train metrics: needs composer_train_metrics");
  }
  {
    const std::string loop = o.choice_or("trainer", {"none", "hf-4.21", "optimum-habana-89e505a"}, "none");
    t.trainer = loop == "hf-4.21"                  ? plan::TrainingLoop::hf_trainer_4_21
                : loop == "optimum-habana-89e505a" ? plan::TrainingLoop::optimum_habana_89e505a
                                                   : plan::TrainingLoop::none;
    if (t.trainer != plan::TrainingLoop::none && (t.sharding != Sharding::none || t.tp > 1 || t.pp > 1 || t.cp > 1))
      o.fail("trainer", "the Trainer's loop is modelled around PyTorch DDP: needs schedule \"ddp\" without tensor, "
                        "pipeline or context parallelism");
    if (t.trainer != plan::TrainingLoop::none && t.optimizer != plan::Optimizer::adam)
      o.fail("trainer", "the Trainer's default optimizer is AdamW (transformers' AdamW, FusedAdamW on Gaudi): needs "
                        "optimizer adam or adamw");
    if (t.trainer == plan::TrainingLoop::hf_trainer_4_21 && t.precision.name != "amp")
      o.fail("trainer", "hf-4.21 is modelled with --fp16 (torch.cuda.amp's GradScaler): needs precision \"amp\"");
  }
  t.megatron_step_syncs = o.boolean_or("megatron_step_syncs", false);
  if (t.megatron_step_syncs && t.sharding != Sharding::none)
    o.fail("megatron_step_syncs", "is Megatron-LM 2021's training loop with its local or torch DDP: needs schedule \"ddp\"");
  t.pipeline_outputs_kept = o.boolean_or("pipeline_outputs_kept", false);
  if (t.pipeline_outputs_kept && t.pipeline_engine != plan::PipelineEngine::megatron)
    o.fail("pipeline_outputs_kept", "is Megatron-LM 2021's schedules.py (DeepSpeed's pipeline engine keeps its own "
                                    "outputs, counted without it): needs pipeline_engine \"megatron\"");
  if (optimizer_kernels == "megatron-fp16") {
    if (t.precision.master_weights <= 0)
      o.fail("optimizer_implementation", "megatron-fp16 updates fp32 master weights: needs precision amp or bf16_fp32_grads");
    if (t.sharding != Sharding::none && t.sharding != Sharding::zero1)
      o.fail("optimizer_implementation", "megatron-fp16 is modelled with schedule ddp or zero1");
    if (t.optimizer != plan::Optimizer::adam)
      o.fail("optimizer_implementation", "megatron-fp16 steps apex FusedAdam: needs optimizer adam or adamw");
    if (t.pipeline_engine == plan::PipelineEngine::deepspeed)
      o.fail("optimizer_implementation", "megatron-fp16 is Megatron's optimizer: DeepSpeed's pipeline engine steps its own");
    t.optimizer_implementation = plan::OptimizerImplementation::megatron_fp16;
  }
  t.gradient_wire_bytes = wire_bytes(o, "gradient_dtype");
  t.parameter_wire_bytes = wire_bytes(o, "parameter_dtype");
  t.gradient_buffers = read_gradient_buffers(o, t);
  t.deepspeed_step_work = o.boolean_or("deepspeed_step_work", false);
  if (t.deepspeed_step_work && t.gradient_buffers != plan::GradientBuffers::deepspeed_bf16_optimizer)
    o.fail("deepspeed_step_work",
           "is DeepSpeed's BF16_Optimizer under its pipeline engine: needs gradient_buffers \"deepspeed-bf16-optimizer\"");
  if (o.has("zero3_implementation")) {
    if (t.sharding != Sharding::zero3)
      o.fail("zero3_implementation", "only schedule zero3 has implementations to choose from");
    if (o.choice("zero3_implementation", {"fsdp", "deepspeed-0.3"}) == "deepspeed-0.3") {
      t.zero3_implementation = plan::Zero3Implementation::deepspeed_0_3;
      if (t.tp > 1) o.fail("zero3_implementation", "deepspeed-0.3 is modelled without tensor_parallel");
      if (t.shard_degree > 0) o.fail("zero3_implementation", "deepspeed-0.3 shards over every rank: no hybrid_shard_degree");
      if (t.checkpoint_policy == plan::CheckpointPolicy::selective_op)
        o.fail("zero3_implementation", "deepspeed-0.3 is modelled with full checkpointing only (checkpoint_policy selective_op)");
    }
  }
  t.allocator_tensor_requests = o.boolean_or("allocator_tensor_requests", false);
  if (t.allocator_tensor_requests) {
    // program/activation_allocations.hpp: where each layer's tensors live inside its own passes.
    if ((t.sharding != Sharding::fsdp && t.sharding != Sharding::zero3) ||
        t.zero3_implementation == plan::Zero3Implementation::deepspeed_0_3)
      o.fail("allocator_tensor_requests", "is modelled in the sharded schedule only (schedule fsdp, or zero3 as fsdp)");
    if (t.activation_checkpointing &&
        (t.checkpoint_policy != plan::CheckpointPolicy::full || t.activation_offloading || t.tp > 1))
      o.fail("allocator_tensor_requests",
             "is modelled without checkpointing or with full checkpointing, without activation_offloading or "
             "tensor_parallel (whose recompute is a task of its own)");
  }
  if (o.has("fsdp_implementation")) {
    if (t.sharding != Sharding::fsdp)
      o.fail("fsdp_implementation", "describes PyTorch FSDP's runtime: needs schedule fsdp");
    const std::string impl = o.choice("fsdp_implementation", {"generic", "torch-fsdp1", "torch-fsdp2"});
    t.fsdp_implementation = impl == "torch-fsdp1"   ? plan::FsdpImplementation::torch_fsdp1
                            : impl == "torch-fsdp2" ? plan::FsdpImplementation::torch_fsdp2
                                                    : plan::FsdpImplementation::generic;
  }
  // FullyShardedDataParallel's two prefetch arguments; FSDP2 and the generic runtime have neither.
  auto needs_fsdp1 = [&](const std::string& key) {
    if (t.fsdp_implementation != plan::FsdpImplementation::torch_fsdp1)
      o.fail(key, "an argument of PyTorch's FullyShardedDataParallel: needs schedule fsdp and "
                  "fsdp_implementation \"torch-fsdp1\"");
  };
  if (o.has("fsdp_backward_prefetch")) {
    needs_fsdp1("fsdp_backward_prefetch");
    const std::string mode = o.choice("fsdp_backward_prefetch", {"post", "pre", "none"});
    t.fsdp_backward_prefetch = mode == "pre"    ? plan::FsdpBackwardPrefetch::backward_pre
                               : mode == "none" ? plan::FsdpBackwardPrefetch::none
                                                : plan::FsdpBackwardPrefetch::backward_post;
  }
  if (o.has("fsdp_forward_prefetch")) {
    needs_fsdp1("fsdp_forward_prefetch");
    t.fsdp_forward_prefetch = o.boolean_or("fsdp_forward_prefetch", false);
  }
  if (o.has("fsdp_limit_all_gathers")) {
    needs_fsdp1("fsdp_limit_all_gathers");
    t.fsdp_limit_all_gathers = o.boolean_or("fsdp_limit_all_gathers", true);
  }
  if (o.has("fsdp_sharding_strategy")) {
    needs_fsdp1("fsdp_sharding_strategy");
    // With hybrid_shard_degree these are HYBRID_SHARD and _HYBRID_SHARD_ZERO2.
    if (o.choice("fsdp_sharding_strategy", {"full_shard", "shard_grad_op"}) == "shard_grad_op")
      t.fsdp_sharding_strategy = plan::FsdpShardingStrategy::shard_grad_op;
  }
  if (o.has("fsdp_pad_copy")) {
    needs_fsdp1("fsdp_pad_copy");
    if (o.choice("fsdp_pad_copy", {"always", "uneven"}) == "uneven") t.fsdp_pad_copy = plan::FsdpPadCopy::uneven;
  }
  // torchao's float8 under FSDP2 (torchao/float8/fsdp_utils.py): the linear weights' shards are
  // cast to FP8 before the all-gather (WeightWithDynamicFloat8CastTensor's fsdp_pre_all_gather),
  // with their scales from a per-step precomputation (precompute_float8_dynamic_scale_for_fsdp).
  t.fsdp_float8_all_gather = o.boolean_or("fsdp_float8_all_gather", false);
  t.float8_precomputed_scales = o.boolean_or("float8_precompute_scale", false);
  if (t.fsdp_float8_all_gather &&
      (t.linear_precision != plan::LinearPrecision::fp8 || t.fp8_implementation != plan::Fp8Implementation::torchao ||
       t.fsdp_implementation != plan::FsdpImplementation::torch_fsdp2))
    o.fail("fsdp_float8_all_gather", "torchao's FP8 all-gather of FSDP2: needs linear_precision \"fp8\", "
                                     "fp8_implementation \"torchao\", schedule fsdp and fsdp_implementation \"torch-fsdp2\"");
  if (t.float8_precomputed_scales && !t.fsdp_float8_all_gather)
    o.fail("float8_precompute_scale", "precomputes the scales of the FP8 all-gather's weights: needs "
                                      "fsdp_float8_all_gather true (torchao casts no other weight with them)");
  if (o.has("deepspeed_zero3")) {
    if (t.zero3_implementation != plan::Zero3Implementation::deepspeed_0_3)
      o.fail("deepspeed_zero3", "DeepSpeed's stage 3 settings need zero3_implementation \"deepspeed-0.3\"");
    JsonObject d = o.object("deepspeed_zero3");
    auto elements = [&](const std::string& key, double fallback) {
      const double v = d.number_or(key, fallback);
      if (!(v >= 0)) d.fail(key, "expected a non-negative number of elements");
      return v;
    };
    auto& c = t.deepspeed_zero3;
    c.prefetch_bucket_size = elements("stage3_prefetch_bucket_size", c.prefetch_bucket_size);
    c.max_live_parameters = elements("stage3_max_live_parameters", c.max_live_parameters);
    c.max_reuse_distance = elements("stage3_max_reuse_distance", c.max_reuse_distance);
    c.param_persistence_threshold = elements("stage3_param_persistence_threshold", c.param_persistence_threshold);
    c.reduce_bucket_size = elements("reduce_bucket_size", c.reduce_bucket_size);
    d.allow("note");
    d.finish();
  }
  if (t.cp > 1 && t.sharding == Sharding::fsdp) {
    // torchtitan's context parallelism: PyTorch's ring attention with FSDP2 over dp_shard x cp.
    if (t.fsdp_implementation != plan::FsdpImplementation::torch_fsdp2)
      o.fail("context_parallel", "with schedule fsdp is modelled as torchtitan runs it: needs fsdp_implementation "
                                 "\"torch-fsdp2\"");
    if (t.activation_offloading)
      o.fail("activation_offloading", "is not modelled with context_parallel under schedule fsdp");
    if (t.allocator_tensor_requests)
      o.fail("allocator_tensor_requests", "is not modelled with context_parallel (a ring pass's tensors)");
    if (t.composer_train_metrics > 0)
      o.fail("composer_train_metrics", "Composer's metric updates are not modelled with context_parallel");
    if (t.module_kernels == plan::ModuleKernels::mpt_flash || t.module_kernels == plan::ModuleKernels::hf_bert)
      o.fail("module_kernels", "this module's attention is not PyTorch's SDPA, which context_parallel replaces");
  }
  if (o.has("cp_comm_type")) {
    if (!(t.cp > 1 && t.sharding != Sharding::fsdp))
      o.fail("cp_comm_type", "says how Megatron-core's context parallelism exchanges: needs context_parallel > 1 "
                             "under schedule ddp or zero1");
    const std::string comm = o.choice("cp_comm_type", {"p2p", "a2a", "all_gather"});
    t.cp_comm = comm == "a2a" ? plan::CpCommType::a2a : comm == "all_gather" ? plan::CpCommType::all_gather
                                                                            : plan::CpCommType::p2p;
  }
  if (o.has("context_parallel_rotate_method")) {
    if (!(t.cp > 1 && t.sharding == Sharding::fsdp))
      o.fail("context_parallel_rotate_method", "says how PyTorch's ring attention moves K and V: needs "
                                               "context_parallel > 1 under schedule fsdp");
    t.cp_rotate = o.choice("context_parallel_rotate_method", {"allgather", "alltoall"}) == "alltoall"
                      ? plan::CpRotateMethod::alltoall
                      : plan::CpRotateMethod::allgather;
  }
  if (t.pp > 1 && t.sharding == Sharding::fsdp) {
    // FSDP inside each pipeline stage is modelled as torchtitan runs it (program/pipeline_schedule.hpp):
    // FSDP2's fully_shard, each stage's units gathered once per step and kept (reshard_after_forward
    // off under PP), their gradients reduce-scattered after the stage's last backward.
    if (t.fsdp_implementation != plan::FsdpImplementation::torch_fsdp2)
      o.fail("pipeline_parallel", "FSDP inside pipeline stages is modelled as torchtitan runs it: needs "
                                  "fsdp_implementation \"torch-fsdp2\"");
    if (t.overlap_grad_reduce)
      o.fail("overlap_grad_reduce", "FSDP inside pipeline stages reduces each unit after the stage's last backward "
                                    "(PyTorch's pipelining stage): needs overlap_grad_reduce false");
    if (t.pipeline_engine == plan::PipelineEngine::deepspeed)
      o.fail("pipeline_engine", "FSDP inside pipeline stages is torchtitan's (PyTorch's pipelining), not DeepSpeed's "
                                "pipeline engine: leave pipeline_engine \"megatron\", the default");
    if (t.fsdp_float8_all_gather)
      o.fail("fsdp_float8_all_gather", "is modelled in the sharded schedule only (schedule fsdp without pipeline_parallel)");
    if (t.allocator_tensor_requests)
      o.fail("allocator_tensor_requests", "is modelled in the sharded schedule only (schedule fsdp without pipeline_parallel)");
    if (t.composer_train_metrics > 0)
      o.fail("composer_train_metrics", "Composer's metric updates are modelled in the sharded schedule only "
                                       "(schedule fsdp without pipeline_parallel)");
  }
  if (t.pipeline == plan::PipelineSchedule::zero_bubble_h1 || t.pipeline == plan::PipelineSchedule::zero_bubble_v) {
    // ZB-H1 as the paper's Megatron-LM runs it (sail-sg/zero-bubble-pipeline-parallelism 95212f70,
    // schedules.py and weight_grad_store.py): plain layer passes, whose weight-gradient GEMMs a
    // stage may defer; the gradients are reduced after the flush.
    const std::string name = plan::pipeline_schedule_name(t.pipeline);
    auto unsupported = [&](const char* key, const char* what) {
      o.fail(key, "pipeline_schedule \"" + name + "\" is modelled without " + what);
    };
    // ZB-V as the paper's runtime runs it (678c9996 zb_schedules.py ZeroBubbleVPipeScheduler,
    // fused_pipeline_ops): every TP rank sends the whole stage tensor, no scatter/gather.
    if (t.pipeline == plan::PipelineSchedule::zero_bubble_v && t.tp > 1 && !t.sequence_parallel &&
        t.pipeline_scatter_gather)
      o.fail("pipeline_scatter_gather", "the ZB-V runtime has no scatter/gather of stage tensors: with "
                                        "tensor_parallel > 1 needs pipeline_scatter_gather false");
    if (t.pipeline == plan::PipelineSchedule::zero_bubble_v && t.overlap_param_gather)
      unsupported("overlap_param_gather", "overlap_param_gather");
    if (t.overlap_grad_reduce) unsupported("overlap_grad_reduce", "overlap_grad_reduce (the gradients are reduced after the flush)");
    if (t.sequence_parallel && t.tp > 1) unsupported("sequence_parallel", "sequence parallelism (the paper's first implementation has none)");
    if (t.cp > 1) unsupported("context_parallel", "context parallelism");
    if (t.megatron_step_syncs) unsupported("megatron_step_syncs", "Megatron-LM 2021's step synchronisations");
    if (t.sharding == Sharding::fsdp) unsupported("schedule", "FSDP inside the stages");
    if (t.activation_offloading) unsupported("activation_offloading", "activation offloading");
    if (t.defer_embedding_wgrad_compute) unsupported("defer_embedding_wgrad_compute", "a deferred output-layer weight gradient of its own");
    if (t.autograd_gradient_accumulation) unsupported("gradient_accumulation_add", "Megatron 2021's autograd accumulation");
    if (t.linear_precision == plan::LinearPrecision::fp8) unsupported("linear_precision", "FP8 linears (Transformer Engine's amax reduction per pass)");
  }
  o.allow("collectives");  // read_collectives
  o.allow("note");
  o.finish();
  return t;
}

collective::TunerOverride read_collectives(JsonObject training,
                                           const collective::CollectiveCalibration& cal) {
  using collective::Algorithm;
  using collective::Protocol;
  collective::TunerOverride force;
  if (!training.has("collectives")) return force;
  JsonObject o = training.object("collectives");
  if (cal.schema_version < 2 && (o.has("algorithm") || o.has("protocol")))
    training.fail("collectives", cal.library + " (" + cal.file +
                                     ") has fixed algorithms and no tuner to override");
  if (o.has("algorithm")) {
    const std::string name = o.choice("algorithm", {"ring", "tree", "nvls", "nvls_tree"});
    const Algorithm a = *collective::parse_algorithm(name);
    const bool offered = a == Algorithm::nvls_tree
                             ? cal.intra_fabric.allows(Algorithm::nvls) &&
                                   cal.inter_fabric.allows(Algorithm::tree)
                             : cal.intra_fabric.allows(a) || cal.inter_fabric.allows(a);
    if (!offered)
      o.fail("algorithm", "\"" + name + "\" is not offered by the fabrics of " + cal.file);
    force.algorithm = a;
  }
  if (o.has("protocol")) {
    const std::string name = o.choice("protocol", {"LL", "LL128", "Simple"});
    const Protocol p = *collective::parse_protocol(name);
    if (!cal.intra_fabric.allows(p) && !cal.inter_fabric.allows(p))
      o.fail("protocol", "\"" + name + "\" is not enabled on the fabrics of " + cal.file);
    force.protocol = p;
  }
  o.allow("sm_sharing");   // read_sm_sharing
  o.allow("hbm_sharing");  // read_hbm_sharing
  o.allow("note");
  o.finish();
  return force;
}

namespace {

/// A boolean switch of training.collectives [true]; the object's other keys are read elsewhere.
bool read_collectives_switch(JsonObject training, const std::string& key) {
  if (!training.has("collectives")) return true;
  JsonObject o = training.object("collectives");
  const bool on = o.boolean_or(key, true);
  for (const char* other : {"algorithm", "protocol", "note", "sm_sharing", "hbm_sharing"})
    if (key != other) o.allow(other);
  o.finish();
  return on;
}

}  // namespace

bool read_sm_sharing(JsonObject training) { return read_collectives_switch(std::move(training), "sm_sharing"); }

bool read_hbm_sharing(JsonObject training) { return read_collectives_switch(std::move(training), "hbm_sharing"); }

}  // namespace trainsim::scenario

#pragma once
// How a model is trained: the parallel layout (data, tensor, pipeline degrees and how state is
// sharded), the numerics (precision recipe, optimizer) and the memory-saving techniques. Plain
// data shared by the memory model and the schedules; read from a scenario's "training" object.
#include <cmath>
#include <string>

#include "plan/gradient_state.hpp"

namespace trainsim::plan {

/// Who holds which part of the training state across the data-parallel ranks.
enum class Sharding {
  none,   ///< DDP / SMDDP: every rank holds everything
  zero1,  ///< optimizer states (and fp32 master copies) sharded
  zero2,  ///< + gradients sharded
  zero3,  ///< + parameters sharded, gathered per layer when used (DeepSpeed ZeRO-3)
  fsdp,   ///< PyTorch FSDP: as zero3, shard group = hybrid_shard_degree (full: all DP ranks)
};

/// Bytes per parameter of each copy of the training state, before sharding.
struct PrecisionRecipe {
  std::string name;
  double weights = 2;           ///< working-precision parameters (what the kernels read)
  double gradients = 2;         ///< working-precision gradients
  double master_weights = 4;    ///< fp32 copy the optimizer updates (0 when weights are fp32)
  double master_gradients = 4;  ///< fp32 gradient copy the optimizer reads
  bool weights_resident = true;  ///< false: working weights exist only while a unit is in use
};

enum class Optimizer { adam, sgd_momentum, sgd };
/// Optimizer state bytes per parameter with each state element `element_bytes` wide (fp32: 4):
/// Adam's two moments 2 x, momentum 1 x, plain SGD none.
[[nodiscard]] double optimizer_state_bytes(Optimizer o, double element_bytes = 4);

/// zero_bubble_h1: ZB-H1 (Qi et al., ICLR 2024), 1F1B with each backward split into its input
/// gradient (B, on the critical path) and its weight gradient (W), the W of a stage's first
/// backwards deferred into the cool-down's bubble (program/pipeline_schedule.hpp).
/// zero_bubble_v: ZB-V (the same paper): two model chunks per stage placed in a V (stage s holds
/// virtual stages s and 2pp - 1 - s, so the first stage holds both ends of the model), the
/// backwards split as in ZB-H1, the order computed from the passes' costs (program/zero_bubble_v.hpp).
enum class PipelineSchedule { gpipe, one_f_one_b, interleaved, zero_bubble_h1, zero_bubble_v };
/// Whose code runs a pipeline stage's schedule: Megatron-LM's forward_backward_pipelining (its
/// batched exchanges, program/pipeline_exchanges.hpp) or DeepSpeed's PipelineEngine running its
/// TrainSchedule one blocking instruction at a time (BLOOM's Megatron-DeepSpeed).
enum class PipelineEngine { megatron, deepspeed };

/// PyTorch's context-parallel K/V rotation (torch.distributed.tensor.experimental._attention
/// _RotateMethod): all-gather once per pass, or all-to-all (a ring exchange) every step.
enum class CpRotateMethod { allgather, alltoall };

/// Megatron-core's cp_comm_type (Transformer Engine's context-parallel attention): "p2p"
/// (AttnFuncWithCPAndKVP2P), "a2a" (AttnFuncWithCPAndQKVOA2A, DeepSpeed-Ulysses' exchange) or
/// "all_gather" (AttnFuncWithCPAndKVAllGather, the Llama 3 paper's).
enum class CpCommType { p2p, a2a, all_gather };

/// How finely tp_comm_overlap's userbuffers passes are simulated (program/tp_comm_overlap.hpp).
/// per_step: each ring step and each chunk's reduce-scatter its own call, each GEMM chunk its own
/// task; coarse: a ring's TP - 1 steps one call (repeated), beside one task for the GEMM chunks
/// they overlap, then the last chunk; the same for a pipelined reduce-scatter. The two give the
/// same time where nothing else contends for the links or SMs; coarse runs a few times fewer
/// activities.
enum class TpOverlapModel { coarse, per_step };

/// How a pipeline's stages split the transformer layers.
enum class PipelinePartition {
  uniform,  ///< layers / pp each, the remainder on the first stages (Megatron's even split)
  /// DeepSpeed's partition_method "type:transformer|embedding": the embedding and the tied output
  /// embedding each weigh as one layer, so the end stages hold one transformer layer fewer
  /// (BLOOM-176B: 5 + embedding, 6 x 10, 5 + embedding over 12 stages).
  transformer_and_embedding,
};

/// What activation checkpointing keeps of a layer (model/checkpointing.hpp has the policies).
enum class CheckpointPolicy {
  full,          ///< the layer input only; the backward re-runs the whole forward
  selective_op,  ///< torchtitan's op policy: also the attention output and every other matmul's
  /// Megatron's selective recomputation: everything but the core attention's s x s tensors; the
  /// backward re-runs the core attention only
  selective_attention,
};

/// How a ZeRO-3 schedule gathers parameters and reduces gradients.
enum class Zero3Implementation {
  fsdp,           ///< per-unit gathers ahead of compute, reduce-scatter per unit (sharded_schedule)
  deepspeed_0_3,  ///< DeepSpeed v0.3.12 - v0.4.2 stage3.py (deepspeed_zero3_schedule.hpp)
};

/// How the FSDP runtime orders its collectives and which unit it keeps gathered.
enum class FsdpImplementation {
  /// Every unit (embedding, layers, head) gathered before its forward and again before its
  /// backward; gathers and reduce-scatters on streams of their own, running concurrently.
  generic,
  /// PyTorch's FullyShardedDataParallel (FSDP1; read at 1.13, fully_sharded_data_parallel.py):
  /// the embedding and head are the root unit, which forward() does not reshard (so it is
  /// gathered once per micro-batch, before the embedding, and not again in backward); and one
  /// process group's collectives run on ProcessGroupNCCL's one stream per device, in the order
  /// the host issues them (the post-backward hook prefetches unit k-1's gather before it issues
  /// unit k's reduce-scatter).
  torch_fsdp1,
  /// PyTorch's fully_shard (FSDP2, torchtitan): the same two in the schedule. Its root state does
  /// not reshard after forward either (_fsdp_state.py _lazy_init: "For the root, do not reshard
  /// after forward"), all-gathers and reduce-scatters share the shard process group's NCCL
  /// communicator (pytorch/pytorch#186335: "one NCCL communicator, which processes one
  /// collective at a time and so serializes them"), and its pre-backward prefetch of unit k-1,
  /// issued before unit k's reduce-scatter, lands in the same stream order. Memory: the generic
  /// terms (FSDP2's reduce-scatter copy-in buffer is not FSDP1's cast and pad; not read).
  torch_fsdp2,
};

/// When PyTorch FSDP1 issues the all-gather of the unit next in the backward (FullyShardedDataParallel's
/// backward_prefetch; _runtime_utils.py _get_handles_to_prefetch, read at pytorch/pytorch 00ae0bc91,
/// the 2.0 line, the one copy at hand; ASSUMED unchanged at v2.1.0, where it is _get_handle_to_prefetch).
enum class FsdpBackwardPrefetch {
  /// BACKWARD_POST (the default of Composer and so llm-foundry): in unit k's _post_backward_hook,
  /// after k is resharded and before k's reduce-scatter is issued.
  backward_post,
  /// BACKWARD_PRE: in unit k's _pre_backward_hook, before k's gradient computation is issued;
  /// k itself is still gathered, so one more unit can be in flight.
  backward_pre,
  /// None: each unit gathers itself in its own pre-backward hook, after the unit before's
  /// reduce-scatter was issued on the same stream.
  none,
};

/// FullyShardedDataParallel's sharding_strategy (torch-fsdp1): whether a unit's gathered
/// parameters are freed after its forward. Read at pytorch/pytorch 00ae0bc91 (the 2.0 line, the
/// one whole copy at hand; the stored 2.x copies read the same): _runtime_utils.py
/// _post_forward_reshard frees a non-root unit only if its strategy is in
/// RESHARD_AFTER_FORWARD_HANDLE_STRATEGIES (FULL_SHARD, HYBRID_SHARD), and _should_free_in_backward
/// frees it in the post-backward hook when gradients are synchronised (every micro-batch under
/// Composer, which runs FSDP without no_sync) or the strategy reshards after forward.
enum class FsdpShardingStrategy {
  /// FULL_SHARD (HYBRID_SHARD with hybrid_shard_degree): freed after the forward, gathered again
  /// before the backward.
  full_shard,
  /// SHARD_GRAD_OP (_HYBRID_SHARD_ZERO2 with hybrid_shard_degree): kept from the forward's
  /// gather to the unit's post-backward hook, so one all-gather per unit and micro-batch; every
  /// unit's parameters are gathered at once between the end of the forward and the backward.
  shard_grad_op,
};

/// Which unsharded gradients PyTorch FSDP1's post-backward hook copies with F.pad before the
/// reduce-scatter (torch-fsdp1). The reduce-dtype cast, when the reduce dtype differs from the
/// compute dtype (Composer's mixed_precision DEFAULT: bf16 gradients reduced in fp32), is made
/// in both: the pad copy comes on top of it.
enum class FsdpPadCopy {
  /// PyTorch 1.13: _post_backward_hook always calls F.pad(grad.flatten(), [0, num_pad]), which
  /// copies the gradient even when num_pad is 0.
  always,
  /// PyTorch 2.0 and later (pytorch/pytorch#88769, merged 2022-11-10; _runtime_utils.py
  /// _post_backward_hook at 00ae0bc91, the 2.0 line; ASSUMED unchanged at v2.1.0): F.pad only for
  /// a unit whose numel is not a multiple of the shard count, else the reduce-scatter reads the
  /// (cast) gradient itself.
  uneven,
};

/// Whether FSDP1's post-backward hook copies a unit's `numel`-element gradient with F.pad before
/// reduce-scattering it over `shard` ranks.
[[nodiscard]] inline bool fsdp_pads(FsdpPadCopy mode, double numel, long shard) {
  return mode == FsdpPadCopy::always || std::fmod(numel, static_cast<double>(shard)) != 0;
}

/// Whether the FSDP runtime keeps the root unit and runs one NCCL stream (torch_fsdp1/2).
[[nodiscard]] inline bool torch_fsdp(FsdpImplementation f) {
  return f == FsdpImplementation::torch_fsdp1 || f == FsdpImplementation::torch_fsdp2;
}

/// DeepSpeed ZeRO-3 knobs of the "zero_optimization" config, defaults as the code of v0.3.13
/// (deepspeed/runtime/zero/constants.py; its config-json docs list other values, the code wins
/// when a config leaves them out). Elements, not bytes.
struct DeepSpeedZero3Config {
  double prefetch_bucket_size = 5e7;          ///< stage3_prefetch_bucket_size
  double max_live_parameters = 1e9;           ///< stage3_max_live_parameters
  double max_reuse_distance = 1e9;            ///< stage3_max_reuse_distance
  double param_persistence_threshold = 1e5;   ///< stage3_param_persistence_threshold
  double reduce_bucket_size = 5e8;            ///< reduce_bucket_size
};

/// How the optimizer step runs over a rank's parameters.
enum class OptimizerImplementation {
  fused,          ///< one fused pass (fp32 master weights, moments, low-precision copy)
  megatron_fp16,  ///< Megatron-LM 2021's Float16OptimizerWithFloat16Params: five passes, two
                  ///< scalar all-reduces over the model-parallel group
  torch_foreach,  ///< torch.optim's foreach AdamW: eight multi-tensor passes (fp32 states)
};

/// Which framework's module code runs around a layer's GEMMs: model::ModuleKernels, whose
/// comments say what each runs (the plan layer does not include the model layer).
enum class ModuleKernels { fused, megatron, mpt, mpt_flash, torch_layer, hf_bert };

/// Whose training loop runs between a step's last backward and the next forward (model/
/// hf_trainer_step.hpp): none modelled (the schedule's own optimizer step), Hugging Face's
/// Trainer at transformers 4.21.1, or optimum-habana's GaudiTrainer at 89e505a.
enum class TrainingLoop { none, hf_trainer_4_21, optimum_habana_89e505a };

/// What the linear projections' GEMMs compute in (model/fp8_linear.hpp).
enum class LinearPrecision { bf16, fp8 };
/// Whose FP8 linear layers: Transformer Engine's (delayed scaling, FP8 weights kept across the
/// micro-batches of a step; NeMo, Megatron-LM) or torchao's float8 (dynamic tensorwise scaling,
/// weights cast at every forward; torchtitan).
enum class Fp8Implementation { transformer_engine, torchao };

struct TrainingPlan {
  Sharding sharding = Sharding::none;
  /// FSDP/ZeRO shard group size. 0 = the whole data-parallel group (full sharding); for FSDP
  /// hybrid sharding, SMP v2's hybrid_shard_degree.
  long shard_degree = 0;
  long tp = 1;                       ///< tensor-parallel degree
  bool sequence_parallel = false;
  /// Transformer Engine's userbuffers overlap (tp_comm_overlap; PTD-P with sequence parallelism):
  /// the sequence-parallel gathers and scatters around the linear projections run in chunks
  /// beside the GEMMs they feed or drain (program/tp_comm_overlap.hpp).
  bool tp_comm_overlap = false;
  TpOverlapModel tp_overlap_model = TpOverlapModel::coarse;
  /// With tp_comm_overlap and Transformer Engine's FP8: the output projection's and the second
  /// MLP linear's pipelined reduce-scatters move FP8 chunks (TE's `fp8_buf` on proj_fprop /
  /// fc2_fprop, which initialize_ub honours for those two only; the all-gather userbuffers are
  /// FP8 whenever FP8 is on, the others bf16: program/tp_comm_overlap.hpp).
  bool tp_overlap_fp8_proj_scatter = false;
  bool tp_overlap_fp8_fc2_scatter = false;
  long pp = 1;                       ///< pipeline-parallel degree (stages)
  /// Context parallelism (Megatron-core's context_parallel_size, Transformer Engine's ring
  /// attention; under schedule fsdp torchtitan's, PyTorch's ring attention): each rank of a CP
  /// group holds 1/cp of every sequence (program/context_parallel.hpp, torch_ring_attention.hpp).
  long cp = 1;
  /// How PyTorch's ring attention (schedule fsdp with cp > 1) moves K and V: one all-gather per
  /// pass (torchtitan's default, "allgather") or a ring of exchanges ("alltoall").
  CpRotateMethod cp_rotate = CpRotateMethod::allgather;
  /// How Megatron-core's CP (Transformer Engine) exchanges: the K, V ring ("p2p") or all-to-alls
  /// of Q, K, V and O around an attention over the whole sequence on 1/cp of the heads ("a2a").
  CpCommType cp_comm = CpCommType::p2p;
  PipelineSchedule pipeline = PipelineSchedule::one_f_one_b;
  PipelineEngine pipeline_engine = PipelineEngine::megatron;
  long virtual_stages = 1;           ///< model chunks per stage (interleaved 1F1B: v; ZB-V: 2)
  PipelinePartition partition = PipelinePartition::uniform;
  PrecisionRecipe precision;
  /// The linear projections in FP8 ("linear_precision": "fp8"); the master weights, gradients and
  /// optimizer states stay as `precision` says, and model FLOPs are counted as in bf16.
  LinearPrecision linear_precision = LinearPrecision::bf16;
  Fp8Implementation fp8_implementation = Fp8Implementation::transformer_engine;
  /// torchao float8 under FSDP2 (enable_fsdp_float8_all_gather): the linear weights are cast to
  /// FP8 on their shards and all-gathered at 1 byte per parameter; the forward casts none.
  bool fsdp_float8_all_gather = false;
  /// With it, precompute_float8_dynamic_scale_for_fsdp after the optimizer step: one amax pass
  /// over the shards and one all-reduce of the stacked amaxes per step instead of an amax and a
  /// scalar all-reduce per weight at every gather.
  bool float8_precomputed_scales = false;
  Optimizer optimizer = Optimizer::adam;
  /// Bytes of one optimizer state element: 4 (fp32), or 2 where Apex's DistributedFusedAdam runs
  /// with dtype bf16 (its moments and its parameter copy in bf16; optimizer_state_dtype).
  double optimizer_state_element_bytes = 4;
  long micro_batch = 1;              ///< sequences per micro-batch per model replica
  long accumulation = 1;             ///< micro-batches per optimizer step (pipeline: in flight)
  bool activation_checkpointing = false;  ///< keep only layer inputs; recompute in backward
  /// What a checkpointed layer keeps (model/checkpointing.hpp): its input only (full) or, with
  /// torchtitan's selective op policy, also the attention output and every other matmul's.
  CheckpointPolicy checkpoint_policy = CheckpointPolicy::full;
  bool activation_offloading = false;     ///< checkpointed inputs live in host memory
  bool flash_attention = false;
  /// Which of the device profile's fused attention kernels runs ("flash-attn-triton"); empty:
  /// the profile's default.
  std::string attention_kernel;
  /// A fused cross-entropy kernel (e.g. flash-attn's, llm-foundry's default loss) keeps the bf16
  /// logits; otherwise the loss upcasts them to fp32.
  bool fused_cross_entropy = false;
  /// With fused_cross_entropy: its backward writes the logits' gradient over the logits (flash-attn's
  /// CrossEntropyLoss(inplace_backward=True)), or into a new bf16 tensor of their size (false).
  bool fused_cross_entropy_inplace = true;
  /// The layers run as eager PyTorch module code, each tensor op its own kernel (torchtitan
  /// without torch.compile, Hugging Face): model::LayerShape::eager. false: fused kernels.
  bool eager_kernels = false;
  /// An eager framework's host thread issues each kernel (model/host_dispatch.hpp), at the device
  /// profile's eager_kernel_issue per kernel. false: CUDA graphs or torch.compile's
  /// reduce-overhead mode replay the kernels without the host (not modelled then).
  bool host_dispatch = true;
  /// CUDA_LAUNCH_BLOCKING=1 in the job's environment: every kernel launch (NCCL's included) returns
  /// only when the kernel has finished (program::Program::launch_blocking). Needs host_dispatch.
  bool cuda_launch_blocking = false;
  /// PyTorch's caching allocator, followed along the timeline (memory/caching_allocator.hpp),
  /// stalls the stream whose request makes it free its cache and retry, by the device profile's
  /// allocator_retry + allocator_retry_per_gb. false: retries are counted, not timed.
  bool allocator_retry_stalls = false;
  /// The allocator's requests at the host's issue of the task that makes each buffer, as PyTorch
  /// makes them (engine::ExecuteOptions::allocate_at_host_issue); false: at the device's start.
  bool allocator_host_issue = false;
  /// The caching allocator sees each tensor a sharded schedule's pass saves, recomputes or holds
  /// as its own request (program/activation_allocations.hpp); false: one block per micro-batch's
  /// activations and one per pass's workspace.
  bool allocator_tensor_requests = false;
  /// The framework's module code around the GEMMs (model::ModuleKernels, same names): bias-gradient
  /// reductions, the QKV split's gradient, layout copies. "fused": none.
  ModuleKernels module_kernels = ModuleKernels::fused;
  double bucket_elements = 0;        ///< gradient communication bucket (elements)
  /// PTD-P: reduce each model chunk's gradients in buckets during its last micro-batch's
  /// backward (Megatron's overlap_grad_reduce, SMP v1) instead of after the pipeline flush
  /// (DeepSpeed's pipeline engine, Megatron 2021). Bucket size bucket_elements, 0 = per layer.
  bool overlap_grad_reduce = false;
  /// PTD-P with ZeRO-1: the updated parameters are all-gathered bucket by bucket during the
  /// next step's first forward of each model chunk instead of after the optimizer (Megatron's
  /// distributed optimizer with overlap_param_gather; needs overlap_grad_reduce, as Megatron).
  bool overlap_param_gather = false;
  /// Megatron-core's overlap_param_gather_with_optimizer_step (interleaved PTD-P with
  /// overlap_param_gather): the optimizer steps model chunk 0's shard first and dispatches that
  /// chunk's parameter all-gather (one bucket: its DDP buffer is unbucketed) at once, so it runs
  /// beside the step of the other chunks instead of opening the next step's forward.
  bool overlap_param_gather_with_optimizer_step = false;
  /// PTD-P: how a micro-batch's weight gradients join the ones of the micro-batches before it.
  /// false: Megatron's gradient_accumulation_fusion (on by default from 2022; Megatron-core): the
  /// linear layers' weight-gradient GEMMs accumulate into the gradient buffer, no pass of their
  /// own (the hook's add for the norms' and biases' few parameters is left out). true: PyTorch's
  /// AccumulateGrad, as Megatron 2021 ran (no fusion, no contiguous buffer): every micro-batch
  /// after a model chunk's first adds each gradient into the parameter's .grad, in place, in the
  /// gradient dtype, inside the backward.
  bool autograd_gradient_accumulation = false;
  /// Megatron-core's defer_embedding_wgrad_compute (PTD-P): the output layer's weight-gradient
  /// GEMM of the first wgrad_deferral_limit micro-batches (0: all of them) leaves their backward
  /// and runs on the last stage after its last backward, before the gradients are finalised.
  bool defer_embedding_wgrad_compute = false;
  long wgrad_deferral_limit = 0;
  /// ZeRO-1 under a pipeline: all-reduce the gradients over the shard group instead of
  /// reduce-scattering them, each rank then updating its shard and all-gathering the parameters.
  /// DeepSpeed's BF16_Optimizer (v0.6.2+, BLOOM's "ZeRO-1 equivalent") does this: the pipeline
  /// engine's _bf16_reduce_grads runs buffered_allreduce_fallback over the fp32 gradients.
  bool zero1_gradient_all_reduce = false;
  /// PTD-P with TP and without SP: each TP rank sends 1/tp of a stage boundary's tensor and the
  /// receiving stage all-gathers it over TP (Megatron's scatter/gather optimisation, on by
  /// default in 2021: --no-scatter-gather-tensors-in-pipeline turns it off).
  bool pipeline_scatter_gather = true;
  /// Megatron-core's overlap_p2p_comm (interleaved schedule, batch_p2p_comm off): the stage
  /// exchanges are isend/irecv left in flight, each waited for by the compute stream where its
  /// tensor is needed, with no torch.cuda.synchronize (program/pipeline_exchanges.hpp).
  bool overlap_p2p_comm = false;
  /// Transformer Engine's FP8 amax reduction over the TP group only (Megatron-core's
  /// tp_only_amax_red); otherwise over the stage's TP x DP group (model/fp8_amax_reduction.hpp).
  bool fp8_amax_tp_only = false;
  OptimizerImplementation optimizer_implementation = OptimizerImplementation::fused;
  /// Whose optimizer code holds the gradients, and so which copies of them a rank keeps
  /// (plan/gradient_state.hpp).
  GradientBuffers gradient_buffers = GradientBuffers::generic;
  /// torch.nn.utils.clip_grad_norm_ before the optimizer step: a foreach norm of the rank's
  /// gradients and a scale pass that runs every step (model::torch_clip_grad_norm_ops).
  bool clip_grad_norm = false;
  /// Composer's training metrics on the logits, updated after each micro-batch's backward
  /// (model/composer_metrics.hpp): how many cross-entropy updates (LanguageCrossEntropy,
  /// LanguagePerplexity) run per micro-batch. Modelled in the sharded schedule.
  int composer_train_metrics = 0;
  /// Whether those updates run under torch.autocast(bf16) (Composer's amp_bf16), where nll_loss
  /// casts the log-probabilities to fp32, or not (amp_fp8: Transformer Engine's fp8_autocast only).
  bool composer_train_metrics_autocast = true;
  /// Composer's per-batch metric sync after the optimizer step (model/composer_metric_sync.hpp):
  /// every train metric's compute() gathers its states across the world, O(world) host calls
  /// while the device waits. Modelled in the sharded schedule, needs composer_train_metrics.
  bool composer_metric_sync = false;
  /// Megatron-LM 2021-2022's synchronisations outside the model (Megatron-LM 6985e58 and
  /// 2e90a342): its timers' torch.cuda.synchronize() at the start and stop of every pass and
  /// step phase, get_batch's broadcast of each micro-batch over TP with its .cpu(), and the loss
  /// all-reduce over the data-parallel group after each last-stage forward. Modelled in the
  /// PTD-P schedule (program/pipeline_schedule.cpp).
  bool megatron_step_syncs = false;
  /// Megatron-LM's pipeline schedules before deallocate_output_tensor (NVIDIA/Megatron-LM
  /// 86da10e9d9, 2021-12-07) keep every in-flight forward's stage output in output_tensors until
  /// its backward (6985e58 megatron/schedules.py:207, 409, 436): b x s x h in the working dtype
  /// per micro-batch (per model chunk when interleaved) beside what autograd saves. Megatron's
  /// pipeline engine only; memory/rank_memory.cpp.
  bool pipeline_outputs_kept = false;
  /// The framework's training loop around the optimizer step (training.trainer): its read-backs,
  /// gradient clipping, optimizer and zeroing as that loop runs them. Modelled in the DDP schedule.
  TrainingLoop trainer = TrainingLoop::none;
  /// DeepSpeed's per-step passes around its BF16_Optimizer under the pipeline engine (v0.6.2):
  /// allreduce_bucket's cast of the fp32 gradients to the wire dtype before the data-parallel
  /// all-reduce, its scale and copy back after it, and clear_hp_grads' zeroing of the fp32
  /// gradients after the step. Needs gradient_buffers deepspeed_bf16_optimizer.
  bool deepspeed_step_work = false;
  double gradient_wire_bytes = 2;    ///< bytes per gradient element on the wire
  double parameter_wire_bytes = 2;   ///< bytes per parameter element all-gathered
  Zero3Implementation zero3_implementation = Zero3Implementation::fsdp;  ///< schedule zero3 only
  FsdpImplementation fsdp_implementation = FsdpImplementation::generic;  ///< schedule fsdp only
  /// torch-fsdp1 only: FullyShardedDataParallel(backward_prefetch=...).
  FsdpBackwardPrefetch fsdp_backward_prefetch = FsdpBackwardPrefetch::backward_post;
  /// torch-fsdp1 only: FullyShardedDataParallel(forward_prefetch=True): _pre_forward_unshard issues
  /// the next unit's all-gather before the current unit's forward is issued.
  bool fsdp_forward_prefetch = false;
  /// torch-fsdp1 only: FullyShardedDataParallel(limit_all_gathers=...), the rate limiter. true: the
  /// host waits for the free event of the unit two back before it issues a gather (sharded_schedule.hpp);
  /// false: nothing bounds the gathers but the gather stream's order, and the host issues them,
  /// and so requests their memory, as far ahead of the device as it runs.
  bool fsdp_limit_all_gathers = true;
  /// torch-fsdp1 only: FullyShardedDataParallel(sharding_strategy=...).
  FsdpShardingStrategy fsdp_sharding_strategy = FsdpShardingStrategy::full_shard;
  /// torch-fsdp1 only: the PyTorch version's pad copy of each unsharded gradient.
  FsdpPadCopy fsdp_pad_copy = FsdpPadCopy::always;
  DeepSpeedZero3Config deepspeed_zero3;  ///< zero3_implementation deepspeed_0_3 only
};

/// Degrees of one concrete job: world = dp x cp x tp x pp.
struct Layout {
  long world = 1;
  long ranks_per_node = 1;
  long dp = 1;     ///< data-parallel degree, context parallelism not included
  long shard = 1;  ///< ranks one copy of the sharded state is spread over (1 = unsharded)
  long cp = 1;     ///< context-parallel degree: world = dp x cp x tp x pp
};

/// What a rank of a context-parallel job is to the gradient and optimizer collectives: one member
/// of the data-parallel x context-parallel group (Megatron-core's data_parallel_group with
/// with_context_parallel=True, which reduces the gradients and shards the distributed optimizer),
/// ranks in Megatron's order (tensor, context, data, pipeline: a CP index is the fastest part of
/// the combined index). A hybrid shard group (FSDP under torchtitan: dp_shard x cp) takes its
/// DP ranks' CP ranks too. Identity when cp = 1.
[[nodiscard]] Layout context_parallel_rank_layout(const Layout& layout);

/// The named precision recipes: "amp" (fp16/bf16 AMP with fp32 master weights and gradient copy:
/// 2+2+4+4 = 12 bytes plus the optimizer's, source 002's 20 with Adam), "fp32" (4+4), "fsdp_mixed"
/// (FSDP MixedPrecision: sharded fp32 parameters and gradients, bf16 working copies only while a
/// unit is gathered: 4+4 resident), "bf16_fp32_grads" (Megatron: bf16 weights, fp32 main
/// gradients and master: 2+4+4). Empty optional for an unknown name.
[[nodiscard]] bool precision_recipe(const std::string& name, PrecisionRecipe& out);
[[nodiscard]] const char* sharding_name(Sharding s);
/// As a scenario's training.pipeline_schedule writes it: gpipe, 1f1b, interleaved, zb-h1, zb-v.
[[nodiscard]] const char* pipeline_schedule_name(PipelineSchedule s);
/// As a scenario's training.checkpoint_policy writes it: full, selective_op, selective_attention.
[[nodiscard]] const char* checkpoint_policy_name(CheckpointPolicy p);
/// Bytes per linear-layer parameter of the FP8 weight copies a rank holds: Transformer Engine's
/// weight_fp8 and weight_t_fp8 buffers, kept across the step (2); torchao's FP8 weight, saved by
/// each layer's forward for its backward (1).
[[nodiscard]] double fp8_weight_copy_bytes(Fp8Implementation f);

/// Transformer layers that pipeline stage `stage` of `plan` holds (all its virtual stages).
[[nodiscard]] long layers_of_stage(const TrainingPlan& plan, long layers, long stage);

/// The virtual stage (place in the model's order of chunks) of model chunk `chunk` of stage
/// `stage`: chunk x pp + stage (Megatron's interleaving), or for ZB-V's V stage, then 2pp - 1 - stage.
[[nodiscard]] long virtual_stage_of(const TrainingPlan& plan, long stage, long chunk);
/// The pipeline stage holding virtual stage `virtual_stage` (virtual_stage_of's inverse).
[[nodiscard]] long stage_of_virtual(const TrainingPlan& plan, long virtual_stage);
/// The stage holding the output layer and the loss: the last, or under ZB-V the first.
[[nodiscard]] long head_stage(const TrainingPlan& plan);

/// Transformer layers of model chunk `chunk` of stage `stage` (at virtual_stage_of(stage, chunk)).
/// Uniform: layers / (pp x v). transformer_and_embedding: layers + 2 units over the virtual
/// stages, the first and the last giving one up for the embedding and the head (with one layer
/// per chunk those two hold none: the zero-bubble paper's interleaved runs).
[[nodiscard]] long layers_of_chunk(const TrainingPlan& plan, long layers, long stage, long chunk);

/// FSDP2 inside pipeline stages, as torchtitan runs it (program/pipeline_schedule.hpp): the one
/// FSDP the PTD-P schedule runs.
[[nodiscard]] inline bool fsdp_inside_pipeline_stages(const TrainingPlan& p) {
  return p.sharding == Sharding::fsdp && p.pp > 1 && p.fsdp_implementation == FsdpImplementation::torch_fsdp2;
}

/// Derives the layout of `plan` on `world` ranks; throws std::invalid_argument with a message
/// naming the degree that does not divide.
[[nodiscard]] Layout layout_of(const TrainingPlan& plan, long world, long ranks_per_node);

}  // namespace trainsim::plan

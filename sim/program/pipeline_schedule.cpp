#include "program/pipeline_schedule.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>

#include "core/error.hpp"
#include "model/checkpointing.hpp"
#include "model/compute_cost.hpp"
#include "plan/gradient_state.hpp"
#include "model/fp8_amax_reduction.hpp"
#include "program/context_parallel.hpp"
#include "program/torch_ring_attention.hpp"
#include "program/pipeline_exchanges.hpp"
#include "program/tp_comm_overlap.hpp"

namespace trainsim::program {

namespace {

using model::ops_duration;

/// Megatron's mapping of the k-th forward (or backward) slot of an interleaved stage to its
/// (micro-batch, chunk): groups of pp micro-batches go through chunk 0, then chunk 1, ...
PipelineSlot interleaved_slot(long k, long pp, long chunks, bool forward) {
  const long group = k / (pp * chunks);
  long chunk = (k / pp) % chunks;
  if (!forward) chunk = chunks - 1 - chunk;
  return {group * pp + k % pp, chunk, forward};
}

/// Where a rank finds its call at one collective task: which of its groups, and what the call is
/// if the rank is the first member to get there. A stage's first rank records these in the order
/// it asks; the stage's other ranks, which share its body, replay them for their own groups.
struct CallRequest {
  enum class Group : std::uint8_t { tensor, point_to_point, shard, replica, embedding, model_parallel, amax, context };
  Group group = Group::tensor;
  InternedName name;
  collective::Op op = collective::Op::all_reduce;
  Bytes size = 0;
  int backward = 0;          ///< point to point: a gradient (1) or an activation (0)
  long boundary = 0;         ///< point to point: virtual stage boundary
  long micro_batch = 0;      ///< point to point
  int repeat = 1;            ///< CollectiveCall::repeat
};

/// One rank's place in the sequences of calls its groups make.
struct RankCalls {
  long d = 0, t = 0;
  std::size_t tensor = 0, shard = 0, replica = 0, model_parallel = 0, amax = 0, context = 0;
};

Program build_pipeline(const ScheduleInputs& in, bool share);

}  // namespace

std::vector<PipelineSlot> pipeline_order(plan::PipelineSchedule schedule, long pp, long stage,
                                         long m, long chunks) {
  std::vector<PipelineSlot> order;
  if (schedule == plan::PipelineSchedule::gpipe) {
    for (long b = 0; b < m; ++b) order.push_back({b, 0, true});
    for (long b = 0; b < m; ++b) order.push_back({b, 0, false});
    return order;
  }
  if (schedule == plan::PipelineSchedule::zero_bubble_h1) {
    // The quick ZB-H1 of 95212f70 (the header): the first stage never splits.
    using Part = PipelineSlot::Part;
    const long warmup = std::min(pp - stage - 1, m), remaining = m - warmup;
    const bool splits = stage > 0;
    std::vector<long> queued;  // micro-batches whose W waits, oldest first (WeightGradStore's queue)
    std::size_t next_w = 0;
    auto pop = [&] {
      if (next_w < queued.size()) order.push_back({queued[next_w++], 0, false, Part::weight});
    };
    for (long b = 0; b < warmup; ++b) order.push_back({b, 0, true});
    for (long i = 0; i < remaining; ++i) {
      order.push_back({warmup + i, 0, true});
      const bool last_iteration = i == remaining - 1;
      const bool split = splits && (i < stage || last_iteration);
      order.push_back({i, 0, false, split ? Part::input : Part::whole});
      if (split) queued.push_back(i);
      if (last_iteration && splits && i >= stage) pop();
    }
    for (long i = 0; i < warmup; ++i) {
      const long b = remaining + i;
      order.push_back({b, 0, false, splits ? Part::input : Part::whole});
      if (splits) queued.push_back(b);
      if (splits && remaining + i >= stage) pop();
    }
    while (next_w < queued.size()) pop();
    return order;
  }
  if (schedule == plan::PipelineSchedule::one_f_one_b || chunks == 1) {
    const long warmup = std::min(pp - stage - 1, m);
    for (long b = 0; b < warmup; ++b) order.push_back({b, 0, true});
    for (long i = 0; i < m - warmup; ++i) {
      order.push_back({warmup + i, 0, true});
      order.push_back({i, 0, false});
    }
    for (long b = m - warmup; b < m; ++b) order.push_back({b, 0, false});
    return order;
  }
  const long total = m * chunks;
  // With as many micro-batches as stages Megatron runs every forward first (all_warmup_microbatches).
  const long warmup = m == pp ? total : std::min(total, (pp - stage - 1) * 2 + (chunks - 1) * pp);
  for (long k = 0; k < warmup; ++k) order.push_back(interleaved_slot(k, pp, chunks, true));
  for (long i = 0; i < total - warmup; ++i) {
    order.push_back(interleaved_slot(warmup + i, pp, chunks, true));
    order.push_back(interleaved_slot(i, pp, chunks, false));
  }
  for (long k = total - warmup; k < total; ++k) order.push_back(interleaved_slot(k, pp, chunks, false));
  return order;
}

Program build_pipeline_parallel(const ScheduleInputs& in) {
  if (in.plan.cp <= 1) return build_pipeline(in, in.share_task_bodies);
  // Context parallelism: each rank runs the model on its 1/cp of the sequences, its attention
  // around the CP ring (context_parallel.hpp); a step still trains micro_batch x m x dp sequences.
  Program prog = build_pipeline(context_parallel_rank_view(in), in.share_task_bodies);
  prog.samples_per_step /= in.plan.cp;
  return prog;
}

namespace {

/// Every rank's program. With `share`, each rank of a stage but the first shares the first's body
/// (RankProgram::body) and only gets its calls: a rank's tasks are built without its data- or
/// tensor-parallel index, which only call_for reads (the shared-body tests also compare the
/// result with every rank built, and `--no-fold` builds them all).
Program build_pipeline(const ScheduleInputs& in, bool share) {
  const auto& s = in.model;
  const auto& p = in.plan;
  const auto& L = in.layout;
  const long pp = p.pp, v = p.virtual_stages, m = p.accumulation, tp = p.tp;
  const long virtual_stages = pp * v;
  TRAINSIM_CHECK(p.partition != plan::PipelinePartition::uniform || s.layers % virtual_stages == 0,
                 "layers must divide over the virtual stages");
  TRAINSIM_CHECK(p.partition == plan::PipelinePartition::uniform || v == 1 || (s.layers + 2) % virtual_stages == 0,
                 "the embedding-and-head partition under interleaving needs layers + 2 divisible by the virtual stages");
  if (p.pipeline == plan::PipelineSchedule::interleaved && v > 1)
    TRAINSIM_CHECK(m % pp == 0, "interleaving needs micro-batches a multiple of the stages");
  const model::LayerShape shape{p.micro_batch, tp, p.sequence_parallel, p.flash_attention,
                                p.fused_cross_entropy, p.eager_kernels, module_kernels_of(p.module_kernels),
                                fp8_linears_of(p)};
  const auto layer_f = model::layer_forward_ops(s, shape);
  const auto layer_b = model::layer_backward_ops(s, shape);
  const Seconds lf = ops_duration(layer_f, in.device);
  // Full recompute re-runs the layer's forward inside its backward task. A selective policy
  // re-runs a part of it as a task of its own before each backward: Megatron's selective
  // recomputation the core attention, torchtitan's op policy what it did not save.
  const bool full_recompute = p.activation_checkpointing && p.checkpoint_policy == plan::CheckpointPolicy::full;
  const bool attention_recompute =
      p.activation_checkpointing && p.checkpoint_policy == plan::CheckpointPolicy::selective_attention;
  const bool op_recompute = p.activation_checkpointing && p.checkpoint_policy == plan::CheckpointPolicy::selective_op;
  const bool partial_recompute = attention_recompute || op_recompute;
  const auto recomputed =
      attention_recompute ? model::recomputed_forward_ops(s, shape, model::Checkpointing::selective_attention)
      : op_recompute      ? model::recomputed_forward_ops(s, shape, model::Checkpointing::selective_op)
                          : std::vector<model::Operation>{};
  const Seconds lr = ops_duration(recomputed, in.device);
  const int lr_kernels = model::ops_kernels(recomputed);
  const Seconds lb = ops_duration(layer_b, in.device) + (full_recompute ? lf : 0);
  const auto emb = model::embedding_forward_ops(s, shape);
  const auto head = model::head_forward_ops(s, shape);
  const Seconds emb_f = ops_duration(emb, in.device), emb_b = ops_duration(model::backward_of(emb), in.device);
  const Seconds head_f = ops_duration(head, in.device), head_b = ops_duration(model::backward_of(head), in.device);
  // Megatron-core's defer_embedding_wgrad_compute: the output layer's weight-gradient GEMM of the
  // first wgrad_deferral_limit micro-batches (0: every one) leaves their backward (layers.py
  // LinearWithGradAccumulationAndAsyncCommunication.backward keeps grad_output instead, and under
  // sequence parallelism skips the input's re-gather) and runs after the last stage's last
  // backward (schedules.py finish_embedding_wgrad_compute, utils.py drain_embedding_wgrad_compute).
  const bool defer_head_wgrad = p.defer_embedding_wgrad_compute && pp > 1;
  Seconds head_wgrad = 0;
  int head_wgrad_kernels = 0;
  for (const auto& op : model::backward_of(head))
    if (op.name == "vocab_projection_wgrad") {
      head_wgrad = model::op_duration(op, in.device);
      head_wgrad_kernels = op.kernels;
    }
  // ZB-H1 and ZB-V split each backward into B and W (the header).
  const bool zero_bubble_v = p.pipeline == plan::PipelineSchedule::zero_bubble_v;
  const bool zero_bubble = p.pipeline == plan::PipelineSchedule::zero_bubble_h1 || zero_bubble_v;
  TRAINSIM_CHECK(!(defer_head_wgrad || zero_bubble) || head_wgrad_kernels > 0,
                 "the head's backward has the output layer's weight gradient");
  auto deferred_head_wgrad = [&](long micro_batch) {
    return defer_head_wgrad && (p.wgrad_deferral_limit == 0 || micro_batch < p.wgrad_deferral_limit);
  };
  // Megatron 2021's gradient accumulation (autograd_gradient_accumulation): a backward after a
  // chunk's first adds each parameter's gradient into its .grad (one kernel per tensor) inside
  // the pass, before its input gradient leaves the stage; .grad has the parameter's dtype.
  const bool autograd_accumulation = p.autograd_gradient_accumulation;
  // FSDP2 inside the stages (the header): every backward's gradients go into the fp32 accumulated
  // ones, a cast at the first micro-batch, an add at the later ones.
  const bool fsdp_stages = plan::fsdp_inside_pipeline_stages(p);
  auto accumulation = [&](double params, long micro_batch) {
    const auto op = fsdp_stages ? model::fsdp2_unsharded_grad_accumulation_op(params, micro_batch == 0)
                                : model::autograd_gradient_accumulation_op(params, p.precision.weights);
    return model::op_duration(op, in.device);
  };
  const double rank_layer_params = model::parameters_per_layer(s) / static_cast<double>(tp);
  const Seconds layer_accumulation = accumulation(rank_layer_params, 1);
  const Seconds first_layer_accumulation = accumulation(rank_layer_params, 0);
  auto layer_accumulation_of = [&](const auto& slot) {
    return slot.micro_batch == 0 ? first_layer_accumulation : layer_accumulation;
  };
  const int norm_tensors = s.norm == model::NormKind::rmsnorm ? 1 : 2, linear_tensors = s.bias ? 2 : 1;
  const int layer_accumulation_kernels = 2 * norm_tensors + 4 * linear_tensors;
  auto accumulates = [&](const auto& slot) {
    return !slot.forward && (fsdp_stages || (autograd_accumulation && slot.micro_batch > 0));
  };
  // Kernels the host issues for each pass (host dispatch).
  const int lf_kernels = model::ops_kernels(layer_f);
  const int lb_kernels = model::ops_kernels(layer_b) + (full_recompute ? lf_kernels : 0);
  // ZB-H1's split of a layer's backward (the header): W is its weight-gradient GEMMs (with the
  // bias gradients backward_of gives them), B the rest.
  std::vector<model::Operation> layer_w;
  for (const auto& op : layer_b)
    if (model::is_weight_gradient(op)) layer_w.push_back(op);
  const Seconds lw = ops_duration(layer_w, in.device);
  const int lw_kernels = model::ops_kernels(layer_w);
  TRAINSIM_CHECK(!zero_bubble || !layer_w.empty(), "ZB-H1 and ZB-V need the layer's weight-gradient GEMMs");
  using Part = PipelineSlot::Part;
  const int emb_f_kernels = model::ops_kernels(emb), emb_b_kernels = model::ops_kernels(model::backward_of(emb));
  const int head_f_kernels = model::ops_kernels(head), head_b_kernels = model::ops_kernels(model::backward_of(head));
  const double activation_elements = static_cast<double>(p.micro_batch * s.seq_len * s.hidden);
  const Bytes activation = 2.0 * activation_elements;
  // A layer's sequence-parallel all-gathers (the norm outputs, the output gradients, the
  // re-gathers), in FP8 where the linears cast before gathering (model/fp8_linear.hpp).
  const Bytes sequence_gather = shape.fp8.sequence_gathers_fp8 ? activation / 2 : activation;
  // What crosses a stage boundary per rank. Under sequence parallelism each TP rank holds 1/tp
  // of the sequence already. Otherwise, with Megatron's scatter/gather optimisation (paper
  // section 4.1; --scatter-gather-tensors-in-pipeline, on by default in 2021: p2p_communication.py
  // _communicate: split_tensor_into_1d_equal_chunks before sending, gather_split_1d_tensor after
  // receiving), each TP rank sends 1/tp of the activation and the receiving stage all-gathers it
  // over its TP group; without it every TP rank sends the whole tensor.
  const bool scatter_gather = p.pipeline_scatter_gather && tp > 1 && !p.sequence_parallel;
  const Bytes boundary = activation / (p.sequence_parallel || scatter_gather ? static_cast<double>(tp) : 1.0);
  TRAINSIM_CHECK(!(scatter_gather && p.pipeline == plan::PipelineSchedule::zero_bubble_v),
                 "ZB-V's runtime sends whole stage tensors: no scatter/gather");
  // ZB-V's order comes from its passes' costs, as the paper's runtime computes it after profiling
  // them (zero_bubble_v.hpp): each a median over the stages of the mean of its two chunks.
  PipelinePrograms zbv;
  if (zero_bubble_v) {
    std::vector<Seconds> forward, input, weight;
    for (long stage = 0; stage < pp; ++stage) {
      Seconds f = 0, b = 0, w = 0;
      for (long c = 0; c < 2; ++c) {
        const double n = static_cast<double>(plan::layers_of_chunk(p, s.layers, stage, c));
        const long vs = plan::virtual_stage_of(p, stage, c);
        f += n * lf + (vs == 0 ? emb_f : 0) + (vs == 2 * pp - 1 ? head_f : 0);
        b += n * (lb - lw) + (vs == 0 ? emb_b : 0) + (vs == 2 * pp - 1 ? head_b - head_wgrad : 0);
        w += n * lw + (vs == 2 * pp - 1 ? head_wgrad : 0);
      }
      forward.push_back(f / 2);
      input.push_back(b / 2);
      weight.push_back(w / 2);
    }
    auto median_ns = [](std::vector<Seconds> x) {
      std::sort(x.begin(), x.end());
      return std::max(1L, static_cast<long>(std::llround(x[x.size() / 2] * 1e9)));
    };
    const ZeroBubbleVCosts costs{median_ns(forward), median_ns(input), median_ns(weight),
                                 static_cast<long>(std::llround(in.pipeline_transfer * 1e9))};
    // The runtime's own memory units (zb_schedules.py get_zero_bubble_forward_backward_func):
    // a chunk forward stores 34h + 5as, its W frees 32h, under a limit of 1F1B's 2pp forwards.
    const ZeroBubbleVMemory memory{34 * s.hidden + 5 * s.heads * s.seq_len, -32 * s.hidden, 0};
    zbv = zero_bubble_v_programs(zero_bubble_v_schedule(pp, m, costs, memory), p);
  }
  const auto exchanges =
      zero_bubble_v ? zbv.steps : pipeline_exchanges(p.pipeline, pp, m, v, p.pipeline_engine, p.overlap_p2p_comm);
  // DeepSpeed's pipeline engine (v0.6.2, 32d9797, deepspeed/runtime/pipe/engine.py), beyond its
  // instruction order (pipeline_exchanges): its BF16_Optimizer (gradient_buffers) adds each
  // micro-batch's bf16 gradients into fp32 ones right after the backward (_exec_backward_pass ->
  // optimizer.update_hp_grads; the last stage through optimizer.backward), on the compute stream
  // before the next instruction; with TP its stage outputs are partitioned (is_pipe_partitioned
  // = is_grad_partitioned = is_model_parallel), and a stage's backward first re-gathers its own
  // output over the TP group (PartitionedTensor.full()) besides the received gradient.
  const bool deepspeed = p.pipeline_engine == plan::PipelineEngine::deepspeed;
  const bool hp_grad_accumulation = p.gradient_buffers == plan::GradientBuffers::deepspeed_bf16_optimizer;
  const bool restore_output = deepspeed && scatter_gather;
  const double layer_params = model::parameters_per_layer(s) / static_cast<double>(tp);
  const bool sequence_parallel = p.sequence_parallel && tp > 1;
  // Transformer Engine's userbuffers overlap: each layer pass as pieces (tp_comm_overlap.hpp),
  // each piece's task durations and kernels (compute: the ops; ring and pipelined: one GEMM
  // chunk of tp; bulk: dgrad, wgrad). Full recompute runs the forward's pieces again first.
  const bool tp_overlap = p.tp_comm_overlap && sequence_parallel;
  // Context parallelism: the pass's attention as ring steps (context_parallel.hpp), each part's
  // duration and kernels: the ops before, each step's, the ops after.
  const long cp = p.cp;
  const bool context_parallel = cp > 1;
  // With recompute (full checkpointing only: the reader) a backward pass runs the forward's ring
  // again before its own: Megatron-core checkpoints whole layers, TE's attention included, so the
  // recomputed attention exchanges K and V around the ring as the forward did.
  // torchtitan's CP (FSDP2 inside the stages): PyTorch's ring attention (torch_ring_attention.hpp),
  // whose output the op policy saves, so its selective recompute runs no part of the ring.
  const bool torch_cp = context_parallel && fsdp_stages;
  TRAINSIM_CHECK(!context_parallel || !partial_recompute || (torch_cp && op_recompute),
                 "context parallelism with selective recompute has no schedule");
  struct CostedRing {
    RingAttentionPass pass;
    std::vector<std::string> labels;
    Seconds before = 0, after = 0;
    int before_kernels = 0, after_kernels = 0;
    std::vector<Seconds> steps;
    std::vector<int> step_kernels;
  };
  auto costed_ring = [&](const std::vector<model::Operation>& ops, bool forward) {
    CostedRing r{p.cp_comm == plan::CpCommType::a2a          ? a2a_attention_pass(ops, s, shape, cp, forward)
                 : p.cp_comm == plan::CpCommType::all_gather ? all_gather_attention_pass(ops, s, shape, cp, forward)
                                                             : ring_attention_pass(ops, s, shape, cp, forward),
                 {}, 0, 0, 0, 0, {}, {}};
    r.labels = ring_pass_labels(r.pass);
    r.before = ops_duration(r.pass.before, in.device);
    r.after = ops_duration(r.pass.after, in.device);
    r.before_kernels = model::ops_kernels(r.pass.before);
    r.after_kernels = model::ops_kernels(r.pass.after);
    // The CP group runs at its slowest rank's pace (context_parallel.hpp): every rank takes its steps.
    for (const auto& step : r.pass.rank_steps[slowest_rank(r.pass, in.device)]) {
      r.steps.push_back(ops_duration(step, in.device));
      r.step_kernels.push_back(model::ops_kernels(step));
    }
    return r;
  };
  struct CostedPiece {
    OverlapPiece piece;
    std::vector<Seconds> seconds;
    std::vector<int> kernels;
    std::vector<CostedRing> ring;  ///< context parallelism: the compute piece holding the attention
  };
  auto costed = [&](const std::vector<OverlapPiece>& pieces, bool forward) {
    std::vector<CostedPiece> out;
    for (const auto& piece : pieces) {
      CostedPiece c{piece, {}, {}, {}};
      if (piece.kind == OverlapPiece::Kind::compute && context_parallel && has_fused_attention(piece.ops)) {
        c.ring.push_back(costed_ring(piece.ops, forward));
      } else if (piece.kind == OverlapPiece::Kind::compute) {
        c.seconds.push_back(ops_duration(piece.ops, in.device));
        c.kernels.push_back(model::ops_kernels(piece.ops));
      } else if (piece.kind == OverlapPiece::Kind::bulk || piece.kind == OverlapPiece::Kind::gather ||
                 piece.kind == OverlapPiece::Kind::scatter) {
        for (const auto& op : piece.ops) {
          c.seconds.push_back(model::op_duration(op, in.device));
          c.kernels.push_back(op.kernels);
        }
      } else {
        c.seconds.push_back(model::op_duration(gemm_chunk(piece.ops.front(), tp), in.device));
        c.kernels.push_back(1);
      }
      out.push_back(std::move(c));
    }
    return out;
  };
  std::vector<CostedPiece> forward_pieces, backward_pieces;
  if (tp_overlap) {
    const UserbufferPrecision buffers{shape.fp8.enabled && shape.fp8.sequence_gathers_fp8, p.tp_overlap_fp8_proj_scatter,
                                      p.tp_overlap_fp8_fc2_scatter};
    forward_pieces = costed(tp_overlap_pieces(layer_f, true, buffers), true);
    if (full_recompute) backward_pieces = forward_pieces;
    for (auto& c : costed(tp_overlap_pieces(layer_b, false, buffers), false)) backward_pieces.push_back(std::move(c));
  }
  // Megatron's own sequence parallelism, cut at the linears as its layers run it: the backward's
  // input-gradient reduce-scatters beside the weight-gradient GEMMs (tp_comm_overlap.hpp). With
  // context parallelism the pass stays whole (the ring's pieces are the attention's), and so
  // does a layer without Megatron's four linears (eager q, k and v projections).
  bool sp_pieces = false;
  if (sequence_parallel && !tp_overlap && !context_parallel) {
    const double gather_bytes = shape.fp8.sequence_gathers_fp8 ? 1 : 2;
    const auto forward_cut = sequence_parallel_pieces(layer_f, true, gather_bytes);
    const auto backward_cut = sequence_parallel_pieces(layer_b, false, gather_bytes);
    sp_pieces = forward_cut && backward_cut;
    if (sp_pieces) {
      forward_pieces = costed(*forward_cut, true);
      if (full_recompute) backward_pieces = forward_pieces;
      for (auto& c : costed(*backward_cut, false)) backward_pieces.push_back(std::move(c));
    }
  }
  std::vector<CostedRing> ring_forward, ring_backward;  // without tp_comm_overlap: the whole pass
  if (context_parallel && !tp_overlap && !torch_cp) {
    ring_forward.push_back(costed_ring(layer_f, true));
    ring_backward.push_back(costed_ring(layer_b, false));
  }
  // torchtitan's CP: a layer pass's PyTorch ring, costed piece by piece, and its task names.
  struct CostedTorchRing {
    TorchRingPass pass;
    TorchRingCosts costs;
    std::vector<std::string> labels;
  };
  auto costed_torch_ring = [&](const std::vector<model::Operation>& ops, bool forward) {
    CostedTorchRing r;
    r.pass = torch_ring_attention_pass(ops, s, shape, cp, forward, p.cp_rotate, in.device);
    r.costs = torch_ring_costs(r.pass, in.device);
    r.labels = torch_ring_pass_labels(r.pass);
    return r;
  };
  std::vector<CostedTorchRing> torch_forward, torch_backward;
  if (torch_cp) {
    torch_forward.push_back(costed_torch_ring(layer_f, true));
    torch_backward.push_back(costed_torch_ring(layer_b, false));
  }
  // The ends of the model, per rank. Megatron ties the output projection to the word embedding
  // and, with pipeline stages, keeps a copy of the (vocabulary-parallel) table on the last stage
  // that the optimizer updates too (2021: megatron/model/module.py initialize_word_embeddings;
  // megatron/core LanguageModule.setup_embeddings_and_output_layer), as memory/rank_memory.cpp
  // counts it.
  const double word_embedding = static_cast<double>(s.vocab) * static_cast<double>(s.hidden) / static_cast<double>(tp);
  // Under ZB-V the first stage holds both ends of the model: one table, nothing to all-reduce.
  const bool tied_copy = pp > 1 && s.tied_embeddings && plan::head_stage(p) != 0;
  const double embedding_params = model::embedding_parameters(s) / static_cast<double>(tp);
  const double head_params = model::head_parameters(s) / static_cast<double>(tp) + (tied_copy ? word_embedding : 0);
  // The vocabulary-parallel loss all-reduces one fp32 per token three times (max logit, target
  // logit, sum of exponentials: _VocabParallelCrossEntropy.forward, 2021 megatron/mpu/
  // cross_entropy.py and megatron/core/tensor_parallel/cross_entropy.py alike).
  const Bytes loss_bytes = 4.0 * static_cast<double>(p.micro_batch * s.seq_len);
  // megatron_step_syncs: get_batch's broadcasts over TP (Megatron-LM 6985e58 mpu/data.py): the
  // sizes, _MAX_DATA_DIM = 5 int64 per key ('text'), and the tokens, micro-batch x (seq + 1) int64.
  constexpr Bytes kBatchSizesBytes = 5 * 8;
  const Bytes batch_tokens_bytes = 8.0 * static_cast<double>(p.micro_batch * (s.seq_len + 1));
  // Activation offloading: each layer's checkpointed input goes to host memory after the layer's
  // forward and comes back before its backward (memory/rank_memory.hpp keeps two layer inputs of
  // each micro-batch in flight on device), as in the sharded schedule.
  const bool offload = p.activation_checkpointing && p.activation_offloading;
  const Bytes layer_input = model::layer_input_bytes(s, shape);

  Program prog;
  prog.samples_per_step = p.micro_batch * m * L.dp;
  auto add_call = [&](InternedName name, collective::Op op, Bytes size, RankGroup group, int repeat = 1) {
    prog.collectives.push_back({name, op, size, group, repeat});
    return static_cast<int>(prog.collectives.size()) - 1;
  };
  // Calls are made by the first member that meets them and found by the others: flat tables,
  // since a 1,024-GPU job makes hundreds of thousands of them.
  // Point-to-point calls by (direction, virtual stage boundary, micro-batch, dp, tp).
  std::vector<int> p2p(static_cast<std::size_t>(2 * virtual_stages * m * L.dp * tp), -1);
  // Tensor-parallel all-reduces by (stage, dp index), in the order the group's members issue them.
  std::vector<std::vector<int>> tp_calls(static_cast<std::size_t>(pp * L.dp));
  std::vector<RankGroup> tp_groups(static_cast<std::size_t>(pp * L.dp));  // their members, interned once
  // The tied word embedding's gradient all-reduce between the first and the last stage, by
  // (dp, tp): Megatron's embedding group pairs the first and last rank of each pipeline group
  // (2021 megatron/mpu/initialize.py: embedding_ranks = [ranks[0], ranks[-1]]).
  std::vector<int> embedding_calls(static_cast<std::size_t>(L.dp * tp), -1);
  // Data-parallel gradient and parameter calls, in the order the group's members issue them: by
  // (stage, tp index, replica) for shard groups and (stage, tp index, shard position) for the
  // replica groups. DDP is the case shard = 1 (one replica group: the whole data-parallel
  // group); ZeRO-1 over the whole group has shard = dp (one shard group).
  const long shard = L.shard, replicas = L.dp / shard;
  // ZeRO-2 shards the gradients too: a rank keeps only its shard's accumulation, so each
  // micro-batch's gradients are reduce-scattered during its backward (DeepSpeed stage 2 reduces
  // after every backward: deepspeedai/DeepSpeed#2252; pipeline_parallel 1 only, as DeepSpeed's
  // pipeline engine rejects it). Otherwise reduced during the last backward or after the flush.
  const bool every_micro_batch = p.sharding == plan::Sharding::zero2;
  TRAINSIM_CHECK(!every_micro_batch || pp == 1, "ZeRO-2 with pipeline parallelism has no schedule");
  const bool overlap = p.overlap_grad_reduce || every_micro_batch;
  // Megatron's overlap_param_gather: the distributed optimizer's all-gather moves from after the
  // optimizer to the next step's forward; in a simulated steady-state step it opens the step.
  const bool overlap_param_gather = (p.overlap_param_gather || fsdp_stages) && L.shard > 1;
  // overlap_param_gather_with_optimizer_step: model chunk 0 gets an optimizer of its own, stepped
  // first, after which its parameters' all-gather is dispatched (megatron/core/optimizer
  // __init__.py, ChainedOptimizer.step_with_ready_grads), beside the other chunks' step; the next
  // step's schedule does not dispatch it again (DistributedDataParallel.start_param_sync). Its
  // DDP buffer has one bucket (NeMo's megatron_parallel.py and Megatron's training.py:
  // disable_bucketing for chunk 0 with the flag, as for every later chunk).
  const bool gather_with_optimizer = overlap_param_gather && p.overlap_param_gather_with_optimizer_step && v > 1;
  // Megatron-core buckets only model chunk 0's gradients: every later chunk's DDP is built with
  // disable_bucketing ("communication for these model chunks is overlapped with compute anyway":
  // megatron/training/training.py get_model, core_r0.6 on; NeMo 2's megatron_parallel.py alike),
  // so its gradients are reduced (and its parameters gathered) as one bucket once the chunk's last
  // backward is done. Chunk 0 too with overlap_param_gather_with_optimizer_step.
  auto one_bucket = [&](long chunk) {
    return (gather_with_optimizer && chunk == 0) || (!deepspeed && overlap && chunk > 0);
  };
  std::vector<std::vector<int>> shard_calls(static_cast<std::size_t>(pp * tp * replicas));
  // Context parallelism's ring steps by (stage, CP group, tp index), in issue order: a CP group
  // is the cp consecutive data-parallel indices of the rank view (Megatron's tp-cp-dp order).
  std::vector<std::vector<int>> cp_calls(static_cast<std::size_t>(context_parallel ? pp * (L.dp / cp) * tp : 0));
  std::vector<std::vector<int>> replica_calls(static_cast<std::size_t>(pp * tp * shard));
  // Every (dp, tp) pair's call at one boundary and micro-batch has the same name: made once.
  std::vector<InternedName> p2p_names(static_cast<std::size_t>(2 * virtual_stages * m));
  auto p2p_call = [&](int backward, long vs, long b, long d, long t) {
    int& slot = p2p[static_cast<std::size_t>((((backward * virtual_stages + vs) * m + b) * L.dp + d) * tp + t)];
    if (slot >= 0) return slot;
    // Boundary vs -> vs + 1 (forward) or vs + 1 -> vs (backward).
    const int from = rank_of(in, plan::stage_of_virtual(p, vs), d, t);
    const int to = rank_of(in, plan::stage_of_virtual(p, vs + 1), d, t);
    InternedName& what = p2p_names[static_cast<std::size_t>((backward * virtual_stages + vs) * m + b)];
    if (what.empty())
      what = (backward ? "gradient " : "activation ") + std::to_string(vs) + (backward ? "<-" : "->") +
             std::to_string(vs + 1) + " mb" + std::to_string(b);
    slot = add_call(what, collective::Op::send_recv, boundary,
                    backward ? std::vector<int>{to, from} : std::vector<int>{from, to});
    return slot;
  };

  const Seconds optimizer_per_param = model::op_duration(model::optimizer_step_op(1e6), in.device) / 1e6;
  // Megatron's fp16 optimizer: five passes over the rank's parameters (each one kernel launch
  // here: apex's multi_tensor_apply covers ~2e7 elements per launch), two scalars all-reduced
  // between them.
  const bool megatron_optimizer = p.optimizer_implementation == plan::OptimizerImplementation::megatron_fp16;
  // Megatron's model-parallel group (every stage and TP rank of one data-parallel index: 2021
  // megatron/mpu/initialize.py) all-reduces the inf flag (MAX) and the squared gradient norm
  // (SUM), one fp32 each, by data-parallel index, in issue order.
  const bool model_parallel_scalars = (megatron_optimizer || hp_grad_accumulation) && pp * tp > 1;
  std::vector<std::vector<int>> model_parallel_calls(static_cast<std::size_t>(L.dp));
  // Transformer Engine's FP8 amax reductions (model/fp8_amax_reduction.hpp): at the end of every
  // chunk's forward and backward, over the stage's TP x DP group (by stage) or with
  // tp_only_amax_red the TP group (by stage and dp index), in issue order; none where the group
  // is one rank (TE skips the all-reduce), though the two kernels run.
  const bool amax_reduction = te_amax_reduction_of(p);
  const bool amax_all_reduce = amax_reduction && (p.fp8_amax_tp_only ? tp : tp * L.dp) > 1;
  std::vector<std::vector<int>> amax_calls(static_cast<std::size_t>(pp * L.dp));
  for (long stage = 0; stage < pp; ++stage) {
    // Layers of each chunk (plan::layers_of_chunk); names are made for the most any chunk holds.
    const long stage_layers = plan::layers_of_stage(p, s.layers, stage);
    auto chunk_layers = [&](long c) { return plan::layers_of_chunk(p, s.layers, stage, c); };
    long layers_per_chunk = 0;
    for (long c = 0; c < v; ++c) layers_per_chunk = std::max(layers_per_chunk, chunk_layers(c));
    double stage_params = layer_params * static_cast<double>(stage_layers);
    if (stage == 0) stage_params += embedding_params;
    if (stage == plan::head_stage(p)) stage_params += head_params;
    // Each pass over the stage's gradients runs one kernel per parameter tensor: a GPT layer has
    // 12 (two norms' weight and bias, four linears' weight and bias), an end stage one more table.
    const bool end_stage = stage == 0 || stage == plan::head_stage(p);
    const int stage_tensors = 12 * static_cast<int>(stage_layers) + (end_stage ? 1 : 0);
    const Seconds accumulate_seconds =
        hp_grad_accumulation ? model::op_duration(model::deepspeed_bf16_grad_accumulation_op(stage_params), in.device) : 0;
    // What every rank of the stage shares: its slots and their task names.
    const auto order =
        zero_bubble_v ? zbv.slots[static_cast<std::size_t>(stage)] : pipeline_order(p.pipeline, pp, stage, m, v);
    // A chunk's gradients are final once its last micro-batch's backward is done.
    std::vector<std::size_t> last_backward(static_cast<std::size_t>(v), 0);
    for (std::size_t o = 0; o < order.size(); ++o)
      if (!order[o].forward) last_backward[static_cast<std::size_t>(order[o].chunk)] = o;
    // overlap_param_gather: each chunk's parameter buckets, formed in backward order as the
    // gradient buckets are (Megatron's param and grad buffers share them), listed in forward
    // order with the first layer of each. The embedding counts with the first layer, the head
    // with the last, as in the gradient buckets.
    struct ParamBuckets {
      std::vector<double> params;      // by bucket, forward order
      std::vector<std::size_t> of_layer;  // bucket of each layer of the chunk
    };
    std::vector<ParamBuckets> param_buckets(static_cast<std::size_t>(v));
    if (overlap_param_gather)
      for (long c = 0; c < v; ++c) {
        const long vs = plan::virtual_stage_of(p, stage, c);
        auto& pb = param_buckets[static_cast<std::size_t>(c)];
        const long n = chunk_layers(c);
        std::vector<std::size_t> backward_bucket(static_cast<std::size_t>(n));
        double filling = 0;
        for (long l = n - 1; l >= 0; --l) {
          filling += layer_params + (l == n - 1 && vs == virtual_stages - 1 ? head_params : 0) +
                     (l == 0 && vs == 0 ? embedding_params : 0);
          backward_bucket[static_cast<std::size_t>(l)] = pb.params.size();
          if ((!one_bucket(c) && (p.bucket_elements <= 0 || filling >= p.bucket_elements)) || l == 0) {
            pb.params.push_back(filling);
            filling = 0;
          }
        }
        std::reverse(pb.params.begin(), pb.params.end());
        for (long l = 0; l < n; ++l)
          pb.of_layer.push_back(pb.params.size() - 1 - backward_bucket[static_cast<std::size_t>(l)]);
      }
    // The first forward slot of each chunk (micro-batch 0), where the gathers are waited for.
    std::vector<std::size_t> first_forward(static_cast<std::size_t>(v), order.size());
    for (std::size_t o = order.size(); o-- > 0;)
      if (order[o].forward) first_forward[static_cast<std::size_t>(order[o].chunk)] = o;
    // Names are made once per slot and shared by every rank of the stage (interned).
    struct SlotNames {
      std::vector<InternedName> layers, copies;  // copies: offload (forward) or fetch (backward)
      std::vector<InternedName> recomputes;      // backward: each layer's core attention again
      InternedName tp_gather, tp_reduce, tp_regather, tp_restore_output, accumulate;
      InternedName amax_concat, amax_reduce, amax_update;  // TE's FP8 amax reduction at the pass's end
      // The first virtual stage's embedding and the last one's head, and their TP collectives.
      InternedName embedding, tp_embedding, head, tp_head, tp_head_regather;
      std::vector<InternedName> tp_loss;
      // megatron_step_syncs: a forward's batch broadcast over TP (sizes, then tokens) and the
      // last stage's loss all-reduce over DP.
      InternedName batch_sizes, batch_tokens, loss_reduce;
      std::vector<InternedName> overlap;  // tp_comm_overlap: a layer pass's tasks, in push order
      std::vector<std::vector<InternedName>> ring;  // context parallelism: each layer's ring pass, in push order
    };
    std::vector<SlotNames> slot_names;
    for (const auto& slot : order) {
      const std::string tag = " mb" + std::to_string(slot.micro_batch) + " c" + std::to_string(slot.chunk);
      auto& names = slot_names.emplace_back();
      for (long l = 0; l < layers_per_chunk; ++l) {
        const std::string layer = tag + " layer " + std::to_string(l);
        names.layers.emplace_back((slot.forward                   ? "forward"
                                   : slot.part == Part::weight ? "weight gradient"
                                                               : "backward") +
                                  layer);
        if (offload) names.copies.emplace_back((slot.forward ? "offload input" : "fetch input") + layer);
        if (partial_recompute && !slot.forward)
          names.recomputes.emplace_back((attention_recompute ? "recompute core attention" : "recompute unsaved ops") + layer);
      }
      names.tp_gather = "tp all-gather" + tag;
      if (tp_overlap || sp_pieces) {
        // A backward under full recompute starts with the forward's pieces again.
        const auto& pieces = slot.forward ? forward_pieces : backward_pieces;
        const std::size_t recomputed_pieces = !slot.forward && full_recompute ? forward_pieces.size() : 0;
        for (std::size_t i = 0; i < pieces.size(); ++i) {
          const auto& c = pieces[i];
          const char* pass = slot.forward ? "forward" : i < recomputed_pieces ? "recompute" : "backward";
          for (const auto& label : c.ring.empty() ? piece_task_labels(c.piece, tp, p.tp_overlap_model) : c.ring.front().labels)
            names.overlap.emplace_back(pass + tag + " " + label);
        }
      }
      if (context_parallel && !tp_overlap)
        for (long l = 0; l < layers_per_chunk; ++l) {
          auto& ring = names.ring.emplace_back();
          const auto& forward_labels = torch_cp ? torch_forward.front().labels : ring_forward.front().labels;
          const auto& backward_labels = torch_cp ? torch_backward.front().labels : ring_backward.front().labels;
          if (!slot.forward && full_recompute)
            for (const auto& label : forward_labels)
              ring.emplace_back("recompute" + tag + " layer " + std::to_string(l) + " " + label);
          for (const auto& label : slot.forward ? forward_labels : backward_labels)
            ring.emplace_back((slot.forward ? "forward" : "backward") + tag + " layer " + std::to_string(l) + " " + label);
        }
      if (!slot.forward) {
        names.tp_restore_output = "tp gather own output" + tag;
        names.accumulate = "fp32 gradient accumulation" + tag;
      }
      names.tp_reduce = (sequence_parallel ? "tp reduce-scatter" : "tp all-reduce") + tag;
      if (amax_reduction) {
        names.amax_concat = "fp8 amax concat" + tag;
        names.amax_reduce = "fp8 amax all-reduce" + tag;
        names.amax_update = "fp8 amax and scale update" + tag;
      }
      if (sequence_parallel && !sp_pieces && !slot.forward) names.tp_regather = "tp re-gather" + tag;
      const long vs = plan::virtual_stage_of(p, stage, slot.chunk);
      if (p.megatron_step_syncs && slot.forward) {
        names.batch_sizes = "tp batch sizes broadcast" + tag;
        names.batch_tokens = "tp batch broadcast" + tag;
        if (vs == virtual_stages - 1) names.loss_reduce = "loss all-reduce" + tag;
      }
      const std::string pass = slot.forward ? "forward" : "backward";
      if (vs == 0) {
        names.embedding = "embedding " + pass + tag;
        // Forward: VocabParallelEmbedding's all-reduce, or under sequence parallelism its
        // reduce-scatter; backward: the all-gather that undoes the scatter (none without SP).
        const char* op = !slot.forward ? "tp embedding all-gather"
                         : sequence_parallel && !s.learned_positions ? "tp embedding reduce-scatter"
                                                                      : "tp embedding all-reduce";
        names.tp_embedding = op + tag;
      }
      if (vs == virtual_stages - 1) {
        names.head = (slot.part == Part::weight ? "head weight gradient" : "head " + pass) + tag;
        names.tp_head = (slot.forward ? "tp head all-gather"
                         : sequence_parallel ? "tp head reduce-scatter" : "tp head all-reduce") + tag;
        if (sequence_parallel && !slot.forward) names.tp_head_regather = "tp head re-gather" + tag;
        if (slot.forward)
          for (const char* what : {"max", "target", "sum-exp"})
            names.tp_loss.emplace_back(std::string("tp loss ") + what + " all-reduce" + tag);
      }
    }
    // defer_embedding_wgrad_compute: the last stage's deferred weight-gradient GEMMs, in the order
    // their micro-batches' backward passes kept them, and under sequence parallelism each one's
    // re-gather of the head's input.
    std::vector<InternedName> drain_wgrad, drain_gather;
    if (defer_head_wgrad && stage == pp - 1)
      for (const auto& slot : order)
        if (!slot.forward && slot.chunk == v - 1 && deferred_head_wgrad(slot.micro_batch)) {
          const std::string tag = " mb" + std::to_string(slot.micro_batch) + " c" + std::to_string(slot.chunk);
          drain_wgrad.emplace_back("deferred head weight gradient" + tag);
          if (sequence_parallel) drain_gather.emplace_back("tp head deferred re-gather" + tag);
        }
    // The stage's host program (slots and exchanges) and its exchanges' task names: each
    // transfer's, then under scatter/gather each received tensor's all-gather.
    const std::vector<PipelineStep>& steps = exchanges[static_cast<std::size_t>(stage)];
    std::vector<std::vector<InternedName>> exchange_names(steps.size());
    for (std::size_t e = 0; e < steps.size(); ++e) {
      auto describe = [](const PipelineTransfer& x) {
        return (x.gradient ? "gradient " : "activation ") + std::to_string(x.boundary) + (x.gradient ? "<-" : "->") +
               std::to_string(x.boundary + 1) + " mb" + std::to_string(x.micro_batch);
      };
      for (const auto& x : steps[e].transfers) exchange_names[e].emplace_back((x.send ? "send " : "recv ") + describe(x));
      if (scatter_gather)
        for (const auto& x : steps[e].transfers)
          if (!x.send) exchange_names[e].emplace_back("tp gather " + describe(x));
    }
    // The call a rank gets for a request: made by the first member of the group to ask.
    auto call_for = [&](RankCalls& rc, const CallRequest& q) -> int {
      using G = CallRequest::Group;
      const long d = rc.d, t = rc.t, replica = d / shard, position = d % shard;
      switch (q.group) {
        case G::point_to_point: return p2p_call(q.backward, q.boundary, q.micro_batch, d, t);
        case G::embedding: {
          int& call = embedding_calls[static_cast<std::size_t>(d * tp + t)];
          if (call < 0) call = add_call(q.name, q.op, q.size, {rank_of(in, 0, d, t), rank_of(in, pp - 1, d, t)});
          return call;
        }
        case G::tensor: {
          // The TP group's members issue their all-reduces in the same order.
          auto& calls = tp_calls[static_cast<std::size_t>(stage * L.dp + d)];
          if (rc.tensor == calls.size()) {
            RankGroup& group = tp_groups[static_cast<std::size_t>(stage * L.dp + d)];
            if (group.empty()) {
              std::vector<int> members;
              for (long k = 0; k < tp; ++k) members.push_back(rank_of(in, stage, d, k));
              group = members;
            }
            calls.push_back(add_call(q.name, q.op, q.size, group, q.repeat));
          }
          return calls[rc.tensor++];
        }
        case G::shard:
        case G::replica: {
          // The call at this rank's position in its group's sequence.
          const bool across_replicas = q.group == G::replica;
          auto& calls = across_replicas ? replica_calls[static_cast<std::size_t>((stage * tp + t) * shard + position)]
                                        : shard_calls[static_cast<std::size_t>((stage * tp + t) * replicas + replica)];
          std::size_t& sequence = across_replicas ? rc.replica : rc.shard;
          if (sequence == calls.size()) {
            std::vector<int> group;
            if (across_replicas)
              for (long r = 0; r < replicas; ++r) group.push_back(rank_of(in, stage, r * shard + position, t));
            else
              for (long k = 0; k < shard; ++k) group.push_back(rank_of(in, stage, replica * shard + k, t));
            calls.push_back(add_call(q.name, q.op, q.size, std::move(group)));
          }
          return calls[sequence++];
        }
        case G::amax: {
          auto& calls = amax_calls[static_cast<std::size_t>(stage * L.dp + (p.fp8_amax_tp_only ? d : 0))];
          if (rc.amax == calls.size()) {
            std::vector<int> group;
            for (long dd = 0; dd < L.dp; ++dd)
              if (!p.fp8_amax_tp_only || dd == d)
                for (long k = 0; k < tp; ++k) group.push_back(rank_of(in, stage, dd, k));
            calls.push_back(add_call(q.name, q.op, q.size, std::move(group)));
          }
          return calls[rc.amax++];
        }
        case G::context: {
          auto& calls = cp_calls[static_cast<std::size_t>((stage * (L.dp / cp) + d / cp) * tp + t)];
          if (rc.context == calls.size()) {
            std::vector<int> group;
            for (long c = 0; c < cp; ++c) group.push_back(rank_of(in, stage, d / cp * cp + c, t));
            calls.push_back(add_call(q.name, q.op, q.size, std::move(group)));
          }
          return calls[rc.context++];
        }
        case G::model_parallel: {
          auto& calls = model_parallel_calls[static_cast<std::size_t>(d)];
          if (rc.model_parallel == calls.size()) {
            std::vector<int> group;
            for (long st = 0; st < pp; ++st)
              for (long k = 0; k < tp; ++k) group.push_back(rank_of(in, st, d, k));
            calls.push_back(add_call(q.name, q.op, q.size, std::move(group)));
          }
          return calls[rc.model_parallel++];
        }
      }
      return -1;
    };
    // Shared bodies: the stage's first rank's requests, the call each got, and for each collective
    // task of its body (streams in order) the request that got its call.
    std::vector<CallRequest> requests;
    std::vector<int> requested;
    std::vector<std::size_t> request_of_task;
    std::vector<int> got;  // a sharing rank's call for each request, reused rank after rank
    // The requests other than its TP group's: a TP group's members get the same TP calls, so a
    // rank after its group's first member asks only these again, and takes the rest of its calls
    // from that member (RankProgram::calls_from), patched at the places these requests got.
    std::vector<std::size_t> not_tensor;
    std::vector<int> not_tensor_places;
    for (long d = 0; d < L.dp; ++d)
      for (long t = 0; t < tp; ++t) {
        const StageMemory& mem = in.stages.at(static_cast<std::size_t>(stage));
        RankProgram rp;
        rp.rank = rank_of(in, stage, d, t);
        rp.resident = mem.resident;
        RankCalls rank_calls{d, t};
        if (share && (d > 0 || t > 0)) {
          rp.body = rank_of(in, stage, 0, 0);
          if (t == 0) {
            got.resize(requests.size());
            for (std::size_t j = 0; j < requests.size(); ++j) got[j] = call_for(rank_calls, requests[j]);
            rp.calls.reserve(request_of_task.size());
            for (const std::size_t j : request_of_task) rp.calls.push_back(got[j]);
          } else {
            if (d == 0 && t == 1) {
              got = requested;  // the stage's first rank's calls
              not_tensor.clear();
              for (std::size_t j = 0; j < requests.size(); ++j)
                if (requests[j].group != CallRequest::Group::tensor) not_tensor.push_back(j);
              not_tensor_places.clear();
              for (std::size_t k = 0; k < request_of_task.size(); ++k)
                if (requests[request_of_task[k]].group != CallRequest::Group::tensor)
                  not_tensor_places.push_back(static_cast<int>(k));
              // Every other replica's TP group makes these TP calls again: room for them at once
              // (per-step TP overlap makes over a million per stage at 1,024 GPUs).
              prog.collectives.reserve(prog.collectives.size() +
                                       (requests.size() - not_tensor.size()) * static_cast<std::size_t>(L.dp - 1) + 16);
            }
            for (const std::size_t j : not_tensor) got[j] = call_for(rank_calls, requests[j]);
            rp.calls_from = rank_of(in, stage, d, 0);
            rp.call_patches.reserve(not_tensor_places.size());
            for (const int k : not_tensor_places)
              rp.call_patches.push_back({k, got[request_of_task[static_cast<std::size_t>(k)]]});
          }
          prog.ranks.push_back(std::move(rp));
          continue;
        }
        const bool records = share;  // the stage's first rank, whose body the others share
        auto request = [&](const CallRequest& q) {
          const int c = call_for(rank_calls, q);
          if (records) {
            requests.push_back(q);
            requested.push_back(c);
          }
          return c;
        };
        // One stream per kind of point-to-point operation: the (up to four) operations of an
        // exchange run concurrently, and a stream's tasks come in exchange order.
        enum { kCompute = 0, kTensor = 1, kReduce = 2, kRecvPrev = 3, kSendNext = 4, kRecvNext = 5, kSendPrev = 6 };
        rp.streams = {{"compute", StreamKind::compute, {}},
                      {"tensor-parallel", StreamKind::communication, {}},
                      {"data-parallel", StreamKind::communication, {}},
                      {"recv activation", StreamKind::communication, {}},
                      {"send activation", StreamKind::communication, {}},
                      {"recv gradient", StreamKind::communication, {}},
                      {"send gradient", StreamKind::communication, {}}};
        const int kCopy = static_cast<int>(rp.streams.size());
        if (offload) rp.streams.push_back({"host-copy", StreamKind::copy, {}});
        // tp_comm_overlap: the userbuffers ring's steps, beside the TP stream's chunked
        // reduce-scatters and bulk gathers.
        const int kRing = static_cast<int>(rp.streams.size());
        if (tp_overlap) rp.streams.push_back({"tp ring", StreamKind::communication, {}});
        // TE's amax all-reduces: their own communicator (the amax reduction group), so their own stream.
        const int kAmax = static_cast<int>(rp.streams.size());
        if (amax_all_reduce) rp.streams.push_back({"fp8 amax", StreamKind::communication, {}});
        // Context parallelism: the KV (and dKV) transfers around the CP ring, beside the attention.
        const int kCpRing = static_cast<int>(rp.streams.size());
        if (context_parallel) rp.streams.push_back({"cp ring", StreamKind::communication, {}});
        auto& comp = rp.streams[kCompute].tasks;
        auto push = [&](int stream, Task task) {
          rp.streams[static_cast<std::size_t>(stream)].tasks.push_back(std::move(task));
          return TaskRef{stream, static_cast<int>(rp.streams[static_cast<std::size_t>(stream)].tasks.size()) - 1};
        };
        // Room for every slot's layers, the embedding and head passes of the end stages and the
        // step's tail, so the stream is never copied while it grows.
        comp.reserve(order.size() * static_cast<std::size_t>((partial_recompute ? 2 : 1) * layers_per_chunk + 2) + 16);
        // The call at this rank's place in its shard group's (or replica group's) sequence.
        auto group_call = [&](bool across_replicas, const std::string& name, collective::Op op, Bytes size) {
          using G = CallRequest::Group;
          return request({across_replicas ? G::replica : G::shard, name, op, size});
        };
        const std::string stage_tag = " stage " + std::to_string(stage);
        int buckets = 0;
        TaskRef synced{-1, -1};  // the last gradient collective
        // Reduces one bucket of `params` gradients once `ready` is done: a reduce-scatter within
        // the shard group (ZeRO-1), an all-reduce of what each rank then holds across replicas.
        auto sync_gradients = [&](double params, TaskRef ready, bool last_micro_batch) {
          const std::string bucket = overlap       ? " bucket " + std::to_string(buckets)
                                     : fsdp_stages ? " unit " + std::to_string(buckets)
                                                   : "";
          ++buckets;
          if (shard > 1) {
            // DeepSpeed's BF16_Optimizer all-reduces where ZeRO-1 would reduce-scatter.
            const bool all = p.zero1_gradient_all_reduce;
            const std::string what = all ? "gradient all-reduce (shard group)" : "gradient reduce-scatter";
            const int c = group_call(false, what + stage_tag + bucket,
                                     all ? collective::Op::all_reduce : collective::Op::reduce_scatter,
                                     params * p.gradient_wire_bytes);
            // deepspeed_step_work: allreduce_bucket casts the fp32 gradients to the wire dtype on
            // the compute stream first, then scales the reduced copy and copies it back.
            const bool bucket_passes = p.deepspeed_step_work && all;
            const bool casts = plan::deepspeed_reduce_casts_to_wire(p.gradient_buffers, p.gradient_wire_bytes);
            if (bucket_passes && casts) {
              Task cast{"allreduce_bucket cast", TaskKind::compute, Phase::gradient_sync,
                        model::op_duration(model::deepspeed_allreduce_bucket_cast_op(params, p.gradient_wire_bytes), in.device),
                        -1, {ready}};
              ready = push(kCompute, std::move(cast));
            }
            Task reduce{what + bucket, TaskKind::collective, Phase::gradient_sync, 0, c, {ready}};
            // DeepSpeed's allreduce_bucket runs on a bf16 copy of the fp32 gradients, made on the
            // compute stream (memory/rank_memory.hpp gradient_reduce_copy).
            reduce.workspace = mem.gradient_reduce_copy;
            reduce.alloc_pool = kCompute;
            ready = synced = push(kReduce, std::move(reduce));
            if (bucket_passes) {
              Task finish{"allreduce_bucket scale and copy back", TaskKind::compute, Phase::gradient_sync,
                          model::op_duration(model::deepspeed_allreduce_bucket_finish_op(params, p.gradient_wire_bytes), in.device),
                          -1, {synced}};
              finish.kernels = casts ? 2 : 1;  // mul_, then copy_
              ready = synced = push(kCompute, std::move(finish));
            }
          }
          if (replicas > 1 && last_micro_batch) {  // the accumulated shard, once
            const std::string what = shard > 1 ? "replica all-reduce" : "gradient all-reduce";
            const int c = group_call(true, what + stage_tag + bucket,
                                     collective::Op::all_reduce,
                                     params / static_cast<double>(shard) * p.gradient_wire_bytes);
            synced = push(kReduce, {what + bucket, TaskKind::collective, Phase::gradient_sync, 0, c, {ready}});
          }
        };
        double pending = 0;  // gradients of the chunk's last backward not yet in a bucket
        // overlap_param_gather, per chunk: the gathers issued and the buckets waited for so far.
        // Interleaved schedules align the gathers (align_param_gather, on by default there:
        // megatron/training/arguments.py): schedules.py dispatches every bucket of chunks 0 and 1
        // when the step starts and chunk c's when chunk c - 1's first micro-batch runs. Otherwise
        // the forward pre-hook of a bucket's first module dispatches it if needed, waits for it
        // and dispatches the next bucket (distributed_data_parallel.py _make_forward_pre_hook,
        // param_and_grad_buffer.py finish_param_sync): one bucket ahead.
        const bool aligned_gathers = v > 1 && !fsdp_stages;  // FSDP2: each unit's pre-forward
        std::vector<std::vector<TaskRef>> gathers(static_cast<std::size_t>(v));
        std::vector<std::size_t> waited(static_cast<std::size_t>(v), 0);
        auto gather_up_to = [&](long c, std::size_t bucket, const std::vector<TaskRef>& deps) {
          auto& issued = gathers[static_cast<std::size_t>(c)];
          const auto& pb = param_buckets[static_cast<std::size_t>(c)];
          while (issued.size() <= bucket && issued.size() < pb.params.size()) {
            const std::string what = "parameter all-gather c" + std::to_string(c) + " bucket " + std::to_string(issued.size());
            const int call = group_call(false, what + stage_tag, collective::Op::all_gather,
                                        pb.params[issued.size()] * p.parameter_wire_bytes);
            issued.push_back(push(kReduce, {what, TaskKind::collective, Phase::parameter_sync, 0, call, deps}));
          }
          return issued[std::min(bucket, issued.size() - 1)];
        };
        // Before a layer's (or the embedding's) compute in the chunk's first forward: its bucket.
        auto await_parameters = [&](long c, long l, std::vector<TaskRef>& deps) {
          const std::size_t b = param_buckets[static_cast<std::size_t>(c)].of_layer[static_cast<std::size_t>(l)];
          std::size_t& next = waited[static_cast<std::size_t>(c)];
          if (b < next) return;
          const TaskRef gathered = gather_up_to(c, b, deps);
          next = b + 1;
          deps.push_back(gathered);
          if (!aligned_gathers) gather_up_to(c, b + 1, deps);
        };
        if (overlap_param_gather && aligned_gathers)
          for (long c = gather_with_optimizer ? 1 : 0; c < std::min<long>(2, v); ++c)
            gather_up_to(c, param_buckets[static_cast<std::size_t>(c)].params.size(), {});
        // Per slot: each layer's collectives (three under sequence parallelism), the embedding's,
        // the loss's three and the head's at the end stages.
        // A layer pass makes up to four reductions (two with recompute's two again), under sequence
        // parallelism as many gathers and a re-gather; the ends, a slot's exchanges' gathers.
        if (tp > 1)
          rp.streams[kTensor].tasks.reserve(
              order.size() * static_cast<std::size_t>(layers_per_chunk * (sequence_parallel ? 9 : 4) + 8));
        // Each point-to-point stream carries at most one task per micro-batch and chunk.
        for (int st = kRecvPrev; st <= kSendPrev; ++st) rp.streams[static_cast<std::size_t>(st)].tasks.reserve(static_cast<std::size_t>(m * v));
        TaskRef previous{-1, -1};
        // What the host waits for before issuing the next step: the last compute (and TP
        // collective) of a slot, or every operation of an exchange (Megatron waits for each
        // request, then torch.cuda.synchronize()), and under scatter/gather the all-gathers that
        // rebuild the received tensors.
        std::vector<TaskRef> cursor;
        auto tp_call = [&](InternedName name, collective::Op op, Bytes size, int repeat = 1) {
          return request({CallRequest::Group::tensor, name, op, size, 0, 0, 0, repeat});
        };
        // The next compute task is issued after a host synchronisation: a blocking exchange, or
        // under megatron_step_syncs a timer's torch.cuda.synchronize().
        bool host_waited = false;
        // Megatron 2021's fp16 gradients: the stage's first backward seen, their allocation due.
        bool backward_seen = false, fp16_gradients_pending = false;
        TRAINSIM_CHECK(mem.step_fp16_gradients == 0 || (!overlap && megatron_optimizer),
                       "Megatron 2021's step gradients need its flush-time all-reduce and Float16Optimizer");
        // overlap_p2p_comm: receives left in flight, by (gradient, boundary, micro-batch), until
        // the slot that reads them; and the last send left in flight each way (activation,
        // gradient), waited for once the next exchange sending that way is issued (Megatron's
        // send_next_wait_handle / send_prev_wait_handle).
        // ZB-V: a receive's whole batch, which its reader waits for (zero_bubble_v_programs).
        std::map<std::tuple<bool, long, long>, std::vector<TaskRef>> in_flight;
        // ZB-V: each direction's last send, which the runtime waits for only at the step's end.
        TaskRef zbv_last_send[2] = {{-1, -1}, {-1, -1}};
        TaskRef unwaited_send[2] = {{-1, -1}, {-1, -1}};
        for (std::size_t e = 0; e < steps.size(); ++e) {
          const PipelineStep& step = steps[e];
          if (!step.compute) {
            const std::vector<InternedName>& names = exchange_names[e];
            std::vector<TaskRef> done;
            std::vector<TaskRef> sends_waited;
            for (std::size_t k = 0; k < step.transfers.size(); ++k) {
              const PipelineTransfer& x = step.transfers[k];
              const int stream = x.send ? (x.gradient ? kSendPrev : kSendNext) : (x.gradient ? kRecvNext : kRecvPrev);
              const int call = request({CallRequest::Group::point_to_point, {}, collective::Op::send_recv, boundary,
                                        x.gradient ? 1 : 0, x.boundary, x.micro_batch});
              // PyTorch's NCCL process group makes its stream wait for the compute issued before
              // the call, so a receive too starts after the slot before it.
              done.push_back(push(stream, {names[k], TaskKind::collective, x.gradient ? Phase::backward : Phase::forward,
                                           0, call, cursor}));
              if (!p.overlap_p2p_comm || zero_bubble_v) continue;
              if (x.send) {
                TaskRef& unwaited = unwaited_send[x.gradient ? 1 : 0];
                if (unwaited.stream >= 0) sends_waited.push_back(unwaited);
                unwaited = step.waited ? TaskRef{-1, -1} : done.back();
              } else if (!step.waited) {
                in_flight.emplace(std::make_tuple(x.gradient, x.boundary, x.micro_batch),
                                  std::vector<TaskRef>{done.back()});
              }
            }
            if (zero_bubble_v) {
              for (std::size_t k = 0; k < step.transfers.size(); ++k) {
                const PipelineTransfer& x = step.transfers[k];
                if (x.send)
                  zbv_last_send[x.gradient ? 1 : 0] = done[k];
                else
                  in_flight.emplace(std::make_tuple(x.gradient, x.boundary, x.micro_batch), done);
              }
              continue;
            }
            if (p.overlap_p2p_comm) {
              // Plain isend/irecv: waits are the compute stream's (no torch.cuda.synchronize), and
              // an exchange left in flight holds back only what reads it.
              if (step.waited) cursor = std::move(done);
              for (const TaskRef& send : sends_waited) cursor.push_back(send);
              continue;
            }
            std::vector<TaskRef> gathered;
            if (scatter_gather)
              for (std::size_t k = 0; k < step.transfers.size(); ++k)
                if (!step.transfers[k].send) {
                  const InternedName& name = names[step.transfers.size() + gathered.size()];
                  const Phase phase = step.transfers[k].gradient ? Phase::backward : Phase::forward;
                  gathered.push_back(push(kTensor, {name, TaskKind::collective, phase, 0,
                                                    tp_call(name, collective::Op::all_gather, activation), done}));
                }
            cursor = gathered.empty() ? std::move(done) : std::move(gathered);
            host_waited = true;
            continue;
          }
          const std::size_t o = step.slot;
          const auto& slot = order[o];
          const long vs = plan::virtual_stage_of(p, stage, slot.chunk);
          const bool first = vs == 0, last = vs == virtual_stages - 1;
          const SlotNames& names = slot_names[o];
          const Phase phase = slot.forward ? Phase::forward : Phase::backward;
          const std::size_t slot_start = comp.size();
          std::vector<TaskRef> ready = cursor;
          if (p.megatron_step_syncs) {
            // Megatron-LM 2021 (6985e58 megatron/schedules.py forward_step / backward_step) times
            // every pass with timers('forward-compute') / ('backward-compute'), whose start() and
            // stop() call torch.cuda.synchronize() (megatron/global_vars.py _Timer): the host
            // issues each pass only once the device is idle. A forward first runs get_batch
            // (pretrain_gpt.py) on every stage: mpu.broadcast_data broadcasts the sizes
            // (_MAX_DATA_DIM 5 int64) over TP, reads them with .cpu(), then broadcasts the
            // tokens, micro-batch x (seq + 1) int64 (mpu/data.py), all inside
            // timers('batch-generator'), which synchronises again after them.
            if (slot.forward && tp > 1) {
              const TaskRef sizes = push(kTensor, {names.batch_sizes, TaskKind::collective, Phase::forward, 0,
                                                   tp_call(names.batch_sizes, collective::Op::broadcast, kBatchSizesBytes), ready});
              ready = {push(kTensor, {names.batch_tokens, TaskKind::collective, Phase::forward, 0,
                                      tp_call(names.batch_tokens, collective::Op::broadcast, batch_tokens_bytes), {sizes}})};
            }
            host_waited = true;
          }
          if (!in_flight.empty()) {
            // overlap_p2p_comm: the slot's input, if it was left in flight (recv_prev_wait_handle,
            // recv_next_wait_handle).
            const auto input = in_flight.find(slot.forward ? std::make_tuple(false, vs - 1, slot.micro_batch)
                                                           : std::make_tuple(true, vs, slot.micro_batch));
            if (input != in_flight.end()) {
              ready.insert(ready.end(), input->second.begin(), input->second.end());
              in_flight.erase(input);
            }
          }
          // Dependencies as TaskDeps: up to three inline, no allocation per task.
          auto compute = [&](InternedName name, Seconds duration, int kernels, TaskDeps deps) {
            Task task{name, TaskKind::compute, phase, duration, -1, std::move(deps)};
            if (!slot.forward) task.workspace = mem.workspace;
            task.kernels = kernels;
            // Megatron's batched p2p exchanges end in torch.cuda.synchronize() (2021's
            // p2p_communication.py; megatron-core's batch_p2p_sync, on by default): the host
            // issues the pass that follows an exchange only once the device is idle.
            task.host_sync = host_waited;
            host_waited = false;
            return push(kCompute, std::move(task));
          };
          auto tensor = [&](InternedName name, collective::Op op, Bytes size, TaskDeps deps, int repeat = 1) {
            return push(kTensor, {name, TaskKind::collective, phase, 0, tp_call(name, op, size, repeat), std::move(deps)});
          };
          if (slot.part == Part::weight) {
            // A deferred W (ZB-H1): the chunk's layers' weight-gradient GEMMs, then on the last
            // stage the output layer's; no collective, no exchange.
            for (long l = 0; l < chunk_layers(slot.chunk); ++l) {
              previous = compute(names.layers[static_cast<std::size_t>(l)], lw, lw_kernels, ready);
              ready = {previous};
            }
            if (last) previous = compute(names.head, head_wgrad, head_wgrad_kernels, ready);
            comp.back().release = mem.queued_weight_gradients_per_micro_batch;
            cursor = {previous};
            continue;
          }
          // Context parallelism: a pass's attention as ring steps (context_parallel.hpp), named in
          // push order from `labels`; returns what the pass's successor waits for, its last
          // compute task first. Step i's transfer leaves once step i - 1's has arrived (backward:
          // and step i - 1's gradient is added in); step i's attention needs step i - 1's KV.
          auto ring_pass = [&](const CostedRing& r, const InternedName* labels, std::vector<TaskRef> deps) {
            std::size_t n = 0;
            if (!r.pass.before.empty()) deps = {compute(labels[n++], r.before, r.before_kernels, deps)};
            // cp_comm_type a2a and all_gather: the calls one after another on the CP stream around
            // the one step (context_parallel.hpp).
            auto cp_collectives = [&](collective::Op op, const std::vector<Bytes>& sizes, std::vector<TaskRef> after) {
              for (const Bytes size : sizes) {
                const InternedName& name = labels[n++];
                after = {push(kCpRing, {name, TaskKind::collective, phase, 0,
                                        request({CallRequest::Group::context, name, op, size}), after})};
              }
              return after;
            };
            if (!r.pass.a2a_before.empty()) deps = cp_collectives(collective::Op::alltoall, r.pass.a2a_before, deps);
            if (!r.pass.gather_before.empty()) deps = cp_collectives(collective::Op::all_gather, r.pass.gather_before, deps);
            TaskRef transfer{-1, -1}, block{-1, -1};
            for (std::size_t i = 0; i < r.steps.size(); ++i) {
              TaskRef sent{-1, -1};
              if (r.pass.ring_bytes[i] > 0) {
                std::vector<TaskRef> after = i == 0 ? deps : std::vector<TaskRef>{};
                if (transfer.stream >= 0) after.push_back(transfer);
                if (i > 0 && r.pass.transfer_after_previous_step) after.push_back(block);
                const InternedName& name = labels[n++];
                sent = push(kCpRing, {name, TaskKind::collective, phase, 0,
                                      request({CallRequest::Group::context, name, collective::Op::ring_exchange,
                                               r.pass.ring_bytes[i]}),
                                      after});
              }
              std::vector<TaskRef> ready_step = i == 0 ? deps : std::vector<TaskRef>{block};
              if (i > 0 && transfer.stream >= 0) ready_step.push_back(transfer);
              block = compute(labels[n++], r.steps[i], r.step_kernels[i], ready_step);
              if (sent.stream >= 0) transfer = sent;
            }
            deps = {block};
            if (r.pass.transfer_after_previous_step && transfer.stream >= 0) deps.push_back(transfer);
            if (!r.pass.a2a_after.empty()) deps = cp_collectives(collective::Op::alltoall, r.pass.a2a_after, deps);
            if (!r.pass.scatter_after.empty())
              deps = cp_collectives(collective::Op::reduce_scatter, r.pass.scatter_after, deps);
            if (!r.pass.after.empty()) deps = {compute(labels[n++], r.after, r.after_kernels, deps)};
            TRAINSIM_CHECK(n == r.labels.size(), "a ring pass pushes one task per name");
            return deps;
          };
          // torchtitan's CP: a pass's SDPA as PyTorch's ring (torch_ring_attention.hpp), as the
          // sharded schedule runs it: the K, V all-gather (or rotations) and the dK, dV rotations
          // on the CP stream, each backward step's update of the dK, dV in flight a task of its own.
          auto torch_ring_pass = [&](const CostedTorchRing& r, const InternedName* labels, std::vector<TaskRef> deps) {
            std::size_t n = 0;
            auto piece = [&](RingPiece which, std::size_t i, std::vector<TaskRef> after) {
              const RingPieceCost& cost = which == RingPiece::before  ? r.costs.before
                                          : which == RingPiece::after ? r.costs.after
                                          : which == RingPiece::step  ? r.costs.steps[i]
                                                                      : r.costs.accumulations[i];
              return compute(labels[n++], cost.duration, cost.kernels, std::move(after));
            };
            auto call = [&](collective::Op op, Bytes size, std::vector<TaskRef> after) {
              const InternedName& name = labels[n++];
              return push(kCpRing, {name, TaskKind::collective, phase, 0,
                                     request({CallRequest::Group::context, name, op, size}), std::move(after)});
            };
            const TaskRef end = push_torch_ring(r.pass, std::move(deps), piece, call);
            TRAINSIM_CHECK(n == r.labels.size(), "a ring pass pushes one task per name");
            return std::vector<TaskRef>{end};
          };
          // tp_comm_overlap or Megatron's sequence parallelism: one layer pass's pieces as tasks,
          // named in push order; returns what the pass's successor waits for, its last compute
          // task first.
          auto overlapped_pass = [&](const std::vector<CostedPiece>& pieces, const std::vector<InternedName>& labels,
                                     std::vector<TaskRef> deps) {
            std::size_t n = 0;
            // One ring step: every TP rank sends the shard it holds to the next and receives
            // the previous rank's, one call over the TP group (collective::Op::ring_exchange),
            // so the group's ranks keep identical programs and fold into one class.
            auto ring_step = [&](Bytes chunk, TaskDeps after, int repeat = 1) {
              const InternedName& name = labels[n++];
              return push(kRing, {name, TaskKind::collective, phase, 0,
                                  tp_call(name, collective::Op::ring_exchange, chunk, repeat), std::move(after)});
            };
            // Coarse (plan::TpOverlapModel): the k - 1 steps of a ring, or the first k - 1
            // chunks' reduce-scatters, one call repeated k - 1 times (its plan that of one step,
            // its bytes and latency k - 1 times), beside one task for the k - 1 GEMM chunks they
            // overlap. Uncontended, with steps of r and chunks of g, the per-step pass's last
            // chunk ends at the latest j r + (k - j) g over j < k, linear in j so at an end:
            // max(k g, (k - 1) r + g), when the coarse pass's last chunk ends too (it starts at
            // max((k - 1) g, (k - 1) r)); the reduce-scatters of s likewise end at
            // max(g + k s, k g + s) both ways. Contended, the repeats share links as one flow.
            const bool coarse = p.tp_overlap_model == plan::TpOverlapModel::coarse;
            const int repeats = static_cast<int>(tp - 1);
            for (const CostedPiece& c : pieces) {
              // The userbuffers' wire bytes: FP8 or bf16 per buffer (tp_comm_overlap.hpp).
              const Bytes gathered_bytes = activation_elements * c.piece.gather_bytes;
              const Bytes scattered_bytes = activation_elements * c.piece.scatter_bytes;
              switch (c.piece.kind) {
                case OverlapPiece::Kind::compute:
                  if (!c.ring.empty()) {
                    deps = ring_pass(c.ring.front(), &labels[n], deps);
                    n += c.ring.front().labels.size();
                  } else {
                    deps = {compute(labels[n++], c.seconds[0], c.kernels[0], deps)};
                  }
                  break;
                case OverlapPiece::Kind::ring_gather: {
                  // Chunk 0 is the rank's own shard; at step i it forwards the shard it received
                  // at step i - 1 while the GEMM runs on it.
                  if (coarse) {
                    const TaskRef leading =
                        compute(labels[n++], c.seconds[0] * repeats, c.kernels[0] * repeats, deps);
                    const TaskRef received = ring_step(gathered_bytes / static_cast<double>(tp), deps, repeats);
                    deps = {compute(labels[n++], c.seconds[0], c.kernels[0], {leading, received})};
                    break;
                  }
                  TaskRef gemm = compute(labels[n++], c.seconds[0], c.kernels[0], deps);
                  TaskRef received{-1, -1};
                  for (long i = 1; i < tp; ++i) {
                    received = ring_step(gathered_bytes / static_cast<double>(tp), i == 1 ? TaskDeps(deps) : TaskDeps{received});
                    gemm = compute(labels[n++], c.seconds[0], c.kernels[0], {gemm, received});
                  }
                  deps = {gemm};
                  break;
                }
                case OverlapPiece::Kind::pipelined_scatter: {
                  // Each chunk's output rows are reduce-scattered while the next chunk computes;
                  // what follows needs the whole result.
                  const Bytes chunk_bytes = scattered_bytes / static_cast<double>(tp);
                  if (coarse) {
                    const TaskRef first_chunk = compute(labels[n++], c.seconds[0], c.kernels[0], deps);
                    tensor(labels[n++], collective::Op::reduce_scatter, chunk_bytes, {first_chunk}, repeats);
                    const TaskRef rest = compute(labels[n++], c.seconds[0] * repeats, c.kernels[0] * repeats, {first_chunk});
                    deps = {rest, tensor(labels[n++], collective::Op::reduce_scatter, chunk_bytes, {rest})};
                    break;
                  }
                  TaskRef gemm{-1, -1}, scattered{-1, -1};
                  for (long i = 0; i < tp; ++i) {
                    gemm = compute(labels[n++], c.seconds[0], c.kernels[0], i == 0 ? TaskDeps(deps) : TaskDeps{gemm});
                    scattered = tensor(labels[n++], collective::Op::reduce_scatter, chunk_bytes, {gemm});
                  }
                  deps = {gemm, scattered};
                  break;
                }
                case OverlapPiece::Kind::gather: {
                  const TaskRef gathered = tensor(labels[n++], collective::Op::all_gather, gathered_bytes, deps);
                  deps = {compute(labels[n++], c.seconds[0], c.kernels[0], {gathered})};
                  break;
                }
                case OverlapPiece::Kind::scatter: {
                  const TaskRef gemm = compute(labels[n++], c.seconds[0], c.kernels[0], deps);
                  deps = {gemm, tensor(labels[n++], collective::Op::reduce_scatter, scattered_bytes, {gemm})};
                  break;
                }
                case OverlapPiece::Kind::bulk: {
                  // The column-parallel linear's input (sequence-sharded) is re-gathered for its
                  // weight gradient beside the data-gradient GEMM, whose output is then
                  // reduce-scattered beside the weight-gradient GEMM.
                  const TaskRef gathered = tensor(labels[n++], collective::Op::all_gather, gathered_bytes, deps);
                  const TaskRef dgrad = compute(labels[n++], c.seconds[0], c.kernels[0], deps);
                  const TaskRef scattered = tensor(labels[n++], collective::Op::reduce_scatter, scattered_bytes, {dgrad});
                  const TaskRef wgrad = compute(labels[n++], c.seconds[1], c.kernels[1], {dgrad, gathered});
                  deps = {wgrad, scattered};
                  break;
                }
              }
            }
            TRAINSIM_CHECK(n == labels.size(), "an overlapped pass pushes one task per name");
            return deps;
          };
          // Gradients of the chunk's last micro-batch go to the data-parallel buckets as the
          // backward produces them (every micro-batch's under ZeRO-2).
          const bool last_micro_batch = o == last_backward[static_cast<std::size_t>(slot.chunk)];
          const bool reduce_now = overlap && !slot.forward && (every_micro_batch || last_micro_batch);
          // Chunk 0's gather with the optimizer step: issued at the end of the step before (here
          // the end of this one, which the step's time includes), not waited for again here.
          const bool gathers_here = overlap_param_gather && o == first_forward[static_cast<std::size_t>(slot.chunk)] &&
                                    !(gather_with_optimizer && slot.chunk == 0);
          if (gathers_here && aligned_gathers && slot.chunk + 1 >= 2 && slot.chunk + 1 < v)
            gather_up_to(slot.chunk + 1, param_buckets[static_cast<std::size_t>(slot.chunk + 1)].params.size(), ready);
          if (gathers_here && first) await_parameters(slot.chunk, 0, ready);  // the embedding is in layer 0's bucket
          if (slot.forward && first) {
            // Each TP rank looks up its vocabulary slice and the partial embeddings are summed
            // (VocabParallelEmbedding.forward: reduce_from_tensor_model_parallel_region; under
            // sequence parallelism megatron/core reduce-scatters instead when there is no
            // position table, else all-reduces and keeps its sequence slice).
            previous = compute(names.embedding, emb_f, emb_f_kernels, ready);
            ready = {previous};
            if (tp > 1) {
              const bool scatter = sequence_parallel && !s.learned_positions;
              previous = tensor(names.tp_embedding, scatter ? collective::Op::reduce_scatter : collective::Op::all_reduce,
                                activation, ready);
              ready = {previous};
            }
          }
          if (!slot.forward && vs < virtual_stages - 1 && restore_output)
            ready = {tensor(names.tp_restore_output, collective::Op::all_gather, activation, ready)};
          if (!slot.forward && last) {
            // The output projection's input gradient is summed over the TP group (2021:
            // parallel_lm_logits' copy_to_tensor_model_parallel_region; megatron/core: the
            // column-parallel output layer), reduce-scattered under sequence parallelism, whose
            // weight gradient also re-gathers the input (see the layers below).
            // ZB-H1's B leaves the output layer's weight gradient to its W, as the deferral does.
            const bool deferred = deferred_head_wgrad(slot.micro_batch) || slot.part == Part::input;
            if (sequence_parallel && !deferred) tensor(names.tp_head_regather, collective::Op::all_gather, activation, ready);
            const Seconds head_accumulation = accumulates(slot) ? accumulation(head_params, slot.micro_batch) : 0;
            const int head_accumulation_kernels = accumulates(slot) ? 1 : 0;
            previous = deferred ? compute(names.head, head_b - head_wgrad + head_accumulation,
                                          head_b_kernels - head_wgrad_kernels + head_accumulation_kernels, ready)
                                : compute(names.head, head_b + head_accumulation, head_b_kernels + head_accumulation_kernels, ready);
            // What the deferral keeps until its GEMM in the flush (memory/rank_memory.cpp).
            if (deferred) comp.back().alloc = mem.deferred_head_wgrad_per_micro_batch;
            ready = {previous};
            if (tp > 1) {
              previous = tensor(names.tp_head, sequence_parallel ? collective::Op::reduce_scatter : collective::Op::all_reduce,
                                activation, ready);
              ready = {previous};
            }
            if (reduce_now) pending += head_params;  // joins the first layer's bucket
          }
          // The chunk's layers, each followed by its TP all-reduce (with sequence parallelism:
          // preceded by an all-gather and followed by a reduce-scatter).
          std::vector<TaskRef> offloaded;  // this slot's copies to host, by layer
          const long slot_layers = chunk_layers(slot.chunk);
          for (long l = 0; l < slot_layers; ++l) {
            // A layer pass all-reduces twice, after attention and after the MLP (Megatron's
            // mappings.py: one torch.distributed.all_reduce per region, each of b x s x h);
            // backward with recompute also redoes the forward's two. Each is its own call of its
            // own size: NCCL's rate depends on the size (84 MB at h 20480 gets less of the
            // fabric than the 168-336 MB of the calls summed), and each pays its latency. They
            // follow the layer's compute here, which changes nothing on the critical path: in
            // Megatron every one of them blocks the compute after it.
            // torchtitan's op policy saves no all-reduce output: its recompute runs them again.
            // Under sequence parallelism it saves the reduce-scatters' outputs and re-gathers,
            // which the backward's re-gather below stands for.
            const bool recomputes_tp_calls = full_recompute || (op_recompute && !sequence_parallel);
            const int tp_calls_per_pass = 2 * (recomputes_tp_calls && !slot.forward ? 2 : 1);
            if (sequence_parallel && !tp_overlap && !sp_pieces) {
              // Megatron-SP around a whole pass (with context parallelism, whose ring cuts the
              // pass at its attention, or a layer without Megatron's four linears; otherwise
              // sp_pieces cuts it at the linears): the attention and MLP inputs are all-gathered
              // from the sequence shards (in backward: the output gradients), the same bytes as
              // the all-reduce's second half.
              for (int k = 0; k < tp_calls_per_pass; ++k) {
                const int c = tp_call(names.tp_gather, collective::Op::all_gather, sequence_gather);
                ready = {push(kTensor, {names.tp_gather, TaskKind::collective, phase, 0, c, ready})};
              }
              if (!slot.forward) {
                // The column-parallel QKV and first MLP linears keep only their sequence-sharded
                // input, so their weight gradients all-gather it again, launched before and
                // overlapped with the input-gradient GEMM (Korthikanti et al. 2022, 4.2.2;
                // megatron/core/tensor_parallel/layers.py
                // LinearWithGradAccumulationAndAsyncCommunication.backward): b x s x h each, on
                // the TP stream beside the pass (one task: the overlap window is the pass, not
                // just its input-gradient GEMMs). The pass's reduce-scatter, next on the stream,
                // waits for it as Megatron's handle.wait() does.
                tensor(names.tp_regather, collective::Op::all_gather, 2 * sequence_gather, ready);
              }
            }
            if (offload && slot.forward && l >= 2) ready.push_back(offloaded[static_cast<std::size_t>(l - 2)]);
            if (offload && !slot.forward) {
              // Prefetched one layer ahead: starts once the compute task two before this pass is done.
              std::vector<TaskRef> fdeps;
              if (comp.size() >= 2) fdeps.push_back({kCompute, static_cast<int>(comp.size()) - 2});
              Task fetch{names.copies[static_cast<std::size_t>(l)], TaskKind::host_copy,
                         Phase::offload, 0, -1, std::move(fdeps)};
              fetch.copy_bytes = layer_input;
              fetch.copy_direction = CopyDirection::to_device;
              ready.push_back(push(kCopy, std::move(fetch)));
            }
            if (gathers_here) await_parameters(slot.chunk, l, ready);
            if (partial_recompute && !slot.forward) {
              // In Megatron autograd re-runs the checkpointed core attention when the backward
              // reaches it (after the MLP's and the output projection's gradients); on the one
              // compute stream only the sum matters, and it needs no collective of its own.
              // PyTorch's selective checkpointing re-runs the block's unsaved ops when its
              // backward starts.
              previous = compute(names.recomputes[static_cast<std::size_t>(l)], lr, lr_kernels, ready);
              ready = {previous};
            }
            if (tp_overlap || sp_pieces) {
              ready = overlapped_pass(slot.forward ? forward_pieces : backward_pieces, names.overlap, ready);
              previous = ready.front();
              if (accumulates(slot)) {
                // Megatron 2021's autograd (or FSDP2's) accumulation after the pass (layer_b's ops have none).
                previous = compute(names.layers[static_cast<std::size_t>(l)], layer_accumulation_of(slot),
                                   layer_accumulation_kernels, ready);
                ready = {previous};
              }
            } else if (torch_cp) {
              const InternedName* labels = names.ring[static_cast<std::size_t>(l)].data();
              if (!slot.forward && full_recompute) {
                ready = torch_ring_pass(torch_forward.front(), labels, ready);
                labels += torch_forward.front().labels.size();
              }
              ready = torch_ring_pass((slot.forward ? torch_forward : torch_backward).front(), labels, ready);
              previous = ready.front();
              if (accumulates(slot)) {
                // FSDP2's post-backward accumulation into the fp32 gradient (layer_b's ops have none).
                previous = compute(names.layers[static_cast<std::size_t>(l)], layer_accumulation_of(slot),
                                   layer_accumulation_kernels, ready);
                ready = {previous};
              }
            } else if (context_parallel) {
              const InternedName* labels = names.ring[static_cast<std::size_t>(l)].data();
              if (!slot.forward && full_recompute) {
                ready = ring_pass(ring_forward.front(), labels, ready);
                labels += ring_forward.front().labels.size();
              }
              ready = ring_pass((slot.forward ? ring_forward : ring_backward).front(), labels, ready);
              previous = ready.front();
            } else {
              const bool adds = accumulates(slot);
              const bool input_only = slot.part == Part::input;
              previous = compute(names.layers[static_cast<std::size_t>(l)],
                                 slot.forward ? lf : lb - (input_only ? lw : 0) + (adds ? layer_accumulation_of(slot) : 0),
                                 slot.forward ? lf_kernels
                                              : lb_kernels - (input_only ? lw_kernels : 0) +
                                                    (adds ? layer_accumulation_kernels : 0),
                                 ready);
              ready = {previous};
            }
            if (offload && slot.forward) {
              Task copy{names.copies[static_cast<std::size_t>(l)], TaskKind::host_copy,
                        Phase::offload, 0, -1, {previous}};
              copy.copy_bytes = layer_input;
              copy.copy_direction = CopyDirection::to_host;
              offloaded.push_back(push(kCopy, std::move(copy)));
            }
            if (reduce_now) {
              pending += layer_params;
              // On the first virtual stage the embedding's gradients join the last bucket.
              const bool ends_chunk = l == slot_layers - 1;
              if (!(ends_chunk && first) &&
                  ((!one_bucket(slot.chunk) && (p.bucket_elements <= 0 || pending >= p.bucket_elements)) || ends_chunk)) {
                sync_gradients(pending, previous, last_micro_batch);
                pending = 0;
              }
            }
            if (tp > 1 && !tp_overlap && !sp_pieces)
              for (int k = 0; k < tp_calls_per_pass; ++k) {
                const int c = tp_call(names.tp_reduce,
                                      sequence_parallel ? collective::Op::reduce_scatter : collective::Op::all_reduce,
                                      activation);
                previous = push(kTensor, {names.tp_reduce, TaskKind::collective, phase, 0, c, ready});
                ready = {previous};
              }
          }
          if (reduce_now && slot_layers == 0 && !first && pending > 0) {
            // A chunk with no layer (the head's alone): its gradients are one bucket.
            sync_gradients(pending, previous, last_micro_batch);
            pending = 0;
          }
          if (amax_reduction) {
            // The chunk's fp8_autocast exits (forward) or its first FP8 module's backward ends:
            // reduce_and_update_fp8_tensors on the compute stream's path.
            const long rank_layers = stage_layers;
            const auto concat = model::te_amax_concat_op(rank_layers, slot.forward);
            previous = compute(names.amax_concat, model::op_duration(concat, in.device), concat.kernels, ready);
            if (amax_all_reduce) {
              const int c = request({CallRequest::Group::amax, names.amax_reduce, collective::Op::all_reduce,
                                     model::te_amax_buffer_bytes(rank_layers, slot.forward)});
              previous = push(kAmax, {names.amax_reduce, TaskKind::collective, phase, 0, c, {previous}});
            }
            const auto update = model::te_amax_update_op(rank_layers, slot.forward);
            previous = compute(names.amax_update, model::op_duration(update, in.device), update.kernels, {previous});
            ready = {previous};
          }
          if (slot.forward && last) {
            // Output projection and loss; under sequence parallelism the column-parallel output
            // layer first all-gathers its input (megatron/core ColumnParallelLinear).
            if (sequence_parallel) {
              previous = tensor(names.tp_head, collective::Op::all_gather, activation, ready);
              ready = {previous};
            }
            previous = compute(names.head, head_f, head_f_kernels, ready);
            ready = {previous};
            if (tp > 1)
              for (const InternedName& call : names.tp_loss) {
                previous = tensor(call, collective::Op::all_reduce, loss_bytes, ready);
                ready = {previous};
              }
            if (p.megatron_step_syncs && replicas > 1) {
              // loss_func (pretrain_gpt.py) averages the micro-batch's loss over the data-parallel
              // group for logging (megatron/utils.py average_losses_across_data_parallel_group: one
              // fp32 all-reduce), inside forward-compute's timer, which waits for it.
              const int call = group_call(true, names.loss_reduce.str() + stage_tag, collective::Op::all_reduce, 4.0);
              previous = push(kReduce, {names.loss_reduce, TaskKind::collective, Phase::forward, 0, call, ready});
              ready = {previous};
            }
          }
          if (!slot.forward && first) {
            // The embedding's backward has no collective, but under sequence parallelism its
            // output gradient is all-gathered first (the backward of the scatter).
            if (sequence_parallel) {
              previous = tensor(names.tp_embedding, collective::Op::all_gather, activation, ready);
              ready = {previous};
            }
            previous = compute(names.embedding, emb_b + (accumulates(slot) ? accumulation(embedding_params, slot.micro_batch) : 0),
                               emb_b_kernels + (accumulates(slot) ? 1 : 0), ready);
            ready = {previous};
            if (reduce_now) {
              sync_gradients(pending + embedding_params, previous, last_micro_batch);
              pending = 0;
            }
          }
          // A forward's stored activations are allocated when it starts and freed by its backward.
          const Bytes stored = mem.activations_per_micro_batch / static_cast<double>(v);
          if (slot.forward)
            comp[slot_start].alloc = stored;
          else
            comp.back().release = stored;
          // A split backward (ZB-H1) leaves its W's inputs and output gradients; the W frees them.
          if (slot.part == Part::input) comp.back().alloc += mem.queued_weight_gradients_per_micro_batch;
          // Megatron 2021's fp16 .grad: made during the stage's first backward as its activations
          // are freed; counted whole from the slot after it (memory/rank_memory.cpp).
          if (fp16_gradients_pending) {
            comp[slot_start].alloc += mem.step_fp16_gradients;
            fp16_gradients_pending = false;
          }
          if (!slot.forward && !backward_seen) {
            backward_seen = true;
            fp16_gradients_pending = mem.step_fp16_gradients > 0;
          }
          if (!slot.forward && hp_grad_accumulation) {
            // update_hp_grads: two kernels (cast, add_) per parameter tensor.
            previous = compute(names.accumulate, accumulate_seconds, 2 * stage_tensors, {previous});
          }
          cursor = {previous};
        }
        // The step's last exchange (a stage's last input gradient going back) is waited for
        // before train_step reduces the gradients.
        TRAINSIM_CHECK(cursor.size() == 1, "a step ends with one task to wait for");
        previous = cursor.front();
        if (zero_bubble_v && (zbv_last_send[0].stream >= 0 || zbv_last_send[1].stream >= 0)) {
          // ZB-V's runtime waits for every send handle before finalize_model_grads (678c9996
          // ZeroBubbleVPipeScheduler.run): the compute stream holds for each direction's last send.
          TaskDeps deps{previous};
          for (const TaskRef& send : zbv_last_send)
            if (send.stream >= 0) deps.push_back(send);
          Task wait{"wait for the step's sends", TaskKind::compute, Phase::backward, 0, -1, std::move(deps)};
          wait.kernels = 0;
          previous = push(kCompute, std::move(wait));
        }
        if (!drain_wgrad.empty()) {
          // The deferred output-layer weight gradients, after the stage's last backward and before
          // finalize_model_grads (schedules.py finish_embedding_wgrad_compute): one GEMM each,
          // under sequence parallelism after an all-gather of its input, double-buffered (utils.py
          // drain_embedding_wgrad_compute: the first gather waited for at once, gather k + 1
          // issued before GEMM k and waited for after it, so the NCCL stream starts gather k once
          // GEMM k - 2, the compute issued before it, is done). The data-parallel reduction of
          // the head's bucket is not held back for them: Megatron dispatched it when the last
          // micro-batch's backward hook fired.
          const TaskRef before = previous;
          std::vector<TaskRef> gemms;
          for (std::size_t k = 0; k < drain_wgrad.size(); ++k) {
            TaskDeps deps{k == 0 ? before : gemms.back()};
            if (sequence_parallel) {
              const TaskRef issued_after = k >= 2 ? gemms[k - 2] : before;
              deps.push_back(push(kTensor, {drain_gather[k], TaskKind::collective, Phase::backward, 0,
                                            tp_call(drain_gather[k], collective::Op::all_gather, activation),
                                            {issued_after}}));
            }
            Task gemm{drain_wgrad[k], TaskKind::compute, Phase::backward, head_wgrad, -1, std::move(deps)};
            gemm.workspace = mem.workspace;
            gemm.release = mem.deferred_head_wgrad_per_micro_batch;
            gemm.kernels = head_wgrad_kernels;
            gemms.push_back(push(kCompute, std::move(gemm)));
          }
          previous = gemms.back();
        }
        // The stage's gradients (after the flush unless reduced during the last backward), then
        // the tied word embedding's all-reduce between the first and last stage, then the
        // optimizer on the rank's shard and, under ZeRO-1, the all-gather of the updated
        // parameters: neither overlaps compute (source 002, DeepSpeed, Megatron's distributed
        // optimizer without overlap_param_gather).
        const double params = stage_params;
        // The tied word embedding's gradient, the whole vocab/tp x h table in the gradient dtype,
        // all-reduced between the first and last stage: Megatron after the data-parallel
        // reduction, before the optimizer (2021 megatron/training.py train_step; megatron/core
        // finalize_model_grads -> _allreduce_word_embedding_grads, after finish_grad_sync);
        // DeepSpeed's TrainSchedule before it (its last step ends ReduceTiedGrads, ReduceGrads,
        // OptimizerStep; _exec_reduce_tied_grads all-reduces the fp32 _hp_grad under bf16).
        const bool ties = tied_copy && (stage == 0 || stage == pp - 1);
        auto reduce_tied = [&](std::vector<TaskRef> deps) {
          // Under the BF16_Optimizer the tied gradient is its fp32 _hp_grad, all-reduced as it is
          // (pipe/engine.py 246-248 at v0.6.2 and 56c522386), not through allreduce_bucket's cast.
          const double tied_bytes = hp_grad_accumulation ? 4.0 : p.gradient_wire_bytes;
          const int call = request({CallRequest::Group::embedding, "word-embedding all-reduce", collective::Op::all_reduce,
                                    word_embedding * tied_bytes});
          return push(kReduce, {"word-embedding all-reduce", TaskKind::collective, Phase::gradient_sync, 0, call, std::move(deps)});
        };
        if (ties && deepspeed) previous = reduce_tied({previous});
        if (!overlap) {
          // Megatron's local DDP flattens and divides the gradients before its all-reduce and
          // copies them back after it, on the compute stream, whatever the data-parallel size
          // (2021 training.py train_step calls allreduce_gradients whenever --DDP-impl local).
          std::vector<model::Operation> ddp_passes;
          if (p.gradient_buffers == plan::GradientBuffers::megatron_local_ddp)
            ddp_passes = model::megatron_local_ddp_ops(
                params, p.gradient_wire_bytes,
                plan::megatron_fp32_main_grad_buffer(p.gradient_buffers, p.gradient_wire_bytes));
          TRAINSIM_CHECK(mem.step_gradient_copy == 0 || ddp_passes.size() > 1,
                         "Megatron's flattened gradient copy needs its flatten and copy-back passes");
          if (!ddp_passes.empty()) {
            Task before{ddp_passes[0].name, TaskKind::compute, Phase::gradient_sync,
                        model::op_duration(ddp_passes[0], in.device), -1, {previous}};
            before.kernels = ddp_passes.size() > 1 ? 2 : 1;  // torch.cat, then the in-place divide
            // timers('backward-params-all-reduce').start() synchronises first (training.py train_step).
            before.host_sync = p.megatron_step_syncs;
            // The flattened copy (memory/rank_memory.cpp), and the fp16 gradients if the
            // stage's first backward was its last slot.
            before.alloc = mem.step_gradient_copy + (fp16_gradients_pending ? mem.step_fp16_gradients : 0.0);
            fp16_gradients_pending = false;
            previous = push(kCompute, std::move(before));
          }
          if (fsdp_stages) {
            // Each unit's post_backward in turn after the stage's last backward (the header): the
            // chunks' layers in backward order, the embedding with the first stage's layer 0.
            for (long c = v - 1; c >= 0; --c)
              for (long l = chunk_layers(c) - 1; l >= 0; --l) {
                const bool ends = plan::virtual_stage_of(p, stage, c) == virtual_stages - 1 && l == chunk_layers(c) - 1;
                const bool starts = c == 0 && stage == 0 && l == 0;
                sync_gradients(layer_params + (ends ? head_params : 0) + (starts ? embedding_params : 0), previous, true);
              }
          } else {
            sync_gradients(params, previous, true);
          }
          if (ddp_passes.size() > 1) {
            const TaskRef reduced = synced.stream >= 0 ? synced : previous;
            Task after{ddp_passes[1].name, TaskKind::compute, Phase::gradient_sync,
                       model::op_duration(ddp_passes[1], in.device), -1, {reduced}};
            after.kernels = stage_tensors;  // one copy_ per parameter tensor
            after.release = mem.step_gradient_copy;
            synced = push(kCompute, std::move(after));
          }
        }
        std::vector<TaskRef> step_deps{previous};
        if (synced.stream >= 0) step_deps = overlap ? std::vector<TaskRef>{previous, synced} : std::vector<TaskRef>{synced};
        if (ties && !deepspeed) step_deps = {reduce_tied(step_deps)};
        Seconds optimizer_seconds = optimizer_per_param * (params / static_cast<double>(shard));
        int optimizer_kernels = 1;
        if (p.optimizer_implementation == plan::OptimizerImplementation::torch_foreach || p.clip_grad_norm) {
          // torch.nn.utils.clip_grad_norm_ and torch.optim's foreach AdamW over the rank's shard,
          // as the sharded schedule runs them (torchtitan's train step).
          const auto step_ops = model::torch_step_ops(params / static_cast<double>(shard), p.clip_grad_norm,
                                                      p.optimizer_implementation == plan::OptimizerImplementation::torch_foreach);
          optimizer_seconds = model::ops_duration(step_ops, in.device);
          optimizer_kernels = static_cast<int>(step_ops.size());
        }
        bool optimizer_host_sync = false;
        auto scalar_all_reduce = [&](const char* name, TaskRef after) {
          const int call = request({CallRequest::Group::model_parallel, name, collective::Op::all_reduce, 4.0});
          return push(kReduce, {name, TaskKind::collective, Phase::optimizer, 0, call, {after}});
        };
        if (hp_grad_accumulation) {
          // BF16_Optimizer.step (DeepSpeed v0.6.2): the global L2 norm over every fp32 gradient
          // of the rank, one norm and .item() per tensor, the sum all-reduced over the
          // model-parallel group and read on the host before Adam steps the rank's shard.
          Task norm{"optimizer gradient norm", TaskKind::compute, Phase::optimizer,
                    model::op_duration(model::deepspeed_bf16_gradient_norm_op(params), in.device), -1, step_deps};
          norm.kernels = stage_tensors;
          norm.host_sync = true;
          TaskRef last = push(kCompute, std::move(norm));
          if (model_parallel_scalars) last = scalar_all_reduce("gradient-norm all-reduce", last);
          step_deps = {last};
          optimizer_host_sync = true;
        }
        // megatron_fp16_params_copy: the fp32 -> fp16 parameter copy after Adam, its own task.
        bool megatron_fp16_params_copy = false;
        Seconds params_copy_seconds = 0;
        if (megatron_optimizer) {
          // Float16OptimizerWithFloat16Params.step (Megatron-LM 6985e58 megatron/optimizer/
          // optimizer.py): gradients to fp32, unscaled and checked, the inf flag all-reduced and
          // read on the host (.item()); the L2 norm, all-reduced and read; Adam; the fp16
          // parameter copy. Under megatron_step_syncs each phase sits between its timer's two
          // torch.cuda.synchronize() calls ('optimizer', then 'optimizer-copy-to-main-grad',
          // '-unscale-and-check-inf', '-clip-main-grad', '-copy-main-to-model-params').
          const auto passes = model::megatron_fp16_optimizer_ops(params / static_cast<double>(shard));
          auto seconds = [&](std::size_t first, std::size_t last) {
            Seconds sum = 0;
            for (std::size_t i = first; i <= last; ++i) sum += model::op_duration(passes[i], in.device);
            return sum;
          };
          // _copy_model_grads_to_main_grads: a Python loop of one .float() per parameter tensor,
          // each a bare tensor call (the device profile's eager_copy_call of host time).
          Task to_fp32{"optimizer grad to fp32", TaskKind::compute, Phase::optimizer, seconds(0, 0), -1, step_deps};
          to_fp32.kernels = stage_tensors;
          to_fp32.host_per_kernel = in.device.eager_copy_call;
          to_fp32.host_sync = p.megatron_step_syncs;
          // Each .float() is made before its fp16 source is dropped: net, the fp32 grads less
          // the fp16 ones (memory/rank_memory.cpp).
          to_fp32.alloc = std::max(0.0, mem.step_fp32_gradients - mem.step_fp16_gradients);
          const TaskRef copied = push(kCompute, std::move(to_fp32));
          // torch._amp_foreach_non_finite_check_and_unscale_: one multi-tensor call.
          Task unscale{"optimizer unscale and inf check", TaskKind::compute, Phase::optimizer, seconds(1, 1), -1, {copied}};
          unscale.kernels = 1;
          unscale.host_sync = p.megatron_step_syncs;
          TaskRef last = push(kCompute, std::move(unscale));
          if (model_parallel_scalars) last = scalar_all_reduce("found-inf all-reduce", last);
          // Each scalar is read on the host (.item()) before the host issues what follows.
          Task norm{"optimizer gradient norm", TaskKind::compute, Phase::optimizer, seconds(2, 2), -1, {last}};
          norm.kernels = 1;
          norm.host_sync = true;
          last = push(kCompute, std::move(norm));
          if (model_parallel_scalars) last = scalar_all_reduce("gradient-norm all-reduce", last);
          step_deps = {last};
          optimizer_seconds = seconds(3, 3);  // apex FusedAdam
          optimizer_kernels = 1;
          optimizer_host_sync = true;
          // _copy_main_params_to_model_params -> _multi_tensor_copy_this_to_that tests
          // `if overflow_buf:` on a CUDA tensor (a .item()) before its multi_tensor_scale: the host
          // waits for Adam first, every step.
          megatron_fp16_params_copy = true;
          params_copy_seconds = seconds(4, 4);
        }
        if (gather_with_optimizer) {
          // Chunk 0's optimizer first, then its all-gather beside the other chunks' optimizer.
          const double chunk0 = layer_params * static_cast<double>(chunk_layers(0)) + (stage == 0 ? embedding_params : 0);
          Task first_step{"optimizer step (shard) c0", TaskKind::compute, Phase::optimizer,
                          optimizer_seconds * chunk0 / params, -1, step_deps};
          first_step.kernels = optimizer_kernels;
          first_step.host_sync = optimizer_host_sync;
          const TaskRef stepped0 = push(kCompute, std::move(first_step));
          const int c = group_call(false, "parameter all-gather c0" + stage_tag, collective::Op::all_gather,
                                   chunk0 * p.parameter_wire_bytes);
          push(kReduce, {"parameter all-gather c0", TaskKind::collective, Phase::parameter_sync, 0, c, {stepped0}});
          step_deps = {stepped0};
          optimizer_seconds *= (params - chunk0) / params;
          optimizer_host_sync = false;
        }
        Task step_task{gather_with_optimizer ? "optimizer step (shard) c1+" : shard > 1 ? "optimizer step (shard)" : "optimizer step",
                       TaskKind::compute, Phase::optimizer, optimizer_seconds, -1, step_deps};
        step_task.kernels = optimizer_kernels;
        step_task.host_sync = optimizer_host_sync;
        // The fp32 grads (which replaced the fp16 ones), dropped by the next step's zero_grad:
        // before any forward, so here.
        step_task.release = std::max(mem.step_fp32_gradients, mem.step_fp16_gradients);
        TaskRef stepped = push(kCompute, std::move(step_task));
        if (p.deepspeed_step_work) {
          // BF16_Optimizer.step ends with clear_hp_grads (v0.6.2 bf16_optimizer.py 364, 431-436):
          // zero_() of each flat fp32 gradient group, issued after the all-gather on the compute
          // stream; two groups (Megatron's weight-decay and no-decay parameter groups).
          Task clear{"optimizer clear fp32 gradients", TaskKind::compute, Phase::optimizer,
                     model::op_duration(model::deepspeed_clear_hp_grads_op(params), in.device), -1, {stepped}};
          clear.kernels = 2;
          push(kCompute, std::move(clear));
        }
        if (megatron_fp16_params_copy) {
          Task to_fp16{"optimizer params to fp16", TaskKind::compute, Phase::optimizer, params_copy_seconds, -1, {stepped}};
          to_fp16.kernels = 1;
          to_fp16.host_sync = true;
          stepped = push(kCompute, std::move(to_fp16));
        }
        if (shard > 1 && !overlap_param_gather) {
          const int c = group_call(false, "parameter all-gather" + stage_tag,
                                   collective::Op::all_gather, params * p.parameter_wire_bytes);
          push(kReduce, {"parameter all-gather", TaskKind::collective, Phase::parameter_sync, 0, c, {stepped}});
        }
        if (records) {
          // Each collective task's call came from one request of this rank.
          std::unordered_map<int, std::size_t> request_of_call;
          for (std::size_t j = 0; j < requested.size(); ++j) request_of_call.emplace(requested[j], j);
          for (const auto& st : rp.streams)
            for (const auto& task : st.tasks)
              if (task.kind == TaskKind::collective) {
                const auto it = request_of_call.find(task.collective);
                TRAINSIM_CHECK(it != request_of_call.end(), "task " + task.name + "'s call was not requested");
                request_of_task.push_back(it->second);
              }
        }
        prog.ranks.push_back(std::move(rp));
      }
    // The stages make about as many calls each: room for the rest at once (a 1,024-GPU job makes
    // hundreds of thousands).
    if (stage == 0) prog.collectives.reserve(prog.collectives.size() * static_cast<std::size_t>(pp) + 16);
  }
  std::sort(prog.ranks.begin(), prog.ranks.end(),
            [](const RankProgram& a, const RankProgram& b) { return a.rank < b.rank; });
  return prog;
}

}  // namespace

}  // namespace trainsim::program

#include "program/sharded_schedule.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "model/checkpointing.hpp"
#include "model/encoder_decoder.hpp"
#include "program/activation_allocations.hpp"
#include "model/composer_metric_sync.hpp"
#include "model/composer_metrics.hpp"
#include "model/compute_cost.hpp"
#include "model/fsdp_float8.hpp"
#include "model/host_dispatch.hpp"
#include "program/context_parallel.hpp"
#include "program/memory_bound_task.hpp"
#include "program/torch_ring_attention.hpp"

namespace trainsim::program {

namespace {

using model::ops_duration;

enum Streams { kCompute = 0, kGather = 1, kReduce = 2, kTensor = 3, kCopy = 4 };

/// A run of a pass's kernels that the host issues between two synchronisations inside the pass
/// (model::split_at_host_syncs).
struct SyncedRun {
  Seconds duration = 0;
  int kernels = 0;
  Seconds memory = 0;  ///< its memory-bound part
};

/// One FSDP unit: what it costs to compute on this rank and how many parameters it gathers.
struct Unit {
  std::string name;
  double params = 0;  ///< on one TP rank (the full unit is gathered over the shard group)
  Seconds forward = 0;
  Seconds backward = 0;  ///< including the recomputed forward under checkpointing
  int forward_kernels = 0, backward_kernels = 0;  ///< issued by the host (the same split)
  bool tensor_parallel = false;  ///< ends each pass with a TP all-reduce
  bool layer = false;            ///< a transformer layer (its input is checkpointed / offloaded)
  /// Under torchao's FP8 all-gather: the unit's float8 linear weights (parameters on one TP
  /// rank, and how many nn.Linear weights), cast on the shards and gathered at 1 byte each.
  double fp8_params = 0;
  int fp8_weights = 0;
  /// The memory-bound parts of `forward` and `backward` (Task::memory_bound); the backward's
  /// includes the recomputed forward's, like `backward`.
  Seconds forward_memory = 0, backward_memory = 0;
  /// Where the host synchronises inside a pass (llm-foundry's flash_attn_fn: unpad_input's
  /// torch.nonzero and .item()), the pass's runs in order, summing to `forward` / `backward`;
  /// the backward's are its recomputed forward's, the backward proper in the last. Empty: none,
  /// or no host dispatch modelled (the cut would change nothing).
  std::vector<SyncedRun> forward_runs{}, backward_runs{};
  /// Under checkpointing, the forward the backward runs again first (the whole forward, or what
  /// a selective policy did not save): its share of `backward`, kernels, memory-bound part and
  /// runs. A tensor-parallel unit runs it as a task of its own.
  Seconds recompute = 0, recompute_memory = 0;
  int recompute_kernels = 0;
  std::vector<SyncedRun> recompute_runs{};
  /// Context parallelism: the unit's passes as PyTorch's ring attention (an index into the
  /// layer rings units_of made), -1 otherwise.
  int ring = -1;
};

/// One layer pass's ring (torch_ring_attention.hpp), costed piece by piece, with the names of
/// its tasks but the last (which keeps the pass's own name).
struct CostedRing {
  TorchRingPass pass;
  TorchRingCosts costs;
  std::vector<std::string> labels;  ///< torch_ring_pass_labels without the last
  int collectives = 0;              ///< the ring's calls, in push order
};
CostedRing costed_ring(TorchRingPass pass, const model::DeviceProfile& dev) {
  CostedRing r;
  r.costs = torch_ring_costs(pass, dev);
  r.labels = torch_ring_pass_labels(pass);
  r.labels.pop_back();
  r.collectives = (pass.gathered > 0 ? 1 : 0) + static_cast<int>(pass.dkv_bytes.size());
  for (const Bytes b : pass.kv_bytes) r.collectives += b > 0 ? 1 : 0;
  r.pass = std::move(pass);
  return r;
}

/// A block's forward and backward (without recompute) rings.
struct LayerRing {
  CostedRing forward, backward;
};

/// Which collectives a unit has under the plan's FSDP runtime, and what they carry.
struct UnitCollectives {
  bool forward_gather = true;   ///< all-gathered before its forward
  bool backward_gather = true;  ///< gathered again before its backward
  bool reduce = true;           ///< its gradients reduce-scattered after its backward
  double params = 0;            ///< parameters each of them moves
  double gather_bytes = 0;      ///< what each of its all-gathers moves
};

std::vector<Unit> units_of(const ScheduleInputs& in, std::vector<LayerRing>& rings) {
  const auto& s = in.model;
  const auto& p = in.plan;
  const auto& dev = in.device;
  const double tp = static_cast<double>(p.tp);
  const model::LayerShape shape{p.micro_batch, p.tp, p.sequence_parallel, p.flash_attention,
                                p.fused_cross_entropy, p.eager_kernels, module_kernels_of(p.module_kernels),
                                fp8_linears_of(p)};
  std::vector<Unit> units;
  const auto emb = model::embedding_forward_ops(s, shape);
  units.push_back({"embedding", model::embedding_parameters(s) / tp, ops_duration(emb, dev),
                   ops_duration(model::backward_of(emb), dev), model::ops_kernels(emb),
                   model::ops_kernels(model::backward_of(emb)), false, false});
  units.back().forward_memory = model::ops_memory_bound(emb, dev);
  units.back().backward_memory = model::ops_memory_bound(model::backward_of(emb), dev);
  // One unit per block (FSDP's transformer auto-wrap policy), an encoder-decoder's encoder blocks
  // then its decoder blocks (model/encoder_decoder.hpp).
  for (const auto& g : model::block_groups(s)) {
    const model::TransformerSpec& b = g.block;
    const auto layer_f = model::layer_forward_ops(b, shape);
    const Seconds lf = ops_duration(layer_f, dev);
    const auto layer_b = model::layer_backward_ops(b, shape);
    const int lfk = model::ops_kernels(layer_f);
    const auto lfm = model::ops_memory_bound(layer_f, dev);
    const auto recomputed =
        !p.activation_checkpointing ? std::vector<model::Operation>{}
        : p.checkpoint_policy == plan::CheckpointPolicy::selective_op
            ? model::recomputed_forward_ops(b, shape, model::Checkpointing::selective_op)
            : layer_f;
    const Seconds lr = ops_duration(recomputed, dev), lrm = model::ops_memory_bound(recomputed, dev);
    const int lrk = model::ops_kernels(recomputed);
    const Seconds lb = ops_duration(layer_b, dev) + lr;
    const int lbk = model::ops_kernels(layer_b) + lrk;
    auto runs_of = [&](const std::vector<model::Operation>& ops) {
      std::vector<SyncedRun> runs;
      const auto split = model::split_at_host_syncs(ops);
      if (!p.host_dispatch || split.size() <= 1) return runs;
      for (const auto& run : split)
        runs.push_back({ops_duration(run, dev), model::ops_kernels(run), model::ops_memory_bound(run, dev)});
      return runs;
    };
    const auto forward_runs = runs_of(layer_f);
    const auto recompute_runs = runs_of(recomputed);
    std::vector<SyncedRun> backward_runs = recompute_runs;
    if (!backward_runs.empty()) {
      auto& last = backward_runs.back();
      last.duration += ops_duration(layer_b, dev);
      last.kernels += model::ops_kernels(layer_b);
      last.memory += model::ops_memory_bound(layer_b, dev);
    }
    const auto lbm = model::ops_memory_bound(layer_b, dev) + lrm;
    int ring = -1;
    if (p.cp > 1) {
      // `in` is a CP rank's view (seq/cp tokens): each layer pass's SDPA as PyTorch's ring.
      rings.push_back({costed_ring(torch_ring_attention_pass(layer_f, b, shape, p.cp, true, p.cp_rotate, dev), dev),
                       costed_ring(torch_ring_attention_pass(layer_b, b, shape, p.cp, false, p.cp_rotate, dev), dev)});
      ring = static_cast<int>(rings.size()) - 1;
    }
    for (long l = 0; l < g.count; ++l) {
      units.push_back({(g.name == "layer" ? "layer " : g.name + " layer ") + std::to_string(l),
                       model::parameters_per_layer(b) / tp, lf, lb, lfk, lbk, p.tp > 1, true});
      units.back().forward_memory = lfm;
      units.back().backward_memory = lbm;
      units.back().forward_runs = forward_runs;
      units.back().backward_runs = backward_runs;
      units.back().recompute = lr;
      units.back().recompute_memory = lrm;
      units.back().recompute_kernels = lrk;
      units.back().recompute_runs = recompute_runs;
      units.back().ring = ring;
    }
  }
  if (p.fsdp_float8_all_gather)
    for (auto& u : units)
      if (u.layer) {
        // torchao converts every nn.Linear of a block (torchtitan's model: wq, wk, wv, wo and
        // the MLP's w1, w2, w3); norms stay bf16, and so do the embedding and output head.
        u.fp8_params = model::linear_weight_parameters(s) / tp;
        u.fp8_weights = 4 + (model::gated(s.mlp) ? 3 : 2);
      }
  const auto head = model::head_forward_ops(s, shape);
  units.push_back({"head", model::head_parameters(s) / tp, ops_duration(head, dev),
                   ops_duration(model::backward_of(head), dev), model::ops_kernels(head),
                   model::ops_kernels(model::backward_of(head)), false, false});
  units.back().forward_memory = model::ops_memory_bound(head, dev);
  units.back().backward_memory = model::ops_memory_bound(model::backward_of(head), dev);
  return units;
}

Program sharded_program(const ScheduleInputs& in);

}  // namespace

Program build_sharded_data_parallel(const ScheduleInputs& in) {
  if (in.plan.cp <= 1) return sharded_program(in);
  // Context parallelism (torch_ring_attention.hpp): each rank runs the model on its 1/cp of the
  // sequences; a step still trains micro_batch x accumulation x dp sequences.
  Program prog = sharded_program(context_parallel_rank_view(in));
  prog.samples_per_step /= in.plan.cp;
  return prog;
}

namespace {

Program sharded_program(const ScheduleInputs& in) {
  const auto& p = in.plan;
  const auto& L = in.layout;
  TRAINSIM_CHECK(p.pp == 1, "the sharded schedule has no pipeline stages");
  TRAINSIM_CHECK(!in.stages.empty(), "stage memory is required");
  const long shard = L.shard;
  const long replicas = L.dp / shard;
  std::vector<LayerRing> rings;
  const std::vector<Unit> units = units_of(in, rings);
  // Context parallelism: `in` is a CP rank's view, its data-parallel indices d holding the CP
  // ranks (plan::context_parallel_rank_layout: CP index d % cp), each CP group cp of them TP apart.
  const long cp = p.cp;
  const long cp_groups = cp > 1 ? p.tp * L.dp / cp : 0;
  const bool full_recompute = p.activation_checkpointing && p.checkpoint_policy == plan::CheckpointPolicy::full;
  const std::size_t n = units.size();
  const double total_params = [&] {
    double t = 0;
    for (const auto& u : units) t += u.params;
    return t;
  }();
  const bool torch_fsdp = plan::torch_fsdp(p.fsdp_implementation);  // FSDP1 or FSDP2, alike here
  // PyTorch FSDP1's root unit (fully_sharded_data_parallel.py at 1.13, forward(): "Do not free
  // the root's parameters in the post-forward for FULL_SHARD"): the embedding and head are one
  // flat parameter, gathered before the embedding and kept through the backward.
  // Its gradients are reduce-scattered once, after the embedding's backward (its AccumulateGrad
  // hook fires when the whole flat parameter's gradient is complete).
  std::vector<UnitCollectives> moved(n);
  for (std::size_t u = 0; u < n; ++u)
    moved[u] = {true, true, true, units[u].params,
                (units[u].params - units[u].fp8_params) * p.parameter_wire_bytes + units[u].fp8_params};
  if (torch_fsdp) {
    const double root = units.front().params + units.back().params;
    moved.front() = {true, false, true, root, root * p.parameter_wire_bytes};
    moved.back() = {false, false, false, 0, 0};
  }
  // FSDP1's SHARD_GRAD_OP (plan::FsdpShardingStrategy): no unit is resharded after its forward,
  // so none is gathered again for its backward; the post-backward hook frees it.
  const bool reshard_after_forward =
      !(p.fsdp_implementation == plan::FsdpImplementation::torch_fsdp1 &&
        p.fsdp_sharding_strategy == plan::FsdpShardingStrategy::shard_grad_op);
  if (!reshard_after_forward)
    for (auto& m : moved) m.backward_gather = false;
  // torchao's FP8 all-gather (model/fsdp_float8.hpp): before each gather of a unit with float8
  // weights its shards are cast on the gather stream (FSDP2's copy-in), after an amax pass and one
  // scalar MAX all-reduce per weight over the shard group unless the scales were precomputed.
  const bool fp8_gather = p.fsdp_float8_all_gather;
  const bool per_weight_amax = fp8_gather && !p.float8_precomputed_scales;
  // The sharded parameters' dtype (fsdp_mixed: fp32), what the shard casts read.
  const double shard_dtype_bytes = std::max(p.precision.weights, p.precision.master_weights);
  constexpr double kAmaxBytes = 4;  // one fp32 amax per weight
  // One process group's collectives share ProcessGroupNCCL's stream (PyTorch FSDP): the
  // reduce-scatters then queue on the gather stream in the order the host issues them.
  const int reduce_stream = torch_fsdp ? kGather : kReduce;
  const bool sequence_parallel = p.sequence_parallel && p.tp > 1;
  // torchtitan's op policy saves the reduce-scatter outputs (model/checkpointing.hpp): its
  // recompute runs the all-gathers again, not the reduce-scatters. Without sequence parallelism
  // the all-reduces are not saved and run again.
  const bool recompute_keeps_scatters = sequence_parallel && p.activation_checkpointing &&
                                        p.checkpoint_policy == plan::CheckpointPolicy::selective_op;
  const double tokens_bytes =
      2.0 * static_cast<double>(p.micro_batch * in.model.seq_len * in.model.hidden);  // bf16
  // The sequence-parallel all-gathers move FP8 where the linears cast before gathering
  // (model/fp8_linear.hpp: Transformer Engine).
  const double sequence_gather_bytes = fp8_linears_of(p).sequence_gathers_fp8 ? tokens_bytes / 2 : tokens_bytes;
  // Activation offloading: each layer's checkpointed input goes to host memory after the layer's
  // forward and comes back, one layer ahead, before its backward (memory/rank_memory.hpp keeps
  // two layer inputs on device).
  const bool offload = p.activation_checkpointing && p.activation_offloading;
  const Bytes layer_input = model::layer_input_bytes(
      in.model, {p.micro_batch, p.tp, p.sequence_parallel, p.flash_attention, p.fused_cross_entropy, p.eager_kernels});

  Program prog;
  prog.samples_per_step = p.micro_batch * p.accumulation * L.dp;
  // Composer's per-batch metric sync over the world group (model/composer_metric_sync.hpp): 0 when
  // off or the device profile has no measured per-call time.
  const Seconds metric_sync =
      p.composer_metric_sync
          ? model::composer_metric_sync_host_time(
                p.composer_train_metrics, L.world,
                in.device.metric_sync_call > 0 ? in.device.metric_sync_call : in.device.eager_copy_call)
          : 0.0;
  // torch FSDP's host waits and issue order are marked below (gathers' host_sync and host_after);
  // DeepSpeed's and a generic runtime's are not known.
  prog.host_bounds_modelled = torch_fsdp;
  // Groups, by (tp index, replica) for shards and (tp index, shard position) for replicas.
  auto shard_group = [&](long t, long replica) {
    std::vector<int> g;
    for (long k = 0; k < shard; ++k) g.push_back(rank_of(in, 0, replica * shard + k, t));
    return g;
  };
  auto replica_group = [&](long t, long position) {
    std::vector<int> g;
    for (long r = 0; r < replicas; ++r) g.push_back(rank_of(in, 0, r * shard + position, t));
    return g;
  };
  auto tensor_group = [&](long d) {
    std::vector<int> g;
    for (long t = 0; t < p.tp; ++t) g.push_back(rank_of(in, 0, d, t));
    return g;
  };
  // Collective calls are created once per group and looked up by (key, group id).
  auto add_call = [&](InternedName name, collective::Op op, Bytes size, std::vector<int> group) {
    prog.collectives.push_back({name, op, size, std::move(group)});
    return static_cast<int>(prog.collectives.size()) - 1;
  };

  // Call indices: [micro-batch][unit][pass] for gathers, per shard group.
  const long shard_groups = p.tp * replicas;
  const long replica_groups = p.tp * shard;
  struct UnitCalls {
    std::vector<int> gather_fwd, gather_bwd, reduce, replicate;  // by group id
    std::vector<int> tensor_fwd, tensor_bwd, tensor_recompute;   // two per dp index (attention, MLP)
    // Sequence parallelism: the all-gathers before each pass (the passes above reduce-scatter).
    std::vector<int> gather_fwd_sp, gather_bwd_sp, gather_recompute_sp;  // likewise
    // The first of each group's per-weight amax all-reduces before each gather (FP8 all-gather).
    std::vector<int> amax_fwd, amax_bwd;  // by group id
    // Context parallelism: a layer pass's ring calls in push order, by CP group id.
    std::vector<std::vector<int>> ring_fwd, ring_recompute, ring_bwd;
  };
  std::vector<std::vector<UnitCalls>> calls(static_cast<std::size_t>(p.accumulation),
                                            std::vector<UnitCalls>(n));
  // Every rank names a unit's tasks and calls alike: the names are made once per micro-batch.
  struct UnitNames {
    InternedName gather, gather_backward, reduce_scatter, replica_all_reduce;
    InternedName forward, backward, recompute, offload, fetch;
    InternedName amax, amax_all_reduce, cast, amax_backward, amax_all_reduce_backward, cast_backward;
    /// The runs of a pass cut at host syncs (Unit::forward_runs) but its last, which keeps the
    /// pass's name: "<pass> to sync k".
    std::vector<InternedName> forward_runs, recompute_runs, backward_runs;
    /// Context parallelism: a layer pass's ring tasks but its last (CostedRing::labels).
    std::vector<InternedName> ring_forward, ring_recompute, ring_backward;
  };
  // CP group g: the cp view indices (g / tp) x cp .. + cp - 1 at TP index g % tp.
  auto cp_group = [&](long g) {
    std::vector<int> members;
    for (long j = 0; j < cp; ++j) members.push_back(rank_of(in, 0, (g / p.tp) * cp + j, g % p.tp));
    return members;
  };
  // A ring pass's calls for every CP group, in the order its tasks are pushed (its labels').
  auto ring_calls = [&](const CostedRing& r, const std::vector<InternedName>& task_names) {
    std::vector<std::vector<int>> by_group;
    for (long g = 0; g < cp_groups; ++g) {
      const auto members = cp_group(g);
      std::vector<int> ids;
      std::size_t kv = 0, dkv = 0;
      for (std::size_t k = 0; k < r.labels.size(); ++k) {
        const std::string& label = r.labels[k];
        if (label == "cp kv all-gather") {
          ids.push_back(add_call(task_names[k], collective::Op::all_gather, r.pass.gathered, members));
        } else if (label.rfind("cp kv rotation", 0) == 0) {
          ids.push_back(add_call(task_names[k], collective::Op::ring_exchange, r.pass.kv_bytes[kv++], members));
        } else if (label.rfind("cp dkv rotation", 0) == 0) {
          ids.push_back(add_call(task_names[k], collective::Op::ring_exchange, r.pass.dkv_bytes[dkv++], members));
        }
      }
      TRAINSIM_CHECK(static_cast<int>(ids.size()) == r.collectives, "a ring pass's calls are its labels' collectives");
      by_group.push_back(std::move(ids));
    }
    return by_group;
  };
  std::vector<std::vector<UnitNames>> names(static_cast<std::size_t>(p.accumulation), std::vector<UnitNames>(n));
  for (long mb = 0; mb < p.accumulation; ++mb) {
    const std::string tag = " mb" + std::to_string(mb);
    for (std::size_t u = 0; u < n; ++u) {
      auto& c = calls[mb][u];
      const Unit& unit = units[u];
      auto& name = names[mb][u];
      name.gather = "all-gather " + unit.name + tag;
      name.gather_backward = "all-gather " + unit.name + " (backward)" + tag;
      name.reduce_scatter = "reduce-scatter " + unit.name + tag;
      name.replica_all_reduce = "replica all-reduce " + unit.name + tag;
      name.forward = "forward " + unit.name + tag;
      name.backward = "backward " + unit.name + tag;
      name.recompute = "recompute " + unit.name + tag;
      name.offload = "offload input " + unit.name + tag;
      name.fetch = "fetch input " + unit.name + tag;
      for (std::size_t r = 1; r < unit.forward_runs.size(); ++r)
        name.forward_runs.emplace_back(name.forward.str() + " to sync " + std::to_string(r));
      for (std::size_t r = 1; r < unit.recompute_runs.size(); ++r)
        name.recompute_runs.emplace_back(name.recompute.str() + " to sync " + std::to_string(r));
      for (std::size_t r = 1; r < unit.backward_runs.size(); ++r)
        name.backward_runs.emplace_back(name.backward.str() + " to sync " + std::to_string(r));
      if (unit.ring >= 0) {
        const LayerRing& ring = rings[static_cast<std::size_t>(unit.ring)];
        auto ring_names = [&](const CostedRing& r, const std::string& pass) {
          std::vector<InternedName> v;
          for (const auto& label : r.labels) v.emplace_back(pass + " " + unit.name + tag + " " + label);
          return v;
        };
        name.ring_forward = ring_names(ring.forward, "forward");
        name.ring_backward = ring_names(ring.backward, "backward");
        c.ring_fwd = ring_calls(ring.forward, name.ring_forward);
        if (full_recompute) {
          name.ring_recompute = ring_names(ring.forward, "recompute");
          c.ring_recompute = ring_calls(ring.forward, name.ring_recompute);
        }
        c.ring_bwd = ring_calls(ring.backward, name.ring_backward);
      }
      if (unit.fp8_weights > 0) {
        name.amax = "fp8 shard amax " + unit.name + tag;
        name.amax_all_reduce = "fp8 amax all-reduce " + unit.name + tag;
        name.cast = "fp8 shard cast " + unit.name + tag;
        name.amax_backward = "fp8 shard amax " + unit.name + " (backward)" + tag;
        name.amax_all_reduce_backward = "fp8 amax all-reduce " + unit.name + " (backward)" + tag;
        name.cast_backward = "fp8 shard cast " + unit.name + " (backward)" + tag;
      }
      for (long gid = 0; gid < shard_groups; ++gid) {
        const long t = gid % p.tp, replica = gid / p.tp;
        if (shard > 1) {
          auto amax_calls = [&](InternedName call_name, std::vector<int>& first) {
            if (!per_weight_amax || unit.fp8_weights == 0) return;
            first.push_back(static_cast<int>(prog.collectives.size()));
            for (int w = 0; w < unit.fp8_weights; ++w)
              add_call(call_name, collective::Op::all_reduce, kAmaxBytes, shard_group(t, replica));
          };
          if (moved[u].forward_gather) {
            amax_calls(name.amax_all_reduce, c.amax_fwd);
            c.gather_fwd.push_back(add_call(name.gather, collective::Op::all_gather, moved[u].gather_bytes,
                                            shard_group(t, replica)));
          }
          if (moved[u].backward_gather) {
            amax_calls(name.amax_all_reduce_backward, c.amax_bwd);
            c.gather_bwd.push_back(add_call(name.gather_backward, collective::Op::all_gather, moved[u].gather_bytes,
                                            shard_group(t, replica)));
          }
          if (moved[u].reduce)
            c.reduce.push_back(add_call(name.reduce_scatter, collective::Op::reduce_scatter,
                                        moved[u].params * p.gradient_wire_bytes, shard_group(t, replica)));
        }
      }
      if (replicas > 1 && moved[u].reduce)
        for (long gid = 0; gid < replica_groups; ++gid) {
          const long t = gid % p.tp, position = gid / p.tp;
          c.replicate.push_back(add_call(name.replica_all_reduce, collective::Op::all_reduce,
                                         moved[u].params / static_cast<double>(shard) * p.gradient_wire_bytes,
                                         replica_group(t, position)));
        }
      if (unit.tensor_parallel) {
        // Each pass all-reduces its attention and its MLP output, one call each (Megatron's
        // mappings.py; NCCL's rate depends on the size a call moves); with sequence parallelism
        // a reduce-scatter of the same bytes each, after an all-gather each. Two per pass and
        // dp index, at 2d and 2d + 1.
        struct PassNames { InternedName gather, reduce; };
        auto pass_names = [&](const std::string& pass) {
          return PassNames{"tp all-gather " + unit.name + pass + tag,
                           (sequence_parallel ? "tp reduce-scatter " : "tp all-reduce ") + unit.name + pass + tag};
        };
        const PassNames fwd = pass_names(""), bwd = pass_names(" (backward)"), rec = pass_names(" (recompute)");
        for (long d = 0; d < L.dp; ++d) {
          auto tensor_calls = [&](const PassNames& pn, std::vector<int>& after, std::vector<int>& before,
                                  bool reduces) {
            for (int region = 0; region < 2; ++region) {
              if (sequence_parallel)
                before.push_back(add_call(pn.gather, collective::Op::all_gather, sequence_gather_bytes, tensor_group(d)));
              if (reduces)
                after.push_back(add_call(pn.reduce,
                                         sequence_parallel ? collective::Op::reduce_scatter : collective::Op::all_reduce,
                                         tokens_bytes, tensor_group(d)));
            }
          };
          tensor_calls(fwd, c.tensor_fwd, c.gather_fwd_sp, true);
          tensor_calls(bwd, c.tensor_bwd, c.gather_bwd_sp, true);
          if (p.activation_checkpointing) tensor_calls(rec, c.tensor_recompute, c.gather_recompute_sp, !recompute_keeps_scatters);
        }
      }
    }
  }

  // precompute_float8_dynamic_scale_for_fsdp's one all-reduce of the stacked amaxes, per shard group.
  double fp8_shard_params = 0, fp8_weights = 0;
  for (const auto& u : units) {
    fp8_shard_params += u.fp8_params / static_cast<double>(shard);
    fp8_weights += u.fp8_weights;
  }
  std::vector<int> precompute_calls;
  if (p.float8_precomputed_scales && shard > 1)
    for (long gid = 0; gid < shard_groups; ++gid)
      precompute_calls.push_back(add_call("float8 precompute amax all-reduce", collective::Op::all_reduce,
                                          kAmaxBytes * fp8_weights, shard_group(gid % p.tp, gid / p.tp)));
  // The step's passes over this rank's shard: gradient clipping, then the optimizer. The norm's
  // all-reduce between clipping's two passes (one scalar over the shard group, tens of
  // microseconds of latency) is left out.
  const double shard_params = total_params / static_cast<double>(shard);
  const std::vector<model::Operation> step_ops = model::torch_step_ops(
      shard_params, p.clip_grad_norm, p.optimizer_implementation == plan::OptimizerImplementation::torch_foreach);
  const Seconds optimizer = model::ops_duration(step_ops, in.device);
  const auto optimizer_memory = model::ops_memory_bound(step_ops, in.device);
  const int optimizer_kernels = static_cast<int>(step_ops.size());
  // Composer's train metrics (model/composer_metrics.hpp), one task per micro-batch.
  const double metric_tokens = static_cast<double>(p.micro_batch * in.model.seq_len);
  const std::vector<model::Operation> metric_ops = model::composer_train_metric_ops(
      metric_tokens, static_cast<double>(in.model.vocab), p.composer_train_metrics, p.composer_train_metrics_autocast);
  const Seconds metric_time = metric_ops.empty() ? 0 : model::ops_duration(metric_ops, in.device);
  const auto metric_memory = model::ops_memory_bound(metric_ops, in.device);
  const Bytes metric_workspace = model::composer_train_metric_workspace(metric_tokens, static_cast<double>(in.model.vocab),
                                                                        p.composer_train_metrics_autocast);
  std::vector<InternedName> name_metrics;
  if (!metric_ops.empty())
    for (long mb = 0; mb < p.accumulation; ++mb) name_metrics.emplace_back("train metrics mb" + std::to_string(mb));
  const StageMemory& mem = in.stages.front();
  // With allocator_tensor_requests the caching allocator sees each pass's tensors one by one
  // (program/activation_allocations.hpp) where each layer's activations live inside its own
  // passes: kept whole, or fully checkpointed without offloading and recomputed inside its
  // backward task (under TP a separate task recomputes it: lumped, as are selective policies).
  const bool per_tensor =
      p.allocator_tensor_requests && (!p.activation_checkpointing || (full_recompute && !offload && p.tp == 1));
  enum PassIndex { kEmbeddingForward, kLayerForward, kLastLayerForward, kHeadForward, kLayerBackward,
                   kHeadBackward, kEmbeddingBackward, kPasses };
  std::array<PassAllocations, kPasses> pass_allocations{};
  if (per_tensor) {
    model::LayerShape shape{p.micro_batch, p.tp, p.sequence_parallel, p.flash_attention, p.fused_cross_entropy,
                            p.eager_kernels};
    shape.fp8.enabled = p.linear_precision == plan::LinearPrecision::fp8;  // as the memory model's
    // The loss's gradient of the logits (memory/rank_memory.cpp's activation_workspace).
    const double logits = static_cast<double>(p.micro_batch * in.model.seq_len * in.model.vocab) / static_cast<double>(p.tp);
    std::vector<Bytes> loss_gradients;
    if (!p.fused_cross_entropy) loss_gradients = {4 * logits, 2 * logits};
    else if (!p.fused_cross_entropy_inplace) loss_gradients = {2 * logits};
    const ActivationAllocations a = activation_allocations(in.model, shape, p.activation_checkpointing, loss_gradients);
    const Bytes kept = a.per_micro_batch(in.model.layers);
    TRAINSIM_CHECK(std::abs(kept - mem.activations_per_micro_batch) <= 1e-9 * std::max(1.0, kept),
                   "the sharded schedule's tensors of one micro-batch (" + std::to_string(kept) +
                       " B) are not the memory model's activations (" + std::to_string(mem.activations_per_micro_batch) + " B)");
    pass_allocations = {a.embedding_forward, a.layer_forward, a.last_layer_forward, a.head_forward,
                        a.layer_backward, a.head_backward, a.embedding_backward};
    for (const auto& pa : pass_allocations) prog.allocation_sequences.push_back(pa.sequence);
  }
  const PassAllocations metric_allocations =
      composer_metric_allocations(metric_tokens, static_cast<double>(in.model.vocab), p.composer_train_metrics,
                                  p.composer_train_metrics_autocast);
  const auto metric_sequence = static_cast<std::int16_t>(prog.allocation_sequences.size());
  if (per_tensor && !metric_ops.empty()) prog.allocation_sequences.push_back(metric_allocations.sequence);
  // Unit u's forward and backward pass (units: the embedding, the layers, the head).
  auto forward_pass = [&](std::size_t u) {
    return u == 0 ? kEmbeddingForward : u + 1 == n ? kHeadForward : u + 2 == n ? kLastLayerForward : kLayerForward;
  };
  auto backward_pass = [&](std::size_t u) {
    return u == 0 ? kEmbeddingBackward : u + 1 == n ? kHeadBackward : kLayerBackward;
  };
  // Which stream's caching-allocator pool each transient buffer comes from
  // (memory/caching_allocator.hpp). With the units gathered, the memory model's gathered
  // parameters and gradients leave `resident` and follow the timeline: a unit's parameters are
  // allocated by its all-gather on the gather stream (FSDP1 _unshard under the unshard stream,
  // FSDP2's all-gather output, DeepSpeed's partitioned-parameter coordinator) and freed after
  // the pass that uses them, back into the gather stream's pool; the unsharded gradient is
  // allocated by autograd on the compute stream and freed after its reduce-scatter; torch FSDP
  // allocates the reduce-scatter's input on its post-backward (FSDP1: the reduce-dtype cast and
  // F.pad's copy) or reduce-scatter stream (FSDP2: foreach_reduce's copy-in), not on the stream
  // of the communicator that runs the call.
  const bool per_unit_memory = shard > 1;
  const bool fsdp1 = p.fsdp_implementation == plan::FsdpImplementation::torch_fsdp1;
  const bool fsdp2 = p.fsdp_implementation == plan::FsdpImplementation::torch_fsdp2;
  // When the host issues a gather (what times its allocation): FSDP1's rate limiter
  // (limit_all_gathers, _runtime_utils.py _unshard: the free-event queue of capacity 2) makes the
  // host wait for the event recorded after the unit two back was resharded before it issues the
  // next all-gather, so the wait on that pass is the host's. FSDP2 bounds its all-gathers with
  // stream waits on events instead (the host runs on), and frees the unsharded parameters and
  // the gradients without record_stream: its all-gather stream waits on the compute stream's
  // event before it writes again (_wait_all_gather_streams_on_event), and the compute stream on
  // the copy-in before the gradients are dropped (foreach_reduce), so those blocks are back in
  // their pools when the host drops them.
  const bool host_waits_for_gather_slot = fsdp1 && !fp8_gather;
  // FSDP1 with limit_all_gathers=False: no free-event queue, so neither the host nor the gather
  // stream waits for a unit's reshard before the next gather (plan::TrainingPlan).
  const bool rate_limited = !(fsdp1 && !p.fsdp_limit_all_gathers);
  // FSDP1's prefetches (plan::FsdpBackwardPrefetch, forward_prefetch): a prefetched gather is issued
  // in the hook of the unit before it, ahead of that unit's reshard, so the rate limiter's oldest
  // free event is one unit older: it waits for the pass three units back instead of two.
  const bool forward_prefetch = fsdp1 && p.fsdp_forward_prefetch;
  const auto backward_prefetch =
      torch_fsdp ? p.fsdp_backward_prefetch : plan::FsdpBackwardPrefetch::none;
  std::vector<Bytes> gathered_bytes(n, 0), gradient_bytes(n, 0), reduce_input_bytes(n, 0);
  if (per_unit_memory)
    for (std::size_t u = 0; u < n; ++u) {
      gathered_bytes[u] = moved[u].gather_bytes;
      if (!moved[u].reduce) continue;
      gradient_bytes[u] = moved[u].params * (torch_fsdp ? p.parameter_wire_bytes : p.gradient_wire_bytes);
      if (fsdp1) {
        // The post-backward hook's reduce-dtype cast and F.pad copy (plan::FsdpPadCopy); with
        // neither, the reduce-scatter reads the gradient autograd left.
        const bool cast = p.gradient_wire_bytes != p.parameter_wire_bytes;
        const bool pad = plan::fsdp_pads(p.fsdp_pad_copy, moved[u].params, shard);
        reduce_input_bytes[u] = moved[u].params * p.gradient_wire_bytes * ((cast ? 1 : 0) + (pad ? 1 : 0));
      } else if (torch_fsdp) {
        reduce_input_bytes[u] = moved[u].params * p.gradient_wire_bytes;  // FSDP2's copy-in
      }
    }
  // The root unit of torch FSDP, and every unit under SHARD_GRAD_OP, stays gathered from its
  // forward to its backward.
  auto kept_through_backward = [&](std::size_t u) {
    return moved[u].forward_gather && ((torch_fsdp && u == 0) || !reshard_after_forward);
  };
  // A pass that ends unit u's use of its gathered parameters gives them back to the gather pool.
  auto frees_gathered = [&](Task& t, std::size_t u) {
    t.release_borrowed = gathered_bytes[u];
    t.borrowed_pool = kGather;
    t.borrowed_free_at_issue = fsdp2;
  };
  // A TP all-reduce task is named after the pass it follows: each such name is made once.
  std::vector<InternedName> all_reduce_after;  // by the pass's name id
  auto all_reduce_name = [&](const InternedName& pass_name) {
    if (all_reduce_after.size() <= pass_name.id()) all_reduce_after.resize(pass_name.id() + 1);
    InternedName& made = all_reduce_after[pass_name.id()];
    if (made.empty()) made = pass_name + " all-reduce";
    return made;
  };

  for (long d = 0; d < L.dp; ++d)
    for (long t = 0; t < p.tp; ++t) {
      const long replica = d / shard, position = d % shard;
      const long shard_gid = replica * p.tp + t;
      const long replica_gid = position * p.tp + t;
      RankProgram rp;
      rp.rank = rank_of(in, 0, d, t);
      rp.resident = mem.resident - (per_unit_memory ? mem.gathered : 0);
      rp.streams = {{"compute", StreamKind::compute, {}},
                    {"all-gather", StreamKind::communication, {}},
                    {"reduce-scatter", StreamKind::communication, {}},
                    {"tensor-parallel", StreamKind::communication, {}}};
      if (offload) rp.streams.push_back({"host-copy", StreamKind::copy, {}});
      // Context parallelism: the CP group's K, V all-gathers and rotations (one communicator).
      const int kCpRing = static_cast<int>(rp.streams.size());
      if (cp > 1) rp.streams.push_back({"cp ring", StreamKind::communication, {}});
      const long cp_gid = cp > 1 ? (d / cp) * p.tp + t : -1;
      auto& comp = rp.streams[kCompute].tasks;
      auto& gather = rp.streams[kGather].tasks;
      auto& reduce = rp.streams[kReduce].tasks;
      auto& tensor = rp.streams[kTensor].tasks;
      auto last = [](const std::vector<Task>& v, int stream) {
        return TaskRef{stream, static_cast<int>(v.size()) - 1};
      };
      // The host issues a unit's gather (and its FP8 casts) in a hook after the pass issued last
      // (FSDP's pre-forward of the unit, the previous unit's post-backward): what times its
      // allocation where no dependency does.
      auto after_last_pass = [&] { return comp.empty() ? TaskRef{-1, -1} : last(comp, kCompute); };
      auto copy_task = [&](InternedName name, CopyDirection dir, std::vector<TaskRef> deps) {
        Task c{name, TaskKind::host_copy, Phase::offload, 0, -1, std::move(deps)};
        c.copy_bytes = layer_input;
        c.copy_direction = dir;
        rp.streams[kCopy].tasks.push_back(std::move(c));
        return last(rp.streams[kCopy].tasks, kCopy);
      };
      // A pass's two TP calls (attention, MLP), or none.
      using PassCalls = std::array<int, 2>;
      constexpr PassCalls kNoCalls{-1, -1};
      auto of_rank = [&](const std::vector<int>& by_rank) {
        return PassCalls{by_rank[static_cast<std::size_t>(2 * d)], by_rank[static_cast<std::size_t>(2 * d + 1)]};
      };
      // Runs a unit pass: (SP) its all-gathers after `ready`, compute, then (TP) its all-reduces
      // or (SP) reduce-scatters; returns the task the next pass must wait for.
      auto pass = [&](Task task, std::vector<TaskRef> ready, PassCalls tensor_calls, PassCalls gather_calls) {
        const bool gathers = gather_calls[0] >= 0;
        if (gathers) {
          const InternedName gather_name(task.name + " all-gather");
          for (int call : gather_calls) {
            tensor.push_back({gather_name, TaskKind::collective, task.phase, 0, call, std::move(ready)});
            ready = {last(tensor, kTensor)};
          }
        }
        task.deps = std::move(ready);
        comp.push_back(std::move(task));
        if (tensor_calls[0] < 0) return last(comp, kCompute);
        const InternedName reduce_name = gathers ? InternedName(comp.back().name + " reduce-scatter")
                                                 : all_reduce_name(comp.back().name);
        TaskRef after = last(comp, kCompute);
        for (int call : tensor_calls) {
          tensor.push_back({reduce_name, TaskKind::collective, comp.back().phase, 0, call, {after}});
          after = last(tensor, kTensor);
        }
        return after;
      };
      // A pass the host synchronises inside (Unit::forward_runs): a task per run, each after the
      // first issued only once the one before has ended (Task::host_sync). The gathers come
      // before the first run and the TP calls after the last, which keeps the pass's name and its
      // memory (allocations, workspace, frees): the pass ends there and issues most of its
      // kernels there (the attention, the MLP, the backward).
      auto synced_pass = [&](Task whole, const std::vector<SyncedRun>& runs, const std::vector<InternedName>& run_names,
                             std::vector<TaskRef> ready, PassCalls tensor_calls, PassCalls gather_calls) {
        if (runs.empty()) return pass(std::move(whole), std::move(ready), tensor_calls, gather_calls);
        TRAINSIM_CHECK(run_names.size() + 1 == runs.size(), "a name for every run of a synced pass but its last");
        for (std::size_t r = 0; r + 1 < runs.size(); ++r) {
          Task run{run_names[r], TaskKind::compute, whole.phase, runs[r].duration, -1, {}};
          set_memory_bound(run, runs[r].memory);
          run.kernels = runs[r].kernels;
          run.host_sync = r > 0;
          ready = {pass(std::move(run), std::move(ready), kNoCalls, r == 0 ? gather_calls : kNoCalls)};
        }
        whole.duration = runs.back().duration;
        set_memory_bound(whole, runs.back().memory);
        whole.kernels = runs.back().kernels;
        whole.host_sync = true;
        return pass(std::move(whole), std::move(ready), tensor_calls, kNoCalls);
      };
      // A layer pass with its SDPA as PyTorch's ring (torch_ring_attention.hpp): `before` (after
      // the SP gathers), the K, V all-gather or rotations and the dK, dV rotations on the CP
      // stream, each step (backward: its attention, then what needs the dK, dV in flight), and
      // `whole` last with the duration of `after`, keeping the pass's name and memory, then
      // its TP calls. Returns what the next pass waits for.
      auto ring_pass = [&](Task whole, const CostedRing& r, const std::vector<InternedName>& task_names,
                           const std::vector<int>& ring_call_ids, std::vector<TaskRef> ready, PassCalls tensor_calls,
                           PassCalls gather_calls) {
        std::size_t k = 0, c = 0;
        auto compute = [&](RingPiece piece, std::size_t i, std::vector<TaskRef> deps) {
          if (piece == RingPiece::after) {
            whole.duration = r.costs.after.duration;
            set_memory_bound(whole, r.costs.after.memory);
            whole.kernels = r.costs.after.kernels;
            return pass(std::move(whole), std::move(deps), tensor_calls, kNoCalls);
          }
          const RingPieceCost& cost = piece == RingPiece::before ? r.costs.before
                                      : piece == RingPiece::step ? r.costs.steps[i]
                                                                 : r.costs.accumulations[i];
          Task task{task_names[k++], TaskKind::compute, whole.phase, cost.duration, -1, {}};
          set_memory_bound(task, cost.memory);
          task.kernels = cost.kernels;
          return pass(std::move(task), std::move(deps), kNoCalls, piece == RingPiece::before ? gather_calls : kNoCalls);
        };
        auto collective = [&](collective::Op, Bytes, std::vector<TaskRef> deps) {  // the call made for it
          auto& ring = rp.streams[static_cast<std::size_t>(kCpRing)].tasks;
          ring.push_back({task_names[k++], TaskKind::collective, whole.phase, 0, ring_call_ids[c++], std::move(deps)});
          return last(ring, kCpRing);
        };
        const TaskRef end = push_torch_ring(r.pass, std::move(ready), compute, collective);
        TRAINSIM_CHECK(k == task_names.size() && c == ring_call_ids.size(), "a ring pass pushes one task per name");
        return end;
      };
      auto sp_gather = [&](const std::vector<int>& by_rank) { return sequence_parallel ? of_rank(by_rank) : kNoCalls; };
      // The FP8 shard casts (and amax all-reduces) before unit u's gather, after `deps`; returns
      // what the gather waits for.
      auto fp8_shard_cast = [&](std::size_t u, InternedName amax_name, InternedName amax_all_reduce,
                                InternedName cast_name, const std::vector<int>& first_amax,
                                std::vector<TaskRef> deps) {
        if (units[u].fp8_weights == 0) return deps;
        const double elements = units[u].fp8_params / static_cast<double>(shard);
        auto on_gather_stream = [&](InternedName task_name, const model::Operation& op, int per_weight_kernels) {
          Task k{task_name, TaskKind::compute, Phase::parameter_sync, ops_duration({op}, in.device), -1, std::move(deps)};
          set_memory_bound(k, model::ops_memory_bound({op}, in.device));
          k.kernels = per_weight_kernels * units[u].fp8_weights;
          k.host_after = after_last_pass();
          gather.push_back(std::move(k));
          deps = {last(gather, kGather)};
        };
        if (per_weight_amax) {
          const model::Operation amax = model::fsdp_float8_shard_amax(elements, shard_dtype_bytes);
          on_gather_stream(amax_name, amax, amax.kernels);
          for (int w = 0; w < units[u].fp8_weights; ++w) {
            gather.push_back({amax_all_reduce, TaskKind::collective, Phase::parameter_sync, 0,
                              first_amax[static_cast<std::size_t>(shard_gid)] + w, std::move(deps)});
            deps = {last(gather, kGather)};
          }
        }
        const model::Operation cast = model::fsdp_float8_shard_cast(elements, shard_dtype_bytes);
        on_gather_stream(cast_name, cast, cast.kernels);
        return deps;
      };
      std::vector<TaskRef> reduced;
      for (long mb = 0; mb < p.accumulation; ++mb) {
        const auto& c = calls[mb];
        const auto& name = names[static_cast<std::size_t>(mb)];
        // Forward: gathers run ahead by at most two units.
        std::vector<int> computed;  // compute-stream index of each unit's forward
        std::vector<TaskRef> offloaded(n, TaskRef{-1, -1});  // each layer's copy to host
        TaskRef previous{-1, -1};
        std::vector<TaskRef> gathered_forward(n, TaskRef{-1, -1});
        // Unit u's forward gather; `lag`: how many forwards back the rate limiter's slot frees.
        auto gather_forward = [&](std::size_t u, std::size_t lag) {
          if (shard <= 1 || !moved[u].forward_gather) return;
          // The rate limiter waits on the free event of the unit `lag` back: under SHARD_GRAD_OP
          // no forward frees one (_reshard enqueues only when it frees), so nothing bounds the gathers.
          const bool limited = rate_limited && reshard_after_forward && u >= lag;
          std::vector<TaskRef> gdeps;
          if (limited) gdeps.push_back({kCompute, computed[u - lag]});
          if (fp8_gather)
            gdeps = fp8_shard_cast(u, name[u].amax, name[u].amax_all_reduce, name[u].cast, c[u].amax_fwd, gdeps);
          gather.push_back({name[u].gather, TaskKind::collective,
                            Phase::parameter_sync, 0, c[u].gather_fwd[shard_gid], gdeps});
          gather.back().alloc = gathered_bytes[u];
          gather.back().host_sync = host_waits_for_gather_slot && limited;
          gather.back().host_after = after_last_pass();
          gathered_forward[u] = last(gather, kGather);
        };
        for (std::size_t u = 0; u < n; ++u) {
          std::vector<TaskRef> ready;
          // _pre_forward_unshard: the unit's own gather unless prefetched, then (forward_prefetch)
          // the next unit's.
          if (gathered_forward[u].stream < 0) gather_forward(u, 2);
          if (gathered_forward[u].stream >= 0) ready.push_back(gathered_forward[u]);
          if (forward_prefetch && moved[u].forward_gather && u + 1 < n) gather_forward(u + 1, 3);
          if (previous.stream >= 0) ready.push_back(previous);
          // Two layer inputs on device: the one in use and the one being offloaded.
          if (offload && u >= 2 && offloaded[u - 2].stream >= 0) ready.push_back(offloaded[u - 2]);
          Task f{name[u].forward, TaskKind::compute, Phase::forward, units[u].forward, -1, {}};
          set_memory_bound(f, units[u].forward_memory);
          if (per_tensor) {
            const auto fp = forward_pass(u);
            f.alloc = pass_allocations[fp].kept;
            f.workspace = pass_allocations[fp].workspace;
            f.allocations = static_cast<std::int16_t>(fp);
          } else if (u == 0) {
            f.alloc = mem.activations_per_micro_batch;
          }
          if (moved[u].forward_gather && !kept_through_backward(u)) frees_gathered(f, u);
          f.kernels = units[u].forward_kernels;
          if (units[u].ring >= 0)
            previous = ring_pass(f, rings[static_cast<std::size_t>(units[u].ring)].forward, name[u].ring_forward,
                                 c[u].ring_fwd[static_cast<std::size_t>(cp_gid)], ready,
                                 units[u].tensor_parallel ? of_rank(c[u].tensor_fwd) : kNoCalls,
                                 units[u].tensor_parallel ? sp_gather(c[u].gather_fwd_sp) : kNoCalls);
          else
            previous = synced_pass(f, units[u].forward_runs, name[u].forward_runs, ready,
                                   units[u].tensor_parallel ? of_rank(c[u].tensor_fwd) : kNoCalls,
                                   units[u].tensor_parallel ? sp_gather(c[u].gather_fwd_sp) : kNoCalls);
          computed.push_back(static_cast<int>(comp.size()) - 1);
          if (offload && units[u].layer)
            offloaded[u] = copy_task(name[u].offload, CopyDirection::to_host,
                                     {{kCompute, computed.back()}});
        }
        // Backward: head first, embedding last; gathers one unit ahead.
        std::vector<int> done;  // compute-stream index of each backward, in backward order
        std::vector<TaskRef> gathered(n, TaskRef{-1, -1});  // each backward position's gather
        // Backward position k's gather; `lag` as gather_forward's.
        auto gather_backward = [&](std::size_t k, std::size_t lag) {
          const std::size_t u = n - 1 - k;
          if (shard <= 1 || !moved[u].backward_gather) return;
          std::vector<TaskRef> gdeps;
          const bool limited = rate_limited && k >= lag;
          if (limited) gdeps.push_back({kCompute, done[k - lag]});
          if (fp8_gather)
            gdeps = fp8_shard_cast(u, name[u].amax_backward, name[u].amax_all_reduce_backward, name[u].cast_backward,
                                   c[u].amax_bwd, gdeps);
          gather.push_back({name[u].gather_backward, TaskKind::collective,
                            Phase::parameter_sync, 0, c[u].gather_bwd[shard_gid], gdeps});
          gather.back().alloc = gathered_bytes[u];
          gather.back().host_sync = host_waits_for_gather_slot && limited;
          gather.back().host_after = after_last_pass();
          gathered[k] = last(gather, kGather);
        };
        // PyTorch FSDP (BACKWARD_POST) issues position k+1's gather in position k's post-backward
        // hook, before k's reduce-scatter (_post_backward_hook: _reshard, _prefetch_handles, then
        // the reduce-scatter): on a shared stream the order matters, so it is made there.
        const bool post = backward_prefetch == plan::FsdpBackwardPrefetch::backward_post;
        if (post) gather_backward(0, 2);
        for (std::size_t k = 0; k < n; ++k) {
          const std::size_t u = n - 1 - k;
          std::vector<TaskRef> ready{previous};
          // _pre_backward_hook: the unit's own gather unless prefetched, then (BACKWARD_PRE) the
          // next position's, before this unit's gradient computation. The root (no backward
          // gather here) is first in the execution order and prefetches nothing.
          if (!post && gathered[k].stream < 0) gather_backward(k, 2);
          if (backward_prefetch == plan::FsdpBackwardPrefetch::backward_pre && moved[u].backward_gather && k + 1 < n)
            gather_backward(k + 1, 3);
          if (gathered[k].stream >= 0) ready.push_back(gathered[k]);
          if (offload && units[u].layer) {
            // Prefetched one layer ahead: starts once the backward two units back is done.
            std::vector<TaskRef> fdeps;
            if (k >= 2) fdeps.push_back({kCompute, done[k - 2]});
            ready.push_back(copy_task(name[u].fetch, CopyDirection::to_device, fdeps));
          }
          // A tensor-parallel unit's recomputed forward is a task of its own (its all-reduce sits
          // between it and the backward proper), taken out of `backward`.
          // Under context parallelism too: the recompute runs its own ring.
          const bool ring = units[u].ring >= 0;
          const bool recompute_apart = p.activation_checkpointing && (units[u].tensor_parallel || ring);
          if (recompute_apart) {
            Task r{name[u].recompute, TaskKind::compute, Phase::backward,
                   units[u].recompute, -1, {}};
            set_memory_bound(r, units[u].recompute_memory);
            r.workspace = mem.workspace;
            r.kernels = units[u].recompute_kernels;
            const PassCalls tensor_calls = !units[u].tensor_parallel || recompute_keeps_scatters
                                               ? kNoCalls
                                               : of_rank(c[u].tensor_recompute);
            const PassCalls gather_calls = units[u].tensor_parallel ? sp_gather(c[u].gather_recompute_sp) : kNoCalls;
            // (torchtitan's op policy saved the ring attention's output: no ring in its recompute.)
            if (ring && full_recompute)
              ready = {ring_pass(r, rings[static_cast<std::size_t>(units[u].ring)].forward, name[u].ring_recompute,
                                 c[u].ring_recompute[static_cast<std::size_t>(cp_gid)], ready, tensor_calls,
                                 gather_calls)};
            else
              ready = {synced_pass(r, units[u].recompute_runs, name[u].recompute_runs, ready, tensor_calls,
                                   gather_calls)};
          }
          const Seconds dur = units[u].backward - (recompute_apart ? units[u].recompute : 0);
          Task b{name[u].backward, TaskKind::compute, Phase::backward, dur, -1, {}};
          set_memory_bound(b, units[u].backward_memory - (recompute_apart ? units[u].recompute_memory : 0));
          b.workspace = mem.workspace;
          b.kernels = units[u].backward_kernels - (recompute_apart ? units[u].recompute_kernels : 0);
          if (per_tensor) {
            const auto bp = backward_pass(u);
            b.workspace = pass_allocations[bp].workspace;
            b.release = pass_allocations[bp].release;
            b.allocations = static_cast<std::int16_t>(bp);
          } else if (u == 0) {
            b.release = mem.activations_per_micro_batch;
          }
          if (moved[u].backward_gather || kept_through_backward(u)) frees_gathered(b, u);
          b.alloc = gradient_bytes[u];
          static const std::vector<SyncedRun> kOneRun;
          if (ring)
            previous = ring_pass(b, rings[static_cast<std::size_t>(units[u].ring)].backward, name[u].ring_backward,
                                 c[u].ring_bwd[static_cast<std::size_t>(cp_gid)], ready,
                                 units[u].tensor_parallel ? of_rank(c[u].tensor_bwd) : kNoCalls,
                                 units[u].tensor_parallel ? sp_gather(c[u].gather_bwd_sp) : kNoCalls);
          else
            previous = synced_pass(b, recompute_apart ? kOneRun : units[u].backward_runs, name[u].backward_runs, ready,
                                   units[u].tensor_parallel ? of_rank(c[u].tensor_bwd) : kNoCalls,
                                   units[u].tensor_parallel ? sp_gather(c[u].gather_bwd_sp) : kNoCalls);
          done.push_back(static_cast<int>(comp.size()) - 1);
          if (post && k + 1 < n) gather_backward(k + 1, 2);
          if (shard > 1 && moved[u].reduce) {
            auto& rs = rp.streams[static_cast<std::size_t>(reduce_stream)].tasks;
            rs.push_back({name[u].reduce_scatter, TaskKind::collective,
                          Phase::gradient_sync, 0, c[u].reduce[shard_gid], {{kCompute, done.back()}}});
            rs.back().release_borrowed = gradient_bytes[u];
            rs.back().borrowed_pool = kCompute;
            rs.back().borrowed_free_at_issue = fsdp2;
            rs.back().workspace = reduce_input_bytes[u];
            rs.back().alloc_pool = kReduce;
            reduced.push_back(last(rs, reduce_stream));
          }
          if (replicas > 1 && moved[u].reduce) {
            std::vector<TaskRef> rdeps{{kCompute, done.back()}};
            if (shard > 1) rdeps = {reduced.back()};
            reduce.push_back({name[u].replica_all_reduce, TaskKind::collective,
                              Phase::gradient_sync, 0, c[u].replicate[replica_gid], rdeps});
            reduced.push_back(last(reduce, kReduce));
          }
        }
        if (!metric_ops.empty()) {
          // Composer's train metrics after the micro-batch's backward, on its cached logits.
          Task m{name_metrics[static_cast<std::size_t>(mb)], TaskKind::compute, Phase::backward,
                 metric_time, -1, {previous}};
          m.workspace = metric_workspace;
          set_memory_bound(m, metric_memory);
          if (per_tensor) {
            m.workspace = metric_allocations.workspace;
            m.allocations = metric_sequence;
          }
          m.kernels = model::ops_kernels(metric_ops);
          comp.push_back(std::move(m));
          previous = last(comp, kCompute);
        }
        if (reduced.empty()) reduced.push_back(previous);
      }
      Task step{"optimizer step (shard)", TaskKind::compute, Phase::optimizer, optimizer, -1, reduced};
      step.kernels = optimizer_kernels;
      set_memory_bound(step, optimizer_memory);
      comp.push_back(std::move(step));
      if (p.float8_precomputed_scales) {
        // precompute_float8_dynamic_scale_for_fsdp after the step (model/fsdp_float8.hpp): the
        // amaxes of every float8 shard, one all-reduce of them stacked, the scales.
        const auto ops = model::float8_precompute_scale_ops(fp8_shard_params, shard_dtype_bytes);
        Task norm{"float8 precompute amax", TaskKind::compute, Phase::optimizer, ops_duration({ops[0]}, in.device), -1,
                  {last(comp, kCompute)}};
        norm.kernels = ops[0].kernels;
        set_memory_bound(norm, model::ops_memory_bound({ops[0]}, in.device));
        comp.push_back(std::move(norm));
        std::vector<TaskRef> after{last(comp, kCompute)};
        if (shard > 1) {
          gather.push_back({"float8 precompute amax all-reduce", TaskKind::collective, Phase::parameter_sync, 0,
                            precompute_calls[static_cast<std::size_t>(shard_gid)], after});
          after = {last(gather, kGather)};
        }
        Task scales{"float8 precompute scales", TaskKind::compute, Phase::optimizer, ops_duration({ops[1]}, in.device),
                    -1, after};
        scales.kernels = ops[1].kernels;
        set_memory_bound(scales, model::ops_memory_bound({ops[1]}, in.device));
        comp.push_back(std::move(scales));
      }
      if (metric_sync > 0) {
        // Composer's metric sync after the step: the host waits for every stream (the loss's
        // .item() and the barriers), then makes its O(world) calls while the device idles.
        std::vector<TaskRef> drained;
        for (int st = 0; st < static_cast<int>(rp.streams.size()); ++st)
          if (!rp.streams[static_cast<std::size_t>(st)].tasks.empty())
            drained.push_back(last(rp.streams[static_cast<std::size_t>(st)].tasks, st));
        rp.streams.push_back({"host", StreamKind::host, {}});
        rp.streams.back().tasks.push_back(
            {"composer metric sync", TaskKind::host, Phase::other, metric_sync, -1, std::move(drained)});
      }
      prog.ranks.push_back(std::move(rp));
    }
  // Ranks in global order (rank_of puts TP innermost, and this loop visits d then t).
  return prog;
}

}  // namespace

}  // namespace trainsim::program

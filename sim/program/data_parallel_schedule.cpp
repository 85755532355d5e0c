#include "program/data_parallel_schedule.hpp"
#include "program/schedule_inputs.hpp"

#include <numeric>

#include "core/error.hpp"
#include "model/compute_cost.hpp"
#include "model/fp8_amax_reduction.hpp"

namespace trainsim::program {

namespace {

using model::ops_duration;

/// A slice of the backward pass whose gradients complete together, and its size.
struct BackwardSegment {
  Seconds duration = 0;
  int kernels = 0;
  double params = 0;
  std::size_t units = 0;  ///< backward units (head, layers, embedding) in the slice
};

/// Durations of the pieces of one micro-batch on one rank.
struct MicroBatchCost {
  Seconds forward = 0;
  Seconds embedding_forward = 0, layer_forward = 0, head_forward = 0;  ///< the pieces of `forward`
  std::vector<Seconds> layer_backward;  ///< last layer first, each with its accumulation
  Seconds head_backward = 0;            ///< runs first in backward
  Seconds embedding_backward = 0;       ///< runs last in backward
  double layer_params = 0;
  double head_params = 0;
  double embedding_params = 0;
  // Kernels the host issues for each piece (host dispatch):
  int embedding_forward_kernels = 0, layer_forward_kernels = 0, head_forward_kernels = 0, forward_kernels = 0;
  int layer_backward_kernels = 0, head_backward_kernels = 0, embedding_backward_kernels = 0;
};

MicroBatchCost micro_batch_cost(const model::TransformerSpec& s, const model::DeviceProfile& dev,
                                const model::LayerShape& shape, bool accumulate, bool recompute) {
  MicroBatchCost c;
  const auto emb = model::embedding_forward_ops(s, shape);
  const auto layer_f = model::layer_forward_ops(s, shape);
  const auto head_f = model::head_forward_ops(s, shape);
  const double layers = static_cast<double>(s.layers);
  c.embedding_forward = ops_duration(emb, dev);
  c.layer_forward = ops_duration(layer_f, dev);
  c.head_forward = ops_duration(head_f, dev);
  c.forward = c.embedding_forward + layers * c.layer_forward + c.head_forward;
  c.layer_params = model::parameters_per_layer(s);
  c.embedding_params = static_cast<double>(s.vocab + s.seq_len) * static_cast<double>(s.hidden);
  c.head_params = model::parameter_count(s) - layers * c.layer_params - c.embedding_params;
  auto with_accumulation = [&](Seconds t, double params) {
    return accumulate ? t + model::op_duration(model::gradient_accumulation_op(params), dev) : t;
  };
  const Seconds layer_b =
      ops_duration(model::layer_backward_ops(s, shape), dev) + (recompute ? ops_duration(layer_f, dev) : 0);
  c.layer_backward.assign(static_cast<std::size_t>(s.layers), with_accumulation(layer_b, c.layer_params));
  const auto head_b = model::head_backward_ops(s, shape);
  const auto emb_b = model::embedding_backward_ops(s, shape);
  c.head_backward = with_accumulation(ops_duration(head_b, dev), c.head_params);
  c.embedding_backward = with_accumulation(ops_duration(emb_b, dev), c.embedding_params);
  const int accumulation_kernel = accumulate ? 1 : 0;
  c.embedding_forward_kernels = model::ops_kernels(emb);
  c.layer_forward_kernels = model::ops_kernels(layer_f);
  c.head_forward_kernels = model::ops_kernels(head_f);
  c.forward_kernels = c.embedding_forward_kernels + static_cast<int>(s.layers) * c.layer_forward_kernels +
                      c.head_forward_kernels;
  c.layer_backward_kernels = model::ops_kernels(model::layer_backward_ops(s, shape)) +
                             (recompute ? c.layer_forward_kernels : 0) + accumulation_kernel;
  c.head_backward_kernels = model::ops_kernels(head_b) + accumulation_kernel;
  c.embedding_backward_kernels = model::ops_kernels(emb_b) + accumulation_kernel;
  return c;
}

/// Splits the backward pass into buckets of at least `bucket_params` parameters, in the order
/// gradients become ready (head, last layer ... first layer, embedding), as DDP's and
/// DeepSpeed's bucketing do. The last bucket takes what is left.
std::vector<BackwardSegment> bucketize(const MicroBatchCost& c, double bucket_params) {
  std::vector<BackwardSegment> out(1);
  auto add = [&](Seconds t, int kernels, double p) {
    out.back().duration += t;
    out.back().kernels += kernels;
    out.back().params += p;
    ++out.back().units;
    if (bucket_params > 0 && out.back().params >= bucket_params) out.emplace_back();
  };
  add(c.head_backward, c.head_backward_kernels, c.head_params);
  for (Seconds t : c.layer_backward) add(t, c.layer_backward_kernels, c.layer_params);
  add(c.embedding_backward, c.embedding_backward_kernels, c.embedding_params);
  if (out.back().params == 0 && out.size() > 1) {
    out[out.size() - 2].duration += out.back().duration;
    out[out.size() - 2].kernels += out.back().kernels;
    out[out.size() - 2].units += out.back().units;
    out.pop_back();
  }
  return out;
}

}  // namespace

DataParallelConfig data_parallel_config(const plan::TrainingPlan& plan, const plan::Layout& layout) {
  DataParallelConfig c;
  c.kind = plan.sharding == plan::Sharding::none    ? DataParallelKind::ddp
           : plan.sharding == plan::Sharding::zero2 ? DataParallelKind::zero2
                                                    : DataParallelKind::zero1;
  c.world = static_cast<int>(layout.world);
  c.ranks_per_node = static_cast<int>(layout.ranks_per_node);
  c.micro_batch = plan.micro_batch;
  c.accumulation = plan.accumulation;
  c.bucket_elements = plan.bucket_elements;
  c.gradient_bytes = plan.gradient_wire_bytes;
  c.parameter_bytes = plan.parameter_wire_bytes;
  c.shard = static_cast<int>(layout.shard);
  c.activation_checkpointing = plan.activation_checkpointing;
  c.activation_offloading = plan.activation_checkpointing && plan.activation_offloading;
  c.flash_attention = plan.flash_attention;
  c.fused_cross_entropy = plan.fused_cross_entropy;
  c.eager_kernels = plan.eager_kernels;
  c.module_kernels = module_kernels_of(plan.module_kernels);
  c.fp8 = fp8_linears_of(plan);
  c.megatron_fp16_optimizer = plan.optimizer_implementation == plan::OptimizerImplementation::megatron_fp16;
  c.fp8_amax_reduction = te_amax_reduction_of(plan);
  c.fp8_amax_tp_only = plan.fp8_amax_tp_only;
  if (plan.trainer == plan::TrainingLoop::hf_trainer_4_21) c.trainer = model::TrainingLoop::hf_trainer_4_21;
  if (plan.trainer == plan::TrainingLoop::optimum_habana_89e505a) c.trainer = model::TrainingLoop::optimum_habana_89e505a;
  return c;
}

Program build_data_parallel(const model::TransformerSpec& spec, const model::DeviceProfile& dev,
                            const DataParallelConfig& cfg) {
  TRAINSIM_CHECK(cfg.world >= 1 && cfg.ranks_per_node >= 1, "bad world size");
  TRAINSIM_CHECK(cfg.micro_batch >= 1 && cfg.accumulation >= 1, "bad batch configuration");
  const bool accumulate = cfg.accumulation > 1;
  const model::LayerShape shape{cfg.micro_batch, 1, false, cfg.flash_attention, cfg.fused_cross_entropy,
                                cfg.eager_kernels, cfg.module_kernels, cfg.fp8};
  const MicroBatchCost cost = micro_batch_cost(spec, dev, shape, accumulate, cfg.activation_checkpointing);
  const auto segments = bucketize(cost, cfg.bucket_elements);
  Seconds full_backward = 0;
  int full_backward_kernels = 0;
  for (const auto& s : segments) {
    full_backward += s.duration;
    full_backward_kernels += s.kernels;
  }
  const double total_params = model::parameter_count(spec);

  Program prog;
  prog.samples_per_step = cfg.micro_batch * cfg.accumulation * cfg.world;
  const bool zero1 = cfg.kind != DataParallelKind::ddp;  // optimizer states sharded
  // Micro-batches whose backward reduces gradients: every one under ZeRO-2, else the last.
  const long reductions = cfg.kind == DataParallelKind::zero2 ? cfg.accumulation : 1;
  // Shard groups are consecutive ranks (inside a node first); a replica group holds the ranks at
  // the same place in every shard group.
  const int shard = zero1 && cfg.shard > 0 && cfg.shard < cfg.world ? cfg.shard : cfg.world;
  TRAINSIM_CHECK(cfg.world % shard == 0, "the shard degree must divide the data-parallel ranks");
  const int shard_groups = cfg.world / shard;
  auto shard_group = [&](int g) {
    std::vector<int> ranks(static_cast<std::size_t>(shard));
    std::iota(ranks.begin(), ranks.end(), g * shard);
    return ranks;
  };
  auto replica_group = [&](int j) {
    std::vector<int> ranks;
    for (int g = 0; g < shard_groups; ++g) ranks.push_back(g * shard + j);
    return ranks;
  };
  auto add_call = [&](std::string name, collective::Op op, Bytes size, std::vector<int> group) {
    prog.collectives.push_back({std::move(name), op, size, std::move(group)});
  };
  // Collective indices: reduction n's bucket b in shard group g is (n * buckets + b) *
  // shard_groups + g; with replicas, the all-reduce of each shard across them follows (once, the
  // accumulated shard at the last micro-batch); then one gather per shard group.
  const std::size_t buckets = segments.size();
  for (long n = 0; n < reductions; ++n)
    for (std::size_t b = 0; b < buckets; ++b)
      for (int g = 0; g < shard_groups; ++g)
        add_call("grad bucket " + std::to_string(b) + (reductions > 1 ? " mb" + std::to_string(n) : ""),
                 zero1 ? collective::Op::reduce_scatter : collective::Op::all_reduce,
                 segments[b].params * cfg.gradient_bytes, shard_group(g));
  const int across = static_cast<int>(prog.collectives.size());
  if (shard_groups > 1 && zero1)
    for (std::size_t b = 0; b < segments.size(); ++b)
      for (int j = 0; j < shard; ++j)
        add_call("grad bucket " + std::to_string(b) + " shard across replicas", collective::Op::all_reduce,
                 segments[b].params * cfg.gradient_bytes / shard, replica_group(j));
  // TE's amax all-reduces, two per micro-batch (forward, backward) over every rank; none where
  // the group is one rank (TE skips it: a single rank, or tp_only_amax_red without TP).
  const bool amax_all_reduce = cfg.fp8_amax_reduction && !cfg.fp8_amax_tp_only && cfg.world > 1;
  const int amax_first = static_cast<int>(prog.collectives.size());
  if (amax_all_reduce) {
    std::vector<int> everyone(static_cast<std::size_t>(cfg.world));
    std::iota(everyone.begin(), everyone.end(), 0);
    for (long mb = 0; mb < cfg.accumulation; ++mb)
      for (const bool forward : {true, false})
        add_call(std::string("fp8 amax all-reduce ") + (forward ? "forward" : "backward") + " mb" + std::to_string(mb),
                 collective::Op::all_reduce, model::te_amax_buffer_bytes(spec.layers, forward), everyone);
  }
  const int gather = static_cast<int>(prog.collectives.size());
  if (zero1)
    for (int g = 0; g < shard_groups; ++g)
      add_call("parameter all-gather", collective::Op::all_gather, total_params * cfg.parameter_bytes,
               shard_group(g));
  // The communication tasks that reduce bucket b of micro-batch mb on rank r, in issue order.
  auto reduce_bucket = [&](Stream& comm, long mb, std::size_t b, int r, TaskRef ready) {
    const long n = reductions > 1 ? mb : 0;
    const int reduce = static_cast<int>((static_cast<std::size_t>(n) * buckets + b) * shard_groups) + r / shard;
    comm.tasks.push_back({prog.collectives[static_cast<std::size_t>(reduce)].name, TaskKind::collective,
                          Phase::gradient_sync, 0, reduce, {ready}});
    if (shard_groups > 1 && zero1 && mb + 1 == cfg.accumulation) {
      const int all = across + static_cast<int>(b) * shard + r % shard;
      comm.tasks.push_back({prog.collectives[static_cast<std::size_t>(all)].name, TaskKind::collective,
                            Phase::gradient_sync, 0, all, {}});
    }
  };

  const double optimizer_params = zero1 ? total_params / shard : total_params;
  // Without model parallelism Megatron's two scalar all-reduces have a group of one: no traffic.
  const Seconds optimizer = cfg.megatron_fp16_optimizer
                                ? model::ops_duration(model::megatron_fp16_optimizer_ops(optimizer_params), dev)
                                : model::op_duration(model::optimizer_step_op(optimizer_params), dev);

  // Activation offloading needs the forward and backward split into units (embedding, layers,
  // head), as the sharded schedule has them: each layer's checkpointed input goes to host memory
  // after the layer's forward (a forward waits for the copy of the layer two before it: two
  // inputs on device, memory/rank_memory.hpp) and comes back one layer ahead of its backward.
  const bool offload = cfg.activation_offloading;
  const Bytes layer_input = model::layer_input_bytes(spec, model::LayerShape{cfg.micro_batch});
  const std::size_t units = static_cast<std::size_t>(spec.layers) + 2;
  auto unit_name = [&](std::size_t u) {  // u in forward order
    return u == 0 ? std::string("embedding") : u + 1 == units ? std::string("head") : "layer " + std::to_string(u - 1);
  };
  auto backward_of_unit = [&](std::size_t k) {  // k in backward order: head, last layer ... embedding
    return k == 0 ? cost.head_backward : k + 1 == units ? cost.embedding_backward : cost.layer_backward[k - 1];
  };
  auto backward_kernels_of_unit = [&](std::size_t k) {
    return k == 0 ? cost.head_backward_kernels : k + 1 == units ? cost.embedding_backward_kernels
                                                                : cost.layer_backward_kernels;
  };
  TRAINSIM_CHECK(!cfg.trainer || !zero1, "a training loop is modelled with DDP only");
  const std::vector<model::TrainerPhase> trainer_phases =
      cfg.trainer ? model::trainer_step_phases(*cfg.trainer, total_params, model::hf_parameter_tensors(spec))
                  : std::vector<model::TrainerPhase>{};
  // The Trainer's DataLoader collates each micro-batch in the training process (num_workers 0):
  // run_mlm.py's DataCollatorForLanguageModeling, on the host before the micro-batch's forward.
  const Seconds collate = cfg.trainer && spec.mlm_head
                              ? dev.mlm_collate_token * static_cast<double>(cfg.micro_batch) *
                                    static_cast<double>(spec.seq_len)
                              : 0.0;
  // One kernel per optimizer pass; foreach / fused optimizers launch one per chunk of tensors.
  const int optimizer_kernels = cfg.megatron_fp16_optimizer ? 5 : 1;

  for (int r = 0; r < cfg.world; ++r) {
    RankProgram rp;
    rp.rank = r;
    rp.resident = cfg.resident_memory;
    rp.streams.resize(offload ? 3 : 2);
    const int amax_stream = static_cast<int>(rp.streams.size());
    if (amax_all_reduce) rp.streams.push_back({"fp8 amax", StreamKind::communication, {}});
    const int host_stream = static_cast<int>(rp.streams.size());
    if (collate > 0) rp.streams.push_back({"host", StreamKind::host, {}});
    Stream& comp = rp.streams[0];
    Stream& comm = rp.streams[1];
    comp.name = "compute";
    comp.kind = StreamKind::compute;
    comm.name = "communication";
    comm.kind = StreamKind::communication;
    if (offload) {
      rp.streams[2].name = "host-copy";
      rp.streams[2].kind = StreamKind::copy;
    }
    auto copy = [&](std::string name, CopyDirection dir, std::vector<TaskRef> deps) {
      Task c{std::move(name), TaskKind::host_copy, Phase::offload, 0, -1, std::move(deps)};
      c.copy_bytes = layer_input;
      c.copy_direction = dir;
      rp.streams[2].tasks.push_back(std::move(c));
      return TaskRef{2, static_cast<int>(rp.streams[2].tasks.size()) - 1};
    };
    auto last_compute = [&] { return TaskRef{0, static_cast<int>(comp.tasks.size()) - 1}; };
    // TE's reduce_and_update_fp8_tensors at the end of a pass: concat, all-reduce, update.
    auto amax_reduction = [&](long mb, bool forward) {
      if (!cfg.fp8_amax_reduction) return;
      const std::string tag = std::string(forward ? " forward" : " backward") + " mb" + std::to_string(mb);
      const auto concat = model::te_amax_concat_op(spec.layers, forward);
      Task c{"fp8 amax concat" + tag, TaskKind::compute, forward ? Phase::forward : Phase::backward,
             model::op_duration(concat, dev), -1, {}};
      c.kernels = concat.kernels;
      rp.streams[0].tasks.push_back(std::move(c));
      const auto update = model::te_amax_update_op(spec.layers, forward);
      Task u{"fp8 amax and scale update" + tag, TaskKind::compute, forward ? Phase::forward : Phase::backward,
             model::op_duration(update, dev), -1, {}};
      u.kernels = update.kernels;
      if (amax_all_reduce) {
        const int call = amax_first + static_cast<int>(2 * mb + (forward ? 0 : 1));
        rp.streams[static_cast<std::size_t>(amax_stream)].tasks.push_back(
            {prog.collectives[static_cast<std::size_t>(call)].name, TaskKind::collective,
             forward ? Phase::forward : Phase::backward, 0, call, {TaskRef{0, static_cast<int>(rp.streams[0].tasks.size()) - 1}}});
        u.deps.push_back({amax_stream, static_cast<int>(rp.streams[static_cast<std::size_t>(amax_stream)].tasks.size()) - 1});
      }
      rp.streams[0].tasks.push_back(std::move(u));
    };
    // The host task collating micro-batch mb: each one holds the host thread, and the
    // micro-batch's first forward waits for it. Later micro-batches' collation follows on the
    // host, which issues ahead of the device, so it can overlap the device's earlier work.
    auto collated = [&](long mb) -> std::vector<TaskRef> {
      if (collate <= 0) return {};
      auto& host = rp.streams[static_cast<std::size_t>(host_stream)].tasks;
      host.push_back({"DataLoader collate mb" + std::to_string(mb), TaskKind::host, Phase::other, collate, -1, {}});
      return {TaskRef{host_stream, static_cast<int>(host.size()) - 1}};
    };
    for (long mb = 0; mb < cfg.accumulation; ++mb) {
      const std::string tag = " mb" + std::to_string(mb);
      const bool reduce_now = mb + 1 == cfg.accumulation || reductions > 1;
      const std::vector<TaskRef> batch_ready = collated(mb);
      if (offload) {
        std::vector<TaskRef> offloaded(units, TaskRef{-1, -1});
        for (std::size_t u = 0; u < units; ++u) {
          const bool layer = u > 0 && u + 1 < units;
          Task f{"forward " + unit_name(u) + tag, TaskKind::compute, Phase::forward,
                 u == 0 ? cost.embedding_forward : layer ? cost.layer_forward : cost.head_forward, -1, {}};
          f.kernels = u == 0 ? cost.embedding_forward_kernels : layer ? cost.layer_forward_kernels
                                                                    : cost.head_forward_kernels;
          if (u == 0) {
            f.alloc = cfg.activation_memory;
            f.deps = batch_ready;
          }
          if (u >= 2 && offloaded[u - 2].stream >= 0) f.deps.push_back(offloaded[u - 2]);
          comp.tasks.push_back(std::move(f));
          if (layer) offloaded[u] = copy("offload input " + unit_name(u) + tag, CopyDirection::to_host, {last_compute()});
        }
        amax_reduction(mb, true);
        std::vector<TaskRef> done;  // each backward unit's task, in backward order
        std::size_t k = 0;
        for (std::size_t b = 0; b < segments.size(); ++b)
          for (std::size_t i = 0; i < segments[b].units; ++i, ++k) {
            const std::size_t u = units - 1 - k;
            Task bw{"backward " + unit_name(u) + tag, TaskKind::compute, Phase::backward, backward_of_unit(k), -1, {}};
            bw.workspace = cfg.workspace_memory;
            bw.kernels = backward_kernels_of_unit(k);
            if (u > 0 && u + 1 < units)
              bw.deps.push_back(copy("fetch input " + unit_name(u) + tag, CopyDirection::to_device,
                                     k >= 2 ? std::vector<TaskRef>{done[k - 2]} : std::vector<TaskRef>{}));
            if (u == 0) bw.release = cfg.activation_memory;
            comp.tasks.push_back(std::move(bw));
            done.push_back(last_compute());
            if (reduce_now && i + 1 == segments[b].units) reduce_bucket(comm, mb, b, r, last_compute());
          }
        amax_reduction(mb, false);
        continue;
      }
      Task forward{"forward" + tag, TaskKind::compute, Phase::forward, cost.forward, -1, batch_ready};
      forward.alloc = cfg.activation_memory;
      forward.kernels = cost.forward_kernels;
      comp.tasks.push_back(forward);
      amax_reduction(mb, true);
      if (!reduce_now) {
        Task backward{"backward" + tag, TaskKind::compute, Phase::backward, full_backward, -1, {}};
        backward.workspace = cfg.workspace_memory;
        backward.release = cfg.activation_memory;
        backward.kernels = full_backward_kernels;
        comp.tasks.push_back(backward);
        amax_reduction(mb, false);
        continue;
      }
      // A reducing micro-batch (the last; every one under ZeRO-2): each bucket's reduction starts
      // when its gradients are ready.
      for (std::size_t b = 0; b < segments.size(); ++b) {
        Task backward{"backward" + tag + " bucket " + std::to_string(b), TaskKind::compute,
                      Phase::backward, segments[b].duration, -1, {}};
        backward.workspace = cfg.workspace_memory;
        backward.kernels = segments[b].kernels;
        if (b + 1 == segments.size()) backward.release = cfg.activation_memory;
        comp.tasks.push_back(backward);
        reduce_bucket(comm, mb, b, r, TaskRef{0, static_cast<int>(comp.tasks.size()) - 1});
      }
      amax_reduction(mb, false);
    }
    std::vector<TaskRef> reduced;
    for (std::size_t i = 0; i < comm.tasks.size(); ++i) reduced.push_back({1, static_cast<int>(i)});
    if (cfg.trainer) {
      // The loop's first phase waits for the reductions (DDP's finalize makes the compute stream
      // wait for them); a phase after a read-back is issued once everything before it finished.
      for (const auto& ph : trainer_phases) {
        Task t{ph.name, TaskKind::compute, Phase::optimizer, model::phase_duration(ph, dev), -1, {}};
        if (ph.host_sync_before) {
          t.host_sync = true;
          t.deps.push_back(last_compute());
        }
        if (&ph == &trainer_phases.front()) t.deps = reduced;
        t.kernels = model::ops_kernels(ph.ops);
        if (ph.python_loop) t.host_per_kernel = dev.eager_copy_call;
        comp.tasks.push_back(std::move(t));
      }
      prog.ranks.push_back(std::move(rp));
      continue;
    }
    comp.tasks.push_back({zero1 ? "optimizer step (shard)" : "optimizer step", TaskKind::compute,
                          Phase::optimizer, optimizer, -1, reduced});
    comp.tasks.back().kernels = optimizer_kernels;
    if (zero1) {
      const TaskRef stepped{0, static_cast<int>(comp.tasks.size()) - 1};
      comm.tasks.push_back({"parameter all-gather", TaskKind::collective, Phase::parameter_sync, 0,
                            gather + r / shard, {stepped}});
    }
    prog.ranks.push_back(std::move(rp));
  }
  return prog;
}

}  // namespace trainsim::program

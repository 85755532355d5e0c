#include "program/pipeline_schedule.hpp"

#include <algorithm>
#include <map>
#include <string>

#include "core/error.hpp"
#include "model/compute_cost.hpp"

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

}  // namespace

std::vector<PipelineSlot> pipeline_order(plan::PipelineSchedule schedule, long pp, long stage,
                                         long m, long chunks) {
  std::vector<PipelineSlot> order;
  if (schedule == plan::PipelineSchedule::gpipe) {
    for (long b = 0; b < m; ++b) order.push_back({b, 0, true});
    for (long b = 0; b < m; ++b) order.push_back({b, 0, false});
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
  const long warmup = std::min(total, (pp - stage - 1) * 2 + (chunks - 1) * pp);
  for (long k = 0; k < warmup; ++k) order.push_back(interleaved_slot(k, pp, chunks, true));
  for (long i = 0; i < total - warmup; ++i) {
    order.push_back(interleaved_slot(warmup + i, pp, chunks, true));
    order.push_back(interleaved_slot(i, pp, chunks, false));
  }
  for (long k = total - warmup; k < total; ++k) order.push_back(interleaved_slot(k, pp, chunks, false));
  return order;
}

Program build_pipeline_parallel(const ScheduleInputs& in) {
  const auto& s = in.model;
  const auto& p = in.plan;
  const auto& L = in.layout;
  const long pp = p.pp, v = p.virtual_stages, m = p.accumulation, tp = p.tp;
  const long virtual_stages = pp * v;
  TRAINSIM_CHECK(s.layers % virtual_stages == 0, "layers must divide over the virtual stages");
  if (p.pipeline == plan::PipelineSchedule::interleaved && v > 1)
    TRAINSIM_CHECK(m % pp == 0, "interleaving needs micro-batches a multiple of the stages");
  const long layers_per_chunk = s.layers / virtual_stages;
  const model::LayerShape shape{p.micro_batch, tp, p.sequence_parallel, p.flash_attention,
                                p.fused_cross_entropy};
  const auto layer_f = model::layer_forward_ops(s, shape);
  const Seconds lf = ops_duration(layer_f, in.device);
  const Seconds lb = ops_duration(model::backward_of(layer_f), in.device) +
                     (p.activation_checkpointing ? lf : 0);
  const auto emb = model::embedding_forward_ops(s, shape);
  const auto head = model::head_forward_ops(s, shape);
  const Seconds emb_f = ops_duration(emb, in.device), emb_b = ops_duration(model::backward_of(emb), in.device);
  const Seconds head_f = ops_duration(head, in.device), head_b = ops_duration(model::backward_of(head), in.device);
  const Bytes activation = 2.0 * static_cast<double>(p.micro_batch * s.seq_len * s.hidden);
  const Bytes boundary = activation / (p.sequence_parallel ? static_cast<double>(tp) : 1.0);
  const double layer_params = model::parameters_per_layer(s) / static_cast<double>(tp);
  const bool sequence_parallel = p.sequence_parallel && tp > 1;
  // Activation offloading: each layer's checkpointed input goes to host memory after the layer's
  // forward and comes back before its backward (memory/rank_memory.hpp keeps two layer inputs of
  // each micro-batch in flight on device), as in the sharded schedule.
  const bool offload = p.activation_checkpointing && p.activation_offloading;
  const Bytes layer_input = model::layer_input_bytes(s, shape);

  Program prog;
  prog.samples_per_step = p.micro_batch * m * L.dp;
  auto add_call = [&](InternedName name, collective::Op op, Bytes size, std::vector<int> group) {
    prog.collectives.push_back({name, op, size, std::move(group)});
    return static_cast<int>(prog.collectives.size()) - 1;
  };
  // Calls are made by the first member that meets them and found by the others: flat tables,
  // since a 1,024-GPU job makes hundreds of thousands of them.
  // Point-to-point calls by (direction, virtual stage boundary, micro-batch, dp, tp).
  std::vector<int> p2p(static_cast<std::size_t>(2 * virtual_stages * m * L.dp * tp), -1);
  // Tensor-parallel all-reduces by (stage, dp index), in the order the group's members issue them.
  std::vector<std::vector<int>> tp_calls(static_cast<std::size_t>(pp * L.dp));
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
  std::vector<std::vector<int>> shard_calls(static_cast<std::size_t>(pp * tp * replicas));
  std::vector<std::vector<int>> replica_calls(static_cast<std::size_t>(pp * tp * shard));
  // Every (dp, tp) pair's call at one boundary and micro-batch has the same name: made once.
  std::vector<InternedName> p2p_names(static_cast<std::size_t>(2 * virtual_stages * m));
  auto p2p_call = [&](int backward, long vs, long b, long d, long t) {
    int& slot = p2p[static_cast<std::size_t>((((backward * virtual_stages + vs) * m + b) * L.dp + d) * tp + t)];
    if (slot >= 0) return slot;
    // Boundary vs -> vs + 1 (forward) or vs + 1 -> vs (backward).
    const int from = rank_of(in, vs % pp, d, t), to = rank_of(in, (vs + 1) % pp, d, t);
    InternedName& what = p2p_names[static_cast<std::size_t>((backward * virtual_stages + vs) * m + b)];
    if (what.empty())
      what = (backward ? "gradient " : "activation ") + std::to_string(vs) + (backward ? "<-" : "->") +
             std::to_string(vs + 1) + " mb" + std::to_string(b);
    slot = add_call(what, collective::Op::send_recv, boundary,
                    backward ? std::vector<int>{to, from} : std::vector<int>{from, to});
    return slot;
  };

  const Seconds optimizer_per_param = model::op_duration(model::optimizer_step_op(1e6), in.device) / 1e6;
  for (long stage = 0; stage < pp; ++stage) {
    // What every rank of the stage shares: its slots and their task names.
    const auto order = pipeline_order(p.pipeline, pp, stage, m, v);
    // A chunk's gradients are final once its last micro-batch's backward is done.
    std::vector<std::size_t> last_backward(static_cast<std::size_t>(v), 0);
    for (std::size_t o = 0; o < order.size(); ++o)
      if (!order[o].forward) last_backward[static_cast<std::size_t>(order[o].chunk)] = o;
    // Names are made once per slot and shared by every rank of the stage (interned).
    struct SlotNames {
      std::vector<InternedName> layers, copies;  // copies: offload (forward) or fetch (backward)
      InternedName tp_gather, tp_reduce, recv, send;
    };
    std::vector<SlotNames> slot_names;
    for (const auto& slot : order) {
      const std::string tag = " mb" + std::to_string(slot.micro_batch) + " c" + std::to_string(slot.chunk);
      auto& names = slot_names.emplace_back();
      for (long l = 0; l < layers_per_chunk; ++l) {
        const std::string layer = tag + " layer " + std::to_string(l);
        names.layers.emplace_back((slot.forward ? "forward" : "backward") + layer);
        if (offload) names.copies.emplace_back((slot.forward ? "offload input" : "fetch input") + layer);
      }
      names.tp_gather = "tp all-gather" + tag;
      names.tp_reduce = (sequence_parallel ? "tp reduce-scatter" : "tp all-reduce") + tag;
      names.recv = (slot.forward ? "recv activation" : "recv gradient") + tag;
      names.send = (slot.forward ? "send activation" : "send gradient") + tag;
    }
    for (long d = 0; d < L.dp; ++d)
      for (long t = 0; t < tp; ++t) {
        const StageMemory& mem = in.stages.at(static_cast<std::size_t>(stage));
        RankProgram rp;
        rp.rank = rank_of(in, stage, d, t);
        rp.resident = mem.resident;
        enum { kCompute = 0, kTensor = 1, kReduce = 2, kFirstP2p = 3 };
        rp.streams = {{"compute", StreamKind::compute, {}},
                      {"tensor-parallel", StreamKind::communication, {}},
                      {"data-parallel", StreamKind::communication, {}}};
        // Per chunk: receive activations, send activations, receive gradients, send gradients.
        for (long c = 0; c < v; ++c)
          for (const char* n : {"recv act", "send act", "recv grad", "send grad"})
            rp.streams.push_back({std::string(n) + " c" + std::to_string(c), StreamKind::communication, {}});
        auto p2p_stream = [&](long c, int which) { return static_cast<int>(kFirstP2p + 4 * c + which); };
        const int kCopy = static_cast<int>(rp.streams.size());
        if (offload) rp.streams.push_back({"host-copy", StreamKind::copy, {}});
        auto& comp = rp.streams[kCompute].tasks;
        auto push = [&](int stream, Task task) {
          rp.streams[static_cast<std::size_t>(stream)].tasks.push_back(std::move(task));
          return TaskRef{stream, static_cast<int>(rp.streams[static_cast<std::size_t>(stream)].tasks.size()) - 1};
        };
        comp.reserve(order.size() * static_cast<std::size_t>(layers_per_chunk) + 1);
        const long replica = d / shard, position = d % shard;
        auto& my_shard_calls = shard_calls[static_cast<std::size_t>((stage * tp + t) * replicas + replica)];
        auto& my_replica_calls = replica_calls[static_cast<std::size_t>((stage * tp + t) * shard + position)];
        std::size_t shard_sequence = 0, replica_sequence = 0;
        // The call at this rank's position in its group's sequence, made by the first member.
        auto group_call = [&](std::vector<int>& calls, std::size_t& sequence, bool across_replicas,
                              std::string name, collective::Op op, Bytes size) {
          if (sequence == calls.size()) {
            std::vector<int> group;
            if (across_replicas)
              for (long r = 0; r < replicas; ++r) group.push_back(rank_of(in, stage, r * shard + position, t));
            else
              for (long k = 0; k < shard; ++k) group.push_back(rank_of(in, stage, replica * shard + k, t));
            calls.push_back(add_call(std::move(name), op, size, std::move(group)));
          }
          return calls[sequence++];
        };
        const std::string stage_tag = " stage " + std::to_string(stage);
        int buckets = 0;
        TaskRef synced{-1, -1};  // the last gradient collective
        // Reduces one bucket of `params` gradients once `ready` is done: a reduce-scatter within
        // the shard group (ZeRO-1), an all-reduce of what each rank then holds across replicas.
        auto sync_gradients = [&](double params, TaskRef ready, bool last_micro_batch) {
          const std::string bucket = overlap ? " bucket " + std::to_string(buckets) : "";
          ++buckets;
          if (shard > 1) {
            const int c = group_call(my_shard_calls, shard_sequence, false, "gradient reduce-scatter" + stage_tag + bucket,
                                     collective::Op::reduce_scatter, params * p.gradient_wire_bytes);
            ready = synced = push(kReduce, {"gradient reduce-scatter" + bucket, TaskKind::collective,
                                            Phase::gradient_sync, 0, c, {ready}});
          }
          if (replicas > 1 && last_micro_batch) {  // the accumulated shard, once
            const std::string what = shard > 1 ? "replica all-reduce" : "gradient all-reduce";
            const int c = group_call(my_replica_calls, replica_sequence, true, what + stage_tag + bucket,
                                     collective::Op::all_reduce,
                                     params / static_cast<double>(shard) * p.gradient_wire_bytes);
            synced = push(kReduce, {what + bucket, TaskKind::collective, Phase::gradient_sync, 0, c, {ready}});
          }
        };
        double pending = 0;  // gradients of the chunk's last backward not yet in a bucket
        if (tp > 1) rp.streams[kTensor].tasks.reserve(order.size() * static_cast<std::size_t>(layers_per_chunk));
        // A chunk's point-to-point streams carry at most one task per micro-batch.
        for (auto st = static_cast<std::size_t>(kFirstP2p); st < rp.streams.size(); ++st)
          if (rp.streams[st].kind == StreamKind::communication) rp.streams[st].tasks.reserve(static_cast<std::size_t>(m));
        TaskRef previous{-1, -1};
        std::size_t tp_sequence = 0;  // the TP group's members issue their all-reduces in the same order
        auto& group_calls = tp_calls[static_cast<std::size_t>(stage * L.dp + d)];
        auto tp_call = [&](InternedName name, collective::Op op, Bytes size) {
          if (tp_sequence == group_calls.size()) {
            std::vector<int> group;
            group.reserve(static_cast<std::size_t>(tp));
            for (long k = 0; k < tp; ++k) group.push_back(rank_of(in, stage, d, k));
            group_calls.push_back(add_call(name, op, size, std::move(group)));
          }
          return group_calls[tp_sequence++];
        };
        for (std::size_t o = 0; o < order.size(); ++o) {
          const auto& slot = order[o];
          const long vs = slot.chunk * pp + stage;
          const bool first = vs == 0, last = vs == virtual_stages - 1;
          const SlotNames& names = slot_names[o];
          std::vector<TaskRef> ready;
          if (previous.stream >= 0) ready.push_back(previous);
          // Inputs from the neighbouring virtual stage.
          if (slot.forward && !first) {
            const int c = p2p_call(0, vs - 1, slot.micro_batch, d, t);
            ready.push_back(push(p2p_stream(slot.chunk, 0), {names.recv, TaskKind::collective,
                                                             Phase::forward, 0, c, {}}));
          }
          if (!slot.forward && !last) {
            const int c = p2p_call(1, vs, slot.micro_batch, d, t);
            ready.push_back(push(p2p_stream(slot.chunk, 2), {names.recv, TaskKind::collective,
                                                             Phase::backward, 0, c, {}}));
          }
          // The chunk's layers, each followed by its TP all-reduce (with sequence parallelism:
          // preceded by an all-gather and followed by a reduce-scatter); the ends add
          // embedding/head.
          std::vector<TaskRef> offloaded;  // this slot's copies to host, by layer
          for (long l = 0; l < layers_per_chunk; ++l) {
            const Phase phase = slot.forward ? Phase::forward : Phase::backward;
            // A layer pass all-reduces twice (after attention and after the MLP; one call of
            // their summed size here); backward with recompute also redoes the forward's two.
            const Bytes tp_bytes = 2 * activation * (p.activation_checkpointing && !slot.forward ? 2 : 1);
            if (sequence_parallel) {
              // Megatron-SP: the attention and MLP inputs are all-gathered from the sequence
              // shards (in backward: the output gradients), the same bytes as the all-reduce's
              // second half.
              const int c = tp_call(names.tp_gather, collective::Op::all_gather, tp_bytes);
              ready = {push(kTensor, {names.tp_gather, TaskKind::collective, phase, 0, c, ready})};
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
            Seconds dur = slot.forward ? lf : lb;
            if (l == 0 && first) dur += slot.forward ? emb_f : 0;
            if (l == layers_per_chunk - 1 && last) dur += slot.forward ? head_f : head_b;
            if (!slot.forward && l == layers_per_chunk - 1 && first) dur += emb_b;
            Task task{names.layers[static_cast<std::size_t>(l)], TaskKind::compute, slot.forward ? Phase::forward : Phase::backward, dur, -1, ready};
            if (slot.forward && l == 0) task.alloc = mem.activations_per_micro_batch / static_cast<double>(v);
            if (!slot.forward) task.workspace = mem.workspace;
            if (!slot.forward && l == layers_per_chunk - 1)
              task.release = mem.activations_per_micro_batch / static_cast<double>(v);
            previous = push(kCompute, std::move(task));
            ready = {previous};
            if (offload && slot.forward) {
              Task copy{names.copies[static_cast<std::size_t>(l)], TaskKind::host_copy,
                        Phase::offload, 0, -1, {previous}};
              copy.copy_bytes = layer_input;
              copy.copy_direction = CopyDirection::to_host;
              offloaded.push_back(push(kCopy, std::move(copy)));
            }
            const bool last_micro_batch = o == last_backward[static_cast<std::size_t>(slot.chunk)];
            if (overlap && !slot.forward && (every_micro_batch || last_micro_batch)) {
              pending += layer_params;
              if (l == layers_per_chunk - 1) {
                if (first) pending += model::embedding_parameters(s) / static_cast<double>(tp);
                if (last) pending += model::head_parameters(s) / static_cast<double>(tp);
              }
              if (p.bucket_elements <= 0 || pending >= p.bucket_elements || l == layers_per_chunk - 1) {
                sync_gradients(pending, previous, last_micro_batch);
                pending = 0;
              }
            }
            if (tp > 1) {
              const int c = tp_call(names.tp_reduce,
                                    sequence_parallel ? collective::Op::reduce_scatter : collective::Op::all_reduce,
                                    tp_bytes);
              previous = push(kTensor, {names.tp_reduce, TaskKind::collective, phase, 0, c, ready});
              ready = {previous};
            }
          }
          // Outputs to the neighbouring virtual stage.
          if (slot.forward && !last)
            push(p2p_stream(slot.chunk, 1), {names.send, TaskKind::collective, Phase::forward, 0,
                                             p2p_call(0, vs, slot.micro_batch, d, t), {previous}});
          if (!slot.forward && !first)
            push(p2p_stream(slot.chunk, 3), {names.send, TaskKind::collective, Phase::backward, 0,
                                             p2p_call(1, vs - 1, slot.micro_batch, d, t), {previous}});
        }
        // The stage's gradients (after the flush unless reduced during the last backward), then
        // the optimizer on the rank's shard and, under ZeRO-1, the all-gather of the updated
        // parameters: neither overlaps compute (source 002, DeepSpeed, Megatron's distributed
        // optimizer without overlap_param_gather).
        double params = layer_params * static_cast<double>(layers_per_chunk * v);
        if (stage == 0) params += model::embedding_parameters(s) / static_cast<double>(tp);
        if (stage == pp - 1) params += model::head_parameters(s) / static_cast<double>(tp);
        if (!overlap) sync_gradients(params, previous, true);
        std::vector<TaskRef> step_deps{previous};
        if (synced.stream >= 0) step_deps = overlap ? std::vector<TaskRef>{previous, synced} : std::vector<TaskRef>{synced};
        const TaskRef stepped = push(kCompute, {shard > 1 ? "optimizer step (shard)" : "optimizer step", TaskKind::compute,
                                                Phase::optimizer, optimizer_per_param * (params / static_cast<double>(shard)),
                                                -1, step_deps});
        if (shard > 1) {
          const int c = group_call(my_shard_calls, shard_sequence, false, "parameter all-gather" + stage_tag,
                                   collective::Op::all_gather, params * p.parameter_wire_bytes);
          push(kReduce, {"parameter all-gather", TaskKind::collective, Phase::parameter_sync, 0, c, {stepped}});
        }
        prog.ranks.push_back(std::move(rp));
      }
  }
  std::sort(prog.ranks.begin(), prog.ranks.end(),
            [](const RankProgram& a, const RankProgram& b) { return a.rank < b.rank; });
  return prog;
}

}  // namespace trainsim::program

#include "program/pipeline_schedule.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

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
  std::vector<int> dp_calls(static_cast<std::size_t>(pp * tp), -1);  // by (stage, tp index)
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
    std::vector<std::string> tags;
    struct SlotNames {
      std::vector<InternedName> layers;
      InternedName tp_all_reduce, recv, send;
    };
    std::vector<SlotNames> slot_names;
    for (const auto& slot : order) {
      tags.push_back(" mb" + std::to_string(slot.micro_batch) + " c" + std::to_string(slot.chunk));
      auto& names = slot_names.emplace_back();
      for (long l = 0; l < layers_per_chunk; ++l)
        names.layers.emplace_back((slot.forward ? "forward" : "backward") + tags.back() + " layer " + std::to_string(l));
      names.tp_all_reduce = "tp all-reduce" + tags.back();
      names.recv = (slot.forward ? "recv activation" : "recv gradient") + tags.back();
      names.send = (slot.forward ? "send activation" : "send gradient") + tags.back();
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
        auto& comp = rp.streams[kCompute].tasks;
        auto push = [&](int stream, Task task) {
          rp.streams[static_cast<std::size_t>(stream)].tasks.push_back(std::move(task));
          return TaskRef{stream, static_cast<int>(rp.streams[static_cast<std::size_t>(stream)].tasks.size()) - 1};
        };
        comp.reserve(order.size() * static_cast<std::size_t>(layers_per_chunk) + 1);
        if (tp > 1) rp.streams[kTensor].tasks.reserve(order.size() * static_cast<std::size_t>(layers_per_chunk));
        // A chunk's point-to-point streams carry at most one task per micro-batch.
        for (auto st = static_cast<std::size_t>(kFirstP2p); st < rp.streams.size(); ++st)
          rp.streams[st].tasks.reserve(static_cast<std::size_t>(m));
        TaskRef previous{-1, -1};
        std::size_t tp_sequence = 0;  // the TP group's members issue their all-reduces in the same order
        auto& group_calls = tp_calls[static_cast<std::size_t>(stage * L.dp + d)];
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
          // The chunk's layers, each followed by its TP all-reduce; the ends add embedding/head.
          for (long l = 0; l < layers_per_chunk; ++l) {
            Seconds dur = slot.forward ? lf : lb;
            if (l == 0 && first) dur += slot.forward ? emb_f : 0;
            if (l == layers_per_chunk - 1 && last)
              dur += slot.forward ? head_f : head_b;
            if (!slot.forward && l == layers_per_chunk - 1 && first)
              dur += emb_b;
            Task task{names.layers[static_cast<std::size_t>(l)], TaskKind::compute, slot.forward ? Phase::forward : Phase::backward, dur, -1, ready};
            if (slot.forward && l == 0) task.alloc = mem.activations_per_micro_batch / static_cast<double>(v);
            if (!slot.forward) task.workspace = mem.workspace;
            if (!slot.forward && l == layers_per_chunk - 1)
              task.release = mem.activations_per_micro_batch / static_cast<double>(v);
            previous = push(kCompute, std::move(task));
            ready = {previous};
            if (tp > 1) {
              int c;
              if (tp_sequence < group_calls.size()) {
                c = group_calls[tp_sequence];
              } else {
                std::vector<int> group;
                group.reserve(static_cast<std::size_t>(tp));
                for (long k = 0; k < tp; ++k) group.push_back(rank_of(in, stage, d, k));
                // A layer pass all-reduces twice (after attention and after the MLP; one call of
                // their summed size here); backward with recompute also redoes the forward's two.
                c = add_call(names.tp_all_reduce, collective::Op::all_reduce,
                             2 * activation * (p.activation_checkpointing && !slot.forward ? 2 : 1), group);
                group_calls.push_back(c);
              }
              ++tp_sequence;
              previous = push(kTensor, {names.tp_all_reduce, TaskKind::collective,
                                        slot.forward ? Phase::forward : Phase::backward, 0, c, ready});
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
        // After the flush: the stage's gradients over its data-parallel group, then the step.
        double params = layer_params * static_cast<double>(layers_per_chunk * v);
        if (stage == 0) params += model::embedding_parameters(s) / static_cast<double>(tp);
        if (stage == pp - 1) params += model::head_parameters(s) / static_cast<double>(tp);
        std::vector<TaskRef> step_deps{previous};
        if (L.dp > 1) {
          int& c = dp_calls[static_cast<std::size_t>(stage * tp + t)];
          if (c < 0) {
            std::vector<int> group;
            for (long k = 0; k < L.dp; ++k) group.push_back(rank_of(in, stage, k, t));
            c = add_call("gradient all-reduce stage " + std::to_string(stage), collective::Op::all_reduce,
                         params * p.gradient_wire_bytes, group);
          }
          step_deps = {push(kReduce, {"gradient all-reduce", TaskKind::collective, Phase::gradient_sync, 0, c,
                                      {previous}})};
        }
        push(kCompute, {"optimizer step", TaskKind::compute, Phase::optimizer, optimizer_per_param * params, -1,
                        step_deps});
        prog.ranks.push_back(std::move(rp));
      }
  }
  std::sort(prog.ranks.begin(), prog.ranks.end(),
            [](const RankProgram& a, const RankProgram& b) { return a.rank < b.rank; });
  return prog;
}

}  // namespace trainsim::program

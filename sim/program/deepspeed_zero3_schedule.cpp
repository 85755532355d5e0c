#include "program/deepspeed_zero3_schedule.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "model/compute_cost.hpp"

namespace trainsim::program {

namespace {

using model::ops_duration;

enum Streams { kCompute = 0, kNccl = 1, kCopy = 2 };

struct Tensor {
  std::string name;
  double numel = 0;
  bool persistent = false;  ///< never partitioned: no gather, its gradient is still reduced
};

/// A submodule whose forward uses parameters: what it computes and which tensors it needs.
struct Submodule {
  std::string name;
  std::vector<int> tensors;
  Seconds forward = 0;
  Seconds backward = 0;
  long layer = -1;  ///< the transformer layer it belongs to (-1: embedding, head)
  int forward_kernels = 0, backward_kernels = 0;  ///< issued by the host (host dispatch)
};

enum class Pass : std::uint8_t { forward, recompute, backward };

/// One step of DeepSpeed's submodule trace.
struct Use {
  int module = 0;
  Pass pass = Pass::forward;
  long micro_batch = 0;
};

bool is_weight_gemm(const model::Operation& op) {
  return op.kind == model::OpKind::gemm &&
         (op.name == "qkv" || op.name == "attn_out" || op.name == "ffn_in" || op.name == "ffn_gate_up" ||
          op.name == "ffn_out");
}

struct Model {
  std::vector<Tensor> tensors;
  std::vector<Submodule> modules;
};

Model submodules_of(const ScheduleInputs& in) {
  const auto& s = in.model;
  const auto& p = in.plan;
  const auto& dev = in.device;
  const double threshold = p.deepspeed_zero3.param_persistence_threshold;
  const double h = static_cast<double>(s.hidden);
  const model::LayerShape shape{p.micro_batch, 1, false, p.flash_attention, p.fused_cross_entropy, p.eager_kernels,
                                module_kernels_of(p.module_kernels), fp8_linears_of(p)};
  Model m;
  auto tensor = [&](std::string name, double numel) {
    m.tensors.push_back({std::move(name), numel, numel < threshold});
    return static_cast<int>(m.tensors.size()) - 1;
  };
  auto small = [&](std::string name, double numel) {
    // Biases and norm weights: each at most ffn_hidden elements, under the threshold for the
    // models here.
    m.tensors.push_back({std::move(name), numel, true});
    return static_cast<int>(m.tensors.size()) - 1;
  };
  // A norm's tensors: its scale, and its shift for a layer norm (norm_parameters).
  const bool shift = s.norm == model::NormKind::layernorm;
  const double norm_numel = shift ? 2 * h : h;
  auto norm = [&](Submodule& sm, const std::string& name) {
    sm.tensors.push_back(small(name + (shift ? " weight" : ""), h));
    if (shift) sm.tensors.push_back(small(name + " bias", h));
  };
  // The embedding's and the head's costs: their forward ops, and the generic backward of those
  // (a layer's parts share the layer's own backward instead).
  auto set_costs = [&](Submodule& sm, const std::vector<model::Operation>& ops) {
    sm.forward = ops_duration(ops, dev);
    sm.backward = ops_duration(model::backward_of(ops), dev);
    sm.forward_kernels = model::ops_kernels(ops);
    sm.backward_kernels = model::ops_kernels(model::backward_of(ops));
  };

  const double word_numel = static_cast<double>(s.vocab) * h;
  const int word = tensor("word embedding", word_numel);
  {
    Submodule e{"embedding", {word}, 0, 0, -1};
    const double rest = model::embedding_parameters(s) - word_numel;
    if (rest > 0) e.tensors.push_back(tensor("position embedding", rest));
    set_costs(e, model::embedding_forward_ops(s, shape));
    m.modules.push_back(std::move(e));
  }
  const auto layer_ops = model::layer_forward_ops(s, shape);
  // The layer's backward kernels (layer_backward_ops: eager and module kernels included) shared
  // among the parts in proportion to the generic backward of each part's forward ops.
  const double backward_scale = ops_duration(model::layer_backward_ops(s, shape), dev) /
                                ops_duration(model::backward_of(layer_ops), dev);
  for (long l = 0; l < s.layers; ++l) {
    // Split the layer's operations at each weight GEMM: the ops before the first one (the input
    // norm) and after a GEMM (attention core, activations) run with that submodule.
    std::vector<std::vector<model::Operation>> parts;
    std::vector<std::string> names;
    std::vector<double> weights;
    std::vector<double> biases;  // output features of each weight GEMM
    for (const auto& op : layer_ops) {
      if (is_weight_gemm(op)) {
        if (parts.empty() || weights.size() == parts.size()) parts.emplace_back();
        names.push_back(op.name);
        weights.push_back(op.n * op.k);
        biases.push_back(op.n);
      } else if (parts.empty()) {
        parts.emplace_back();
      }
      parts.back().push_back(op);
    }
    TRAINSIM_CHECK(!weights.empty() && weights.size() == parts.size(), "each part of a layer holds one weight GEMM");
    double named = 0;
    for (double w : weights) named += w;
    const std::string prefix = "layer " + std::to_string(l) + " ";
    for (std::size_t k = 0; k < parts.size(); ++k) {
      Submodule sm{prefix + names[k], {tensor(prefix + names[k] + " weight", weights[k])},
                   ops_duration(parts[k], dev), backward_scale * ops_duration(model::backward_of(parts[k]), dev), l,
                   model::ops_kernels(parts[k]), model::ops_kernels(model::backward_of(parts[k]))};
      if (k + 1 == parts.size()) {
        // The layer's small tensors, each its own parameter (persistent_parameters lists them
        // one by one): the linear biases and the two norms. Attached to the last submodule,
        // whose backward completes the layer's gradients.
        double small_numel = 0;
        if (s.bias)
          for (std::size_t j = 0; j < parts.size(); ++j) {
            sm.tensors.push_back(small(prefix + names[j] + " bias", biases[j]));
            small_numel += biases[j];
          }
        norm(sm, prefix + "input norm");
        norm(sm, prefix + "post-attention norm");
        small_numel += 2 * norm_numel;
        TRAINSIM_CHECK(std::abs(named + small_numel - model::parameters_per_layer(s)) < 0.5,
                       "a layer's weights, biases and norms make up its parameters");
      }
      m.modules.push_back(std::move(sm));
    }
  }
  {
    Submodule hd{"head", {}, 0, 0, -1};
    double own = model::head_parameters(s);
    if (!s.tied_embeddings) {
      hd.tensors.push_back(tensor("output embedding", word_numel));
      own -= word_numel;
    } else {
      hd.tensors.push_back(word);  // the logits read the tied table: gathered again
    }
    if (s.final_norm && !s.mlm_head) {
      norm(hd, "final norm");
      own -= norm_numel;
    }
    if (own > 0) hd.tensors.push_back(small("head norm", own));
    set_costs(hd, model::head_forward_ops(s, shape));
    m.modules.push_back(std::move(hd));
  }
  return m;
}

std::vector<Use> trace_of(const Model& m, const plan::TrainingPlan& p) {
  std::vector<Use> trace;
  const int n = static_cast<int>(m.modules.size());
  for (long mb = 0; mb < p.accumulation; ++mb) {
    for (int i = 0; i < n; ++i) trace.push_back({i, Pass::forward, mb});
    for (int i = n - 1; i >= 0;) {
      const long layer = m.modules[i].layer;
      int first = i;
      while (layer >= 0 && first > 0 && m.modules[first - 1].layer == layer) --first;
      if (layer >= 0 && p.activation_checkpointing)
        for (int k = first; k <= i; ++k) trace.push_back({k, Pass::recompute, mb});
      for (int k = i; k >= first; --k) trace.push_back({k, Pass::backward, mb});
      i = first - 1;
    }
  }
  return trace;
}

enum class Status : std::uint8_t { not_available, in_flight, available };

}  // namespace

Program build_deepspeed_zero3(const ScheduleInputs& in) {
  const auto& p = in.plan;
  const auto& L = in.layout;
  const auto& ds = p.deepspeed_zero3;
  TRAINSIM_CHECK(p.pp == 1 && p.tp == 1, "the DeepSpeed 0.3 ZeRO-3 schedule has no tensor or pipeline parallelism");
  TRAINSIM_CHECK(L.shard == L.dp, "the DeepSpeed 0.3 ZeRO-3 schedule shards over every data-parallel rank");
  TRAINSIM_CHECK(!in.stages.empty(), "stage memory is required");
  const Model model = submodules_of(in);
  const std::vector<Use> trace = trace_of(model, p);
  const std::size_t steps = trace.size();
  const bool sharded = L.shard > 1;
  const bool offload = p.activation_checkpointing && p.activation_offloading;
  const Bytes layer_input = model::layer_input_bytes(
      in.model, {p.micro_batch, 1, false, p.flash_attention, p.fused_cross_entropy, p.eager_kernels});
  const StageMemory& mem = in.stages.front();

  auto module_numel = [&](int m) {
    double t = 0;
    for (int k : model.modules[m].tensors) t += model.tensors[k].numel;
    return t;
  };
  // Reuse distance after each trace step: elements used before the same submodule's next use
  // (PrefetchCoordinator.get_reuse_distance_in_numel; none: never reused in this step).
  std::vector<double> reuse(steps, 1e300);
  for (std::size_t i = 0; i < steps; ++i) {
    double between = 0;
    for (std::size_t j = i + 1; j < steps; ++j) {
      if (trace[j].module == trace[i].module) {
        reuse[i] = between;
        break;
      }
      between += module_numel(trace[j].module);
    }
  }
  // A tensor's gradient is complete at its last backward use of the micro-batch (the tied
  // table: the embedding's, after the head's).
  std::vector<std::vector<int>> grads_at(steps);
  {
    std::vector<std::size_t> last(model.tensors.size(), steps);
    for (std::size_t i = 0; i < steps; ++i) {
      if (trace[i].pass != Pass::backward) continue;
      for (int k : model.modules[trace[i].module].tensors) last[k] = i;
      const bool mb_end = i + 1 == steps || trace[i + 1].micro_batch != trace[i].micro_batch;
      if (mb_end) {
        for (std::size_t k = 0; k < last.size(); ++k)
          if (last[k] < steps) grads_at[last[k]].push_back(static_cast<int>(k));
        std::fill(last.begin(), last.end(), steps);
      }
    }
  }

  Program prog;
  prog.samples_per_step = p.micro_batch * p.accumulation * L.dp;
  std::vector<int> group;
  for (long d = 0; d < L.dp; ++d) group.push_back(rank_of(in, 0, d, 0));

  // Every rank runs the same program: it is built once, on a template.
  RankProgram rp;
  rp.resident = mem.resident;
  rp.streams = {{"compute", StreamKind::compute, {}}, {"nccl", StreamKind::communication, {}}};
  if (offload) rp.streams.push_back({"host-copy", StreamKind::copy, {}});
  const double n = static_cast<double>(L.shard);
  const Seconds view_call = in.device.eager_view_call;
  const Seconds copy_call = in.device.eager_copy_call;
  // The persistent-parameter loop's iteration measured whole where the profile has it: its small
  // copies cost the host less than the gathers' slice copies that eager_copy_call was measured on.
  const Seconds slice_iteration = in.device.eager_slice_copy_iteration > 0
                                      ? in.device.eager_slice_copy_iteration
                                      : 3 * view_call + copy_call;
  const bool host_loops = sharded && (view_call > 0 || copy_call > 0);
  const int kHost = static_cast<int>(rp.streams.size());
  if (host_loops) rp.streams.push_back({"host", StreamKind::host, {}});
  auto last_of = [&](int stream) {
    return TaskRef{stream, static_cast<int>(rp.streams[stream].tasks.size()) - 1};
  };
  // What every task issued from now on waits for: the host is blocked until then.
  std::vector<TaskRef> fence;
  auto device_synchronize = [&] {
    fence.clear();
    for (int st = 0; st < static_cast<int>(rp.streams.size()); ++st)
      if (!rp.streams[st].tasks.empty()) fence.push_back(last_of(st));
  };
  auto wait_for = [&](TaskRef t) {  // a stream synchronize
    if (t.stream >= 0 && std::find(fence.begin(), fence.end(), t) == fence.end()) fence.push_back(t);
  };
  auto issue = [&](int stream, Task t, const std::vector<TaskRef>& extra = {}) {
    std::vector<TaskRef> deps = fence;
    for (const auto& e : extra)
      if (std::find(deps.begin(), deps.end(), e) == deps.end()) deps.push_back(e);
    t.deps = deps;
    // Whatever the host issues after a synchronize it issues once the fence is passed.
    t.host_sync = !fence.empty() && t.kind == TaskKind::compute;
    rp.streams[stream].tasks.push_back(std::move(t));
    return last_of(stream);
  };

  std::vector<Status> status(model.tensors.size(), Status::available);
  for (std::size_t k = 0; k < model.tensors.size(); ++k)
    if (sharded && !model.tensors[k].persistent) status[k] = Status::not_available;
  std::vector<int> in_flight;
  double live = 0;  // gathered elements (total_available_parameter_numel)
  // Host work the issuing thread does before it issues anything else.
  auto host = [&](std::string name, Seconds d) {
    if (!host_loops || d <= 0) return;
    const TaskRef h = issue(kHost, {std::move(name), TaskKind::host, Phase::parameter_sync, d, -1, {}});
    fence = {h};
  };
  // torch.distributed.all_gather into a list (PyTorch 1.8 ProcessGroupNCCL::allgather): NCCL
  // gathers into a flat buffer, then one copy_ per rank back into the list, on the NCCL stream
  // after the collective. The host issues them one by one (the host is the slower side: a call
  // takes longer than its copy of S/n bytes), so what waits for the list waits for the later of
  // the host's last call and the copies' device time after the gather.
  auto all_gather_into_list = [&](const std::string& name, Bytes gathered, const std::vector<TaskRef>& after) {
    prog.collectives.push_back({name, collective::Op::all_gather, gathered, group});
    issue(kNccl, {name, TaskKind::collective, Phase::parameter_sync, 0,
                  static_cast<int>(prog.collectives.size()) - 1, {}},
          after);
    if (!host_loops) return;
    issue(kNccl, {"copy-out " + name, TaskKind::compute, Phase::parameter_sync,
                  (n - 1) * in.device.launch_overhead +
                      ops_duration({model::make_elementwise("copy", 2 * gathered)}, in.device),
                  -1, {}});
    host("host: " + std::to_string(L.shard) + " copy calls for " + name, n * copy_call);
  };
  auto gather = [&](int k, const std::string& why) {
    const Tensor& t = model.tensors[k];
    const Bytes gathered = t.numel * p.parameter_wire_bytes;
    const std::string name = "all-gather " + t.name + " (" + why + ")";
    if (host_loops) {  // Init._allgather_param: torch.zeros(aligned size) on the fetch stream first
      Task zero{"zero buffer for " + name, TaskKind::compute, Phase::parameter_sync,
                ops_duration({model::make_elementwise("zero", gathered)}, in.device), -1, {}};
      zero.kernels = 1;
      issue(kNccl, std::move(zero));
    }
    device_synchronize();  // then torch.cuda.synchronize()
    // A Python loop narrows the flat buffer into one view per rank (the device is idle).
    host("host: " + std::to_string(L.shard) + " views for " + name, n * view_call);
    all_gather_into_list(name, gathered, {});
    status[k] = Status::in_flight;
    in_flight.push_back(k);
    live += t.numel;
  };
  // Gradient bucket: (elements, the compute task that produced the newest gradient in it).
  double bucket = 0;
  TaskRef bucket_ready{-1, -1};
  TaskRef last_reduction{-1, -1};
  int buckets = 0;
  auto reduce_bucket = [&] {
    // reduce_ipg_grads: the host waits for the previous bucket first.
    wait_for(last_reduction);
    if (bucket <= 0) return;
    const std::string name = "all-reduce gradient bucket " + std::to_string(buckets++);
    const Bytes bytes = bucket * p.gradient_wire_bytes;
    // allreduce_bucket flattens the bucket's gradients into one buffer (torch.cat) and divides it
    // by the group size before the all-reduce; allreduce_and_copy then copies each gradient back
    // out of it: three memory-bound passes over the bucket on the reduction stream, which the
    // all-reduce and the host's next synchronize wait for (here on the NCCL stream they share
    // that order with).
    issue(kNccl,
          {"flatten and scale " + name, TaskKind::compute, Phase::gradient_sync,
           ops_duration({model::make_elementwise("flatten", 2 * bytes), model::make_elementwise("scale", 2 * bytes)},
                        in.device),
           -1, {}},
          {bucket_ready});
    prog.collectives.push_back({name, collective::Op::all_reduce, bytes, group});
    issue(kNccl, {name, TaskKind::collective, Phase::gradient_sync, 0, static_cast<int>(prog.collectives.size()) - 1, {}});
    last_reduction = issue(kNccl, {"copy back " + name, TaskKind::compute, Phase::gradient_sync,
                                   ops_duration({model::make_elementwise("copy", 2 * bytes)}, in.device), -1, {}});
    bucket = 0;
  };

  for (std::size_t i = 0; i < steps; ++i) {
    const Use& use = trace[i];
    const Submodule& sm = model.modules[use.module];
    const char* pass = use.pass == Pass::forward ? "forward" : use.pass == Pass::recompute ? "recompute" : "backward";
    const std::string tag = " mb" + std::to_string(use.micro_batch);
    // Fetch (fetch_sub_module).
    bool wait = false;
    for (int k : sm.tensors) {
      if (status[k] == Status::not_available) gather(k, std::string(pass) + " " + sm.name + tag);
      if (status[k] == Status::in_flight) wait = true;
    }
    if (wait) {
      device_synchronize();  // _synchronize_communication
      for (int k : in_flight) status[k] = Status::available;
      in_flight.clear();
    }
    // Prefetch (prefetch_next_sub_modules), from this step of the trace on.
    if (sharded && in_flight.empty() && live < ds.max_live_parameters) {
      std::vector<int> next;
      double total = 0;
      for (std::size_t j = i; j < steps && total < ds.prefetch_bucket_size; ++j)
        for (int k : model.modules[trace[j].module].tensors) {
          if (status[k] != Status::not_available || std::find(next.begin(), next.end(), k) != next.end())
            continue;
          next.push_back(k);
          total += model.tensors[k].numel;
          if (total >= ds.prefetch_bucket_size) break;
        }
      for (int k : next) gather(k, "prefetch for " + std::string(pass) + " " + sm.name + tag);
    }
    // A layer's offloaded input comes back before its recomputation.
    std::vector<TaskRef> ready;
    const bool layer_start = sm.layer >= 0 && (use.module == 0 || model.modules[use.module - 1].layer != sm.layer);
    if (offload && use.pass == Pass::recompute && layer_start) {
      Task c{"fetch input layer " + std::to_string(sm.layer) + tag, TaskKind::host_copy, Phase::offload, 0, -1, {}};
      c.copy_bytes = layer_input;
      c.copy_direction = CopyDirection::to_device;
      ready.push_back(issue(kCopy, std::move(c)));
    }
    Task t{std::string(pass) + " " + sm.name + tag, TaskKind::compute,
           use.pass == Pass::forward ? Phase::forward : Phase::backward,
           use.pass == Pass::backward ? sm.backward : sm.forward, -1, {}};
    t.kernels = use.pass == Pass::backward ? sm.backward_kernels : sm.forward_kernels;
    if (use.pass == Pass::forward && use.module == 0) t.alloc = mem.activations_per_micro_batch;
    if (use.pass != Pass::forward) t.workspace = mem.workspace;
    if (use.pass == Pass::backward && use.module == 0) t.release = mem.activations_per_micro_batch;
    const TaskRef computed = issue(kCompute, std::move(t), ready);
    const bool layer_end = sm.layer >= 0 && (use.module + 1 == static_cast<int>(model.modules.size()) ||
                                             model.modules[use.module + 1].layer != sm.layer);
    if (offload && use.pass == Pass::forward && layer_end) {
      Task c{"offload input layer " + std::to_string(sm.layer) + tag, TaskKind::host_copy, Phase::offload, 0, -1, {}};
      c.copy_bytes = layer_input;
      c.copy_direction = CopyDirection::to_host;
      issue(kCopy, std::move(c), {computed});
    }
    // Gradient hooks (reduce_independent_p_g_buckets_and_remove_grads).
    if (sharded)
      for (int k : grads_at[i]) {
        const double numel = model.tensors[k].numel;
        if (bucket + numel > ds.reduce_bucket_size) reduce_bucket();
        bucket += numel;
        bucket_ready = computed;
      }
    // Release (release_sub_module).
    if (reuse[i] >= ds.max_reuse_distance)
      for (int k : sm.tensors)
        if (status[k] == Status::available && !model.tensors[k].persistent && sharded) {
          status[k] = Status::not_available;
          live -= model.tensors[k].numel;
        }
    // The end of a micro-batch's backward: the epilogue reduces the rest and waits for it.
    const bool mb_end = i + 1 == steps || trace[i + 1].micro_batch != use.micro_batch;
    if (sharded && mb_end) {
      reduce_bucket();
      wait_for(last_reduction);
    }
  }
  double shard_params = 0;
  for (const auto& t : model.tensors) shard_params += t.numel;
  shard_params /= static_cast<double>(L.shard);
  const Seconds optimizer = model::op_duration(model::optimizer_step_op(shard_params), in.device);
  device_synchronize();
  Task step{"optimizer step (shard)", TaskKind::compute, Phase::optimizer, optimizer, -1, {}};
  step.kernels = 1;
  const TaskRef stepped = issue(kCompute, std::move(step));
  if (sharded) {
    // The end of the backward partitions every gathered parameter, the persistent ones too
    // (_partition_all_parameters -> release_and_reset_parameter, which does not check
    // ds_persist), so the step gathers them all again (_post_step -> Init._allgather_params):
    // the rank's shards copied one by one into a flat buffer narrowed into one view per rank,
    // one all_gather into that list (PyTorch's copy_ per rank back into it), then for every
    // persistent parameter a Python loop over the ranks whose slice holds part of it: two
    // narrows, a view and a copy_ each. The host issues them back to back while the device
    // runs the optimizer; the copies' device time is hidden behind the host's calls.
    std::vector<double> persistent;
    for (const auto& t : model.tensors)
      if (t.persistent) persistent.push_back(t.numel);
    double numel = 0;
    double slices = 0;  // (parameter, rank) pairs of the copy loop
    for (double e : persistent) {
      const double part = std::ceil(e / n);  // ds_tensor numel (padded to the group)
      numel += part * n;
      slices += std::min(n, std::ceil(e / part));
    }
    const double count = static_cast<double>(persistent.size());
    if (count > 0) {
      const std::string what = "all-gather " + std::to_string(persistent.size()) + " persistent parameters (step)";
      host("host: " + std::to_string(L.shard) + " views for " + what, n * view_call);
      host("host: " + std::to_string(persistent.size()) + " shard copies for " + what,
           count * (view_call + copy_call));
      const Bytes gathered = numel * p.parameter_wire_bytes;
      all_gather_into_list(what, gathered, {stepped});
      if (host_loops) {
        host("host: " + std::to_string(static_cast<long>(slices)) + " slice copies into the persistent parameters",
             slices * slice_iteration);
        issue(kCompute,
              {"copy slices into the persistent parameters", TaskKind::compute, Phase::parameter_sync,
               in.device.launch_overhead + ops_duration({model::make_elementwise("copy", 2 * gathered)}, in.device),
               -1, {}},
              {last_of(kNccl)});
      }
    }
  }

  for (long d = 0; d < L.dp; ++d) {
    RankProgram r = rp;
    r.rank = rank_of(in, 0, d, 0);
    prog.ranks.push_back(std::move(r));
  }
  return prog;
}

}  // namespace trainsim::program

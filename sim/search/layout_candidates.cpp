#include "search/layout_candidates.hpp"

#include <algorithm>

namespace trainsim::search {

namespace {

std::vector<long> powers_of_two_up_to(long n) {
  std::vector<long> out;
  for (long v = 1; v <= n; v *= 2) out.push_back(v);
  return out;
}

std::vector<long> divisors_up_to(long n, long limit) {
  std::vector<long> out;
  for (long d = 1; d <= n && d <= limit; ++d)
    if (n % d == 0) out.push_back(d);
  return out;
}

template <typename T>
std::vector<T> sorted_unique(std::vector<T> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

/// Erases every key of `o` that starts with `prefix`.
void erase_prefixed(nlohmann::json& o, const std::string& prefix) {
  for (auto it = o.begin(); it != o.end();) {
    if (it.key().rfind(prefix, 0) == 0)
      it = o.erase(it);
    else
      ++it;
  }
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

/// The names of `given` in the order of `names`, duplicates dropped.
std::vector<std::string> in_order_of(const std::vector<std::string>& names,
                                     const std::vector<std::string>& given) {
  std::vector<std::string> out;
  for (const auto& name : names)
    if (contains(given, name)) out.push_back(name);
  return out;
}

/// The training keys a candidate sets from its layout (its label names them).
constexpr const char* kLayoutKeys[] = {"schedule",
                                       "tensor_parallel",
                                       "context_parallel",
                                       "sequence_parallel",
                                       "pipeline_parallel",
                                       "pipeline_schedule",
                                       "virtual_stages",
                                       "micro_batch",
                                       "gradient_accumulation",
                                       "activation_checkpointing",
                                       "activation_offloading",
                                       "hybrid_shard_degree"};

bool is_layout_key(const std::string& key) {
  return std::any_of(std::begin(kLayoutKeys), std::end(kLayoutKeys),
                     [&](const char* k) { return key == k; });
}

}  // namespace

const std::vector<std::string>& schedule_names() {
  static const std::vector<std::string> names{"ddp", "zero1", "zero2", "zero3", "fsdp"};
  return names;
}

const std::vector<std::string>& pipeline_schedule_names() {
  static const std::vector<std::string> names{"gpipe", "1f1b", "zb-h1", "zb-v"};
  return names;
}

const std::vector<std::string>& checkpoint_policy_names() {
  static const std::vector<std::string> names{"full", "selective_op", "selective_attention"};
  return names;
}

const char* schedule_label(const std::string& schedule) {
  if (schedule == "zero1") return "ZeRO-1";
  if (schedule == "zero2") return "ZeRO-2";
  if (schedule == "zero3") return "ZeRO-3";
  if (schedule == "fsdp") return "FSDP";
  return "DDP";
}

const std::vector<std::string>& cp_comm_type_names() {
  static const std::vector<std::string> names{"p2p", "a2a", "all_gather"};
  return names;
}

std::string Candidate::label() const {
  const bool comm = cp > 1 && (cp_comm_searched || cp_comm != "p2p");
  std::string s = std::string(schedule_searched ? schedule_label(schedule) : "") +
                  (schedule_searched ? ", " : "") + "TP " + std::to_string(tp) +
                  (cp > 1 ? ", CP " + std::to_string(cp) + (comm ? " " + cp_comm : "") : "") +
                  ", PP " + std::to_string(pp) +
                  ", DP " + std::to_string(dp) + ", micro-batch " + std::to_string(micro_batch) +
                  " x " + std::to_string(accumulation) + (checkpointing ? ", checkpointing" : "") +
                  (checkpointing && policy_searched ? " " + checkpoint_policy : "") +
                  (offloading ? ", offloading" : "") +
                  (sequence_parallel ? ", sequence parallel" : "");
  if (virtual_stages > 1) s += ", interleaved x " + std::to_string(virtual_stages);
  if (pipeline == "gpipe") s += ", GPipe";
  if (pipeline == "zb-h1") s += ", ZB-H1";
  if (pipeline == "zb-v") s += ", ZB-V";
  if (shard > 0) s += ", shard " + std::to_string(shard);
  return s;
}

SearchSpace complete_space(SearchSpace given, const PointShape& shape, long layers) {
  if (given.schedule.empty()) given.schedule = {shape.schedule};
  given.schedule = in_order_of(schedule_names(), given.schedule);
  const bool model_parallel = shape.tp > 1 || shape.pp > 1;
  if (given.tp.empty()) {
    given.tp = model_parallel ? powers_of_two_up_to(shape.ranks_per_node) : std::vector<long>{};
    given.tp.push_back(
        shape.tp);  // a point's TP may span nodes (Megatron's Figure 13 runs 16 and 32)
  }
  if (given.cp.empty()) given.cp = {shape.context_parallel};
  given.cp = sorted_unique(given.cp);
  if (given.cp_comm_type.empty()) given.cp_comm_type = {shape.cp_comm_type};
  given.cp_comm_type = in_order_of(cp_comm_type_names(), given.cp_comm_type);
  if (given.pp.empty()) {
    const long world = static_cast<long>(shape.nodes) * shape.ranks_per_node;
    given.pp =
        shape.pp > 1 ? divisors_up_to(world / given.cp.front(), layers) : std::vector<long>{};
    given.pp.push_back(shape.pp);
  }
  if (given.pipeline_schedule.empty()) given.pipeline_schedule = {shape.pipeline};
  given.pipeline_schedule = in_order_of(pipeline_schedule_names(), given.pipeline_schedule);
  if (given.virtual_stages.empty()) {
    // Whether to interleave, and with the point's own chunks: more chunks shrink the bubble and
    // multiply the stage exchanges (Narayanan et al. 2021, section 2.2.2).
    given.virtual_stages = {shape.virtual_stages};
    if (shape.interleavable && (shape.pp > 1 || given.pp.size() > 1)) {
      given.virtual_stages.push_back(1);
      given.virtual_stages.push_back(2);
    }
  }
  if (given.checkpointing.empty()) given.checkpointing = {false, true};
  if (given.sequence_parallel.empty()) given.sequence_parallel = {shape.sequence_parallel};
  if (given.offloading.empty()) given.offloading = {shape.offloading};
  if (given.shard.empty()) {
    given.shard = {shape.shard};
    if (shape.fsdp || contains(given.schedule, "fsdp")) {
      given.shard.push_back(0);
      const long world = static_cast<long>(shape.nodes) * shape.ranks_per_node;
      for (long g = shape.ranks_per_node; g < world; g *= 2) given.shard.push_back(g);
    }
  }
  given.tp = sorted_unique(given.tp);
  given.pp = sorted_unique(given.pp);
  given.virtual_stages = sorted_unique(given.virtual_stages);
  given.micro_batch = sorted_unique(given.micro_batch);
  given.shard = sorted_unique(given.shard);
  given.checkpointing = sorted_unique(given.checkpointing);
  given.checkpoint_policy = in_order_of(checkpoint_policy_names(), given.checkpoint_policy);
  given.offloading = sorted_unique(given.offloading);
  given.sequence_parallel = sorted_unique(given.sequence_parallel);
  return given;
}

namespace {

/// The on/off choices of a layout, and what checkpointing keeps.
struct Switches {
  bool checkpointing = false, offloading = false, sequence_parallel = false;
  std::string policy = "full";
  bool operator==(const Switches& o) const {
    return checkpointing == o.checkpointing && offloading == o.offloading &&
           sequence_parallel == o.sequence_parallel && (!checkpointing || policy == o.policy);
  }
};

/// Checkpointing (each policy), then offloading (only of fully checkpointed inputs), then
/// sequence parallelism (only over TP > 1), in the axes' order; the point's own where an axis
/// is empty.
std::vector<Switches> switch_combinations(const SearchSpace& space, const PointShape& shape,
                                          long tp) {
  auto axis = [](const std::vector<bool>& given, bool own) {
    return given.empty() ? std::vector<bool>{own} : given;
  };
  const std::vector<std::string> policies =
      space.checkpoint_policy.empty() ? std::vector<std::string>{shape.checkpoint_policy} : space.checkpoint_policy;
  std::vector<Switches> out;
  for (const bool ckpt : axis(space.checkpointing, shape.checkpointing))
    for (const auto& policy : ckpt ? policies : std::vector<std::string>{shape.checkpoint_policy})
      for (const bool offload :
           ckpt && policy == "full" ? axis(space.offloading, shape.offloading) : std::vector<bool>{false})
        for (const bool sp : tp > 1 ? axis(space.sequence_parallel, shape.sequence_parallel)
                                    : std::vector<bool>{false})
          out.push_back({ckpt, offload, sp, policy});
  return out;
}

/// How a pipeline of `pp` stages runs: its model chunks per stage and, without virtual stages,
/// its schedule. Neither means anything without a pipeline (PP 1 takes the first chunk value,
/// 1F1B), and GPipe and ZB-H1 have no virtual stages (a plain pipeline runs each schedule of the
/// axis).
struct PipelineVariant {
  long virtual_stages = 1;
  std::string pipeline = "1f1b";
};

std::vector<PipelineVariant> pipeline_variants(long pp, const std::vector<long>& chunks,
                                               const std::vector<std::string>& schedules) {
  if (pp == 1) return {{1, "1f1b"}};
  std::vector<PipelineVariant> out;
  for (const long v : chunks) {
    if (v > 1)
      out.push_back({v, "1f1b"});
    else
      for (const auto& s : schedules) out.push_back({1, s});
  }
  return out;
}

/// The axes of one schedule's enumeration, each with the point's own value where not searched.
struct ScheduleAxes {
  std::string schedule;
  bool schedule_searched = false;
  std::vector<long> cp, chunks;
  std::vector<std::string> pipelines, cp_comms;
  bool cp_comm_searched = false;
  bool has_full = false;  ///< the shard axis has full sharding (0)
};

/// The candidates of one set of degrees (`base`: schedule, TP, CP, PP and DP): each pipeline
/// variant, micro-batch, on/off switch and shard group.
void add_variants(const Candidate& base, const std::vector<long>& micro, long per_replica,
                  const ScheduleAxes& axes, const std::vector<Switches>& switches,
                  const SearchSpace& space, const PointShape& shape, Enumeration& e) {
  const std::string own_pipeline = shape.pp > 1 && shape.virtual_stages == 1 ? shape.pipeline : "1f1b";
  const Switches own{shape.checkpointing, shape.offloading, shape.sequence_parallel, shape.checkpoint_policy};
  for (const auto& variant : pipeline_variants(base.pp, axes.chunks, axes.pipelines))
    for (const long mb : micro) {
      Candidate c = base;
      c.virtual_stages = variant.virtual_stages;
      c.pipeline = variant.pipeline;
      c.micro_batch = mb;
      if (per_replica % mb != 0) {
        e.skipped.push_back({c, "micro-batch " + std::to_string(mb) +
                                    " does not divide the replica's " +
                                    std::to_string(per_replica) + " sequences per step"});
        continue;
      }
      c.accumulation = per_replica / mb;
      for (const Switches& on : switches) {
        for (const long shard : space.shard) {
          if (c.schedule == "ddp" && shard > 0) continue;  // one DDP layout, not one per group
          // A group of the whole DP is full sharding (the 0 entry where the axis has one); a group
          // beyond it exists only at other degrees (whole nodes under TP or PP).
          if (shard > 0 && (shard > c.dp || (shard == c.dp && axes.has_full))) continue;
          Candidate k = c;
          k.shard = shard;
          if (shard > 0 && c.dp % shard != 0) {
            e.skipped.push_back({k, "shard group " + std::to_string(shard) +
                                        " does not divide DP " + std::to_string(c.dp)});
            continue;
          }
          k.checkpointing = on.checkpointing;
          k.checkpoint_policy = on.policy;
          k.policy_searched = !space.checkpoint_policy.empty();
          k.offloading = on.offloading;
          k.sequence_parallel = on.sequence_parallel;
          // A shard group as large as the data-parallel group is full sharding.
          const long group = shard == k.dp ? 0 : shard;
          k.is_original = k.schedule == shape.schedule && k.tp == shape.tp &&
                          k.cp == shape.context_parallel && (k.cp == 1 || k.cp_comm == shape.cp_comm_type) &&
                          k.pp == shape.pp &&
                          k.virtual_stages == shape.virtual_stages && k.pipeline == own_pipeline &&
                          mb == shape.micro_batch && on == own && group == shape.shard;
          e.candidates.push_back(k);
        }
      }
    }
}

/// enumerate_layouts for one schedule.
void add_layouts(const ScheduleAxes& axes, const SearchSpace& space, const PointShape& shape,
                 Enumeration& e) {
  const long world = static_cast<long>(shape.nodes) * shape.ranks_per_node;
  for (const long tp : space.tp) {
    const auto switches = switch_combinations(space, shape, tp);
    for (const long cp : axes.cp) {
      for (const auto& comm : cp > 1 ? axes.cp_comms : std::vector<std::string>{"p2p"})
      for (const long pp : space.pp) {
        Candidate base;
        base.schedule = axes.schedule;
        base.schedule_searched = axes.schedule_searched;
        base.tp = tp;
        base.cp = cp;
        base.cp_comm = comm;
        base.cp_comm_searched = axes.cp_comm_searched;
        base.pp = pp;
        const long model_parallel = tp * pp * cp;
        if (world % model_parallel != 0) {
          e.skipped.push_back({base, "TP x PP" + std::string(cp > 1 ? " x CP" : "") + " = " +
                                         std::to_string(model_parallel) + " does not divide the " +
                                         std::to_string(world) + " accelerators"});
          continue;
        }
        base.dp = world / model_parallel;
        if (shape.global_batch % base.dp != 0) {
          e.skipped.push_back({base, "the global batch of " + std::to_string(shape.global_batch) +
                                         " sequences does not divide over DP " +
                                         std::to_string(base.dp)});
          continue;
        }
        const long per_replica = shape.global_batch / base.dp;
        std::vector<long> micro = space.micro_batch;
        if (micro.empty()) {
          for (const long m : powers_of_two_up_to(per_replica))
            if (per_replica % m == 0) micro.push_back(m);
          if (per_replica % shape.micro_batch == 0) micro.push_back(shape.micro_batch);
          micro = sorted_unique(micro);
        }
        add_variants(base, micro, per_replica, axes, switches, space, shape, e);
      }
    }
  }
}

}  // namespace

Enumeration enumerate_layouts(const SearchSpace& space, const PointShape& shape) {
  Enumeration e;
  const std::vector<std::string> schedules =
      space.schedule.empty() ? std::vector<std::string>{shape.schedule} : space.schedule;
  const bool schedule_searched = schedules != std::vector<std::string>{shape.schedule};
  const bool has_full = std::find(space.shard.begin(), space.shard.end(), 0) != space.shard.end();
  ScheduleAxes axes;
  axes.schedule_searched = schedule_searched;
  axes.has_full = has_full;
  axes.cp = space.cp.empty() ? std::vector<long>{shape.context_parallel} : space.cp;
  axes.cp_comms = space.cp_comm_type.empty() ? std::vector<std::string>{shape.cp_comm_type} : space.cp_comm_type;
  axes.cp_comm_searched = axes.cp_comms.size() > 1 || axes.cp_comms != std::vector<std::string>{shape.cp_comm_type};
  axes.chunks =
      space.virtual_stages.empty() ? std::vector<long>{shape.virtual_stages} : space.virtual_stages;
  axes.pipelines = space.pipeline_schedule.empty()
                       ? std::vector<std::string>{shape.pipeline}
                       : space.pipeline_schedule;
  for (const auto& schedule : schedules) {
    if (schedule == "ddp" && !has_full) {
      Candidate k;
      k.schedule_searched = schedule_searched;
      e.skipped.push_back({k, "DDP shards nothing: the shard axis has no full sharding"});
      continue;
    }
    axes.schedule = schedule;
    add_layouts(axes, space, shape, e);
  }
  return e;
}

nlohmann::json point_training(const nlohmann::json& doc, std::size_t point_index) {
  nlohmann::json training = doc.value("training", nlohmann::json::object());
  const auto& point = doc.at("points").at(point_index);
  if (point.contains("training")) training.update(point["training"], /*merge_objects=*/true);
  return training;
}

std::vector<std::string> changed_settings(const nlohmann::json& point_training,
                                          const nlohmann::json& candidate_training) {
  // The layout's own axes change by design; the label names them.
  std::vector<std::string> out;
  for (const auto& [key, before] : point_training.items()) {
    if (is_layout_key(key)) continue;
    const auto after = candidate_training.find(key);
    if (after != candidate_training.end() && *after != before)
      out.push_back(key + ": " + before.dump() + " -> " + after->dump());
  }
  return out;
}

nlohmann::json candidate_document(const nlohmann::json& doc, std::size_t point_index,
                                  const Candidate& c) {
  nlohmann::json out = doc;
  nlohmann::json point = doc.at("points").at(point_index);
  nlohmann::json training = point_training(doc, point_index);
  if (training.value("schedule", "") != c.schedule) {
    training["schedule"] = c.schedule;
    if (c.schedule != "fsdp" && training.value("precision", "") == "fsdp_mixed")
      training["precision"] = "amp";
    // Megatron's gradient buffers under its other schedule: its DDP keeps the fp32 main_grad
    // buffer whole, its distributed optimizer (ZeRO-1) over the same buffer shards the rest.
    const std::string buffers = training.value("gradient_buffers", "");
    if (c.schedule == "zero1" && buffers == "megatron-local-ddp")
      training["gradient_buffers"] = "megatron-core-distributed-optimizer";
    if (c.schedule == "ddp" && (buffers == "megatron-core-distributed-optimizer" ||
                                buffers == "apex-distributed-fused-adam"))
      training["gradient_buffers"] = "megatron-local-ddp";
  }
  training["tensor_parallel"] = c.tp;
  if (c.cp > 1 || training.contains("context_parallel")) training["context_parallel"] = c.cp;
  // How a CP group exchanges means nothing without one (the loader would reject it).
  if (c.cp == 1)
    for (const char* key : {"cp_comm_type", "context_parallel_rotate_method"}) training.erase(key);
  else if (c.cp_comm_searched || c.cp_comm != "p2p" || training.contains("cp_comm_type"))
    training["cp_comm_type"] = c.cp_comm;
  training["pipeline_parallel"] = c.pp;
  training["micro_batch"] = c.micro_batch;
  training["gradient_accumulation"] = c.accumulation;
  training["activation_checkpointing"] = c.checkpointing;
  if (c.tp > 1) training["sequence_parallel"] = c.sequence_parallel;
  if (c.schedule == "ddp")
    training.erase("hybrid_shard_degree");
  else if (c.shard > 0)
    training["hybrid_shard_degree"] = c.shard;
  else if (training.contains("hybrid_shard_degree"))
    training["hybrid_shard_degree"] = c.dp;  // full sharding over this layout's data-parallel ranks

  // Options that only mean something with a degree or checkpointing the candidate lacks: the
  // loader would reject them, and the layout without them is the one a user would run.
  if (c.tp == 1) training.erase("sequence_parallel");
  if (c.tp == 1 || !c.sequence_parallel) erase_prefixed(training, "tp_comm_overlap");
  // Options only Megatron's interleaved schedule has (the loader says so).
  const char* const interleaved_only[] = {"overlap_p2p_comm",
                                          "overlap_param_gather_with_optimizer_step"};
  if (c.pp == 1) {
    for (const char* key : {"pipeline_schedule", "virtual_stages", "pipeline_partition"})
      training.erase(key);
    for (const char* key : interleaved_only) training.erase(key);
  } else if (c.virtual_stages > 1) {
    training["pipeline_schedule"] = "interleaved";
    training["virtual_stages"] = c.virtual_stages;
  } else {
    training.erase("virtual_stages");
    if (c.pipeline != "1f1b" || training.contains("pipeline_schedule")) training["pipeline_schedule"] = c.pipeline;
    for (const char* key : interleaved_only) training.erase(key);
    // ZB-V's runtime sends whole stage tensors (the loader requires saying so under TP).
    if (c.pipeline == "zb-v" && c.tp > 1 && !c.sequence_parallel) training["pipeline_scatter_gather"] = false;
  }
  if (!c.checkpointing)
    training.erase("checkpoint_policy");
  else if (c.policy_searched)
    training["checkpoint_policy"] = c.checkpoint_policy;
  if (c.offloading)
    training["activation_offloading"] = true;
  else
    training.erase("activation_offloading");
  point.erase("training");
  point.erase("data_parallel_degree");
  point.erase("note");
  erase_prefixed(point, "reference_");
  point["label"] = c.label();
  out["training"] = training;
  out["points"] = nlohmann::json::array({point});
  return out;
}

std::optional<std::string> option_of_another_schedule(const nlohmann::json& document,
                                                      const std::string& json_path) {
  // What the candidate is: its layout, its numbers and its kernels. An option outside these
  // that the loader rejects under the candidate's schedule belongs to how the point's framework
  // runs its own schedule, and a user switching schedule switches framework.
  static const char* const numbers_and_kernels[] = {
      "precision",        "linear_precision", "fp8_implementation", "flash_attention",
      "attention_kernel", "module_kernels",   "optimizer"};
  const std::string prefix = "/training/";
  if (json_path.rfind(prefix, 0) != 0) return std::nullopt;
  const std::string key = json_path.substr(prefix.size());
  if (key.empty() || key.find('/') != std::string::npos) return std::nullopt;
  if (is_layout_key(key)) return std::nullopt;
  for (const char* d : numbers_and_kernels)
    if (key == d) return std::nullopt;
  const auto training = document.find("training");
  if (training == document.end() || !training->contains(key)) return std::nullopt;
  return key;
}

}  // namespace trainsim::search

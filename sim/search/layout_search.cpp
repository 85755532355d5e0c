#include "search/layout_search.hpp"

#include <algorithm>
#include <chrono>

#include "core/error.hpp"
#include "core/json_reader.hpp"
#include "core/text_format.hpp"
#include "report/report.hpp"
#include "sweep/child_pool.hpp"

namespace trainsim::search {

namespace {

/// The loader's message without the file name every candidate shares.
std::string reason_of(const ConfigError& e) {
  std::string s = e.what();
  const std::string prefix = e.file() + ": ";
  if (s.rfind(prefix, 0) == 0) s.erase(0, prefix.size());
  return s;
}

std::size_t point_index(const scenario::Scenario& s, const std::string& label) {
  if (label.empty()) return 0;
  for (std::size_t i = 0; i < s.points.size(); ++i)
    if (s.points[i].label == label) return i;
  std::string known;
  for (const auto& p : s.points) known += (known.empty() ? "\"" : ", \"") + p.label + "\"";
  throw ConfigError(s.file, "/points",
                    "no point labelled \"" + label + "\"; the points are " + known);
}

/// Loads a candidate's document into `loaded`. One of another schedule than the point's loads
/// without the point's options the loader says its schedule lacks (each recorded in
/// `t.left_out_options`); false, with `t.reason`, when the loader rejects it otherwise.
bool load_candidate(nlohmann::json& document, const std::string& file, bool other_schedule,
                    scenario::Scenario& loaded, Trial& t) {
  while (true) {
    try {
      loaded = scenario::load_scenario_document(document, file);
      return true;
    } catch (const ConfigError& e) {
      const auto key =
          other_schedule ? option_of_another_schedule(document, e.json_path()) : std::nullopt;
      if (!key) {
        t.reason = reason_of(e);
        return false;
      }
      // The path names a key of the training object: erasing it ends the loop.
      std::string why = reason_of(e);
      const std::string at = "at " + e.json_path() + ": ";
      if (why.rfind(at, 0) == 0) why.erase(0, at.size());
      // One line per option in the report, whichever schedule rejected it.
      const std::string got = ", got " + document["training"].value("schedule", "");
      if (why.size() > got.size() && why.compare(why.size() - got.size(), got.size(), got) == 0)
        why.erase(why.size() - got.size());
      t.left_out_options.push_back(*key + ": " + why);
      document["training"].erase(*key);
    }
  }
}

}  // namespace

const char* outcome_name(Outcome o) {
  switch (o) {
    case Outcome::simulated:
      return "simulated";
    case Outcome::out_of_memory:
      return "oom";
    case Outcome::invalid:
      return "invalid";
    case Outcome::not_simulated:
      return "not_simulated";
    case Outcome::failed:
      return "failed";
  }
  return "?";
}

SearchResult run_search(const std::string& scenario_file, const SearchOptions& options,
                        std::ostream& progress) {
  const nlohmann::json doc = read_json_file(scenario_file);
  const auto original = scenario::load_scenario_document(doc, scenario_file);
  const std::size_t index = point_index(original, options.point_label);
  const auto& p = original.points[index];

  SearchResult out;
  out.scenario_file = scenario_file;
  out.title = original.title;
  out.point_label = p.label;
  out.topology = p.machine->topology.name;
  out.model = p.model.name;
  out.nodes = options.nodes.value_or(p.nodes);
  if (out.nodes < 1) throw ConfigError(scenario_file, "", "--nodes must be at least 1");
  PointShape shape;
  shape.nodes = out.nodes;
  shape.ranks_per_node = p.layout.ranks_per_node;
  shape.context_parallel = p.training.cp;
  if (p.training.cp > 1)
    shape.cp_comm_type = p.training.cp_comm == plan::CpCommType::a2a          ? "a2a"
                         : p.training.cp_comm == plan::CpCommType::all_gather ? "all_gather"
                                                                              : "p2p";
  shape.global_batch =
      options.global_batch.value_or(p.training.micro_batch * p.training.accumulation * p.layout.dp);
  shape.tp = p.training.tp;
  shape.pp = p.training.pp;
  shape.virtual_stages =
      p.training.pipeline == plan::PipelineSchedule::interleaved ? p.training.virtual_stages : 1;
  // The schedule of the point's pipeline at one chunk per stage (an interleaved one's is 1F1B).
  shape.pipeline = p.training.pipeline == plan::PipelineSchedule::interleaved
                       ? "1f1b"
                       : plan::pipeline_schedule_name(p.training.pipeline);
  // Interleaving is Megatron-LM's (and Megatron-core's): offered to points that run Megatron's
  // modules or already interleave, not to other pipelines the schedule also models (SMP v1's,
  // DeepSpeed's), which have no virtual stages; --virtual-stages asks for it anyway. Either
  // partition interleaves (the embedding-and-head one where layers + 2 fill the chunks).
  shape.interleavable = p.training.pipeline_engine == plan::PipelineEngine::megatron &&
                        (p.training.module_kernels == plan::ModuleKernels::megatron ||
                         p.training.pipeline == plan::PipelineSchedule::interleaved);
  shape.micro_batch = p.training.micro_batch;
  shape.checkpointing = p.training.activation_checkpointing;
  if (p.training.activation_checkpointing) shape.checkpoint_policy = plan::checkpoint_policy_name(p.training.checkpoint_policy);
  shape.sequence_parallel = p.training.sequence_parallel;
  shape.offloading = p.training.activation_offloading;
  shape.shard = p.training.shard_degree == p.layout.dp ? 0 : p.training.shard_degree;
  shape.fsdp = p.training.sharding == plan::Sharding::fsdp;
  shape.schedule = p.training.sharding == plan::Sharding::none
                       ? "ddp"
                       : plan::sharding_name(p.training.sharding);
  out.schedule = shape.schedule;
  out.accelerators = static_cast<long>(out.nodes) * shape.ranks_per_node;
  out.global_batch = shape.global_batch;

  const auto space = complete_space(options.space, shape, p.model.layers);
  auto enumeration = enumerate_layouts(space, shape);
  out.skipped = std::move(enumeration.skipped);
  if (enumeration.candidates.empty() && options.allow_no_candidates) return out;
  if (enumeration.candidates.empty())
    throw ConfigError(
        scenario_file, "/points/" + std::to_string(index),
        "no layout to search: every combination was set aside (" +
            (out.skipped.empty() ? std::string("empty axes") : out.skipped.front().reason) + ")");

  // Load and judge every candidate here; only those that fit go to the child processes.
  const nlohmann::json own_training = point_training(doc, index);
  std::vector<scenario::Scenario> variants(enumeration.candidates.size());
  std::vector<std::size_t> to_simulate;
  for (std::size_t i = 0; i < enumeration.candidates.size(); ++i) {
    Trial t;
    t.candidate = enumeration.candidates[i];
    auto cdoc = candidate_document(doc, index, t.candidate);
    cdoc["points"][0]["nodes"] = out.nodes;
    const bool loaded =
        load_candidate(cdoc, scenario_file, t.candidate.schedule != shape.schedule, variants[i], t);
    t.changed_options = changed_settings(own_training, cdoc["training"]);
    if (!loaded) {
      out.trials.push_back(std::move(t));
      continue;
    }
    const auto& s = variants[i];
    t.memory = memory::judge_memory(scenario::memory_inputs(s, s.points[0]));
    if (!t.memory.fits) {
      t.outcome = Outcome::out_of_memory;
    } else if (auto why = scenario::unsupported_reason(s, s.points[0]); !why.empty()) {
      t.outcome = Outcome::not_simulated;
      t.reason = std::move(why);
    } else {
      t.outcome = Outcome::simulated;
      to_simulate.push_back(i);
    }
    out.trials.push_back(std::move(t));
  }

  progress << "search: " << out.trials.size() << " layouts of \"" << out.point_label << "\" on "
           << out.nodes << " x " << out.topology << ", " << to_simulate.size() << " to simulate\n"
           << std::flush;
  const auto start = std::chrono::steady_clock::now();
  std::size_t finished = 0;
  sweep::run_in_children(
      to_simulate, options.jobs,
      [&](std::size_t i) {
        const auto& s = variants[i];
        return scenario::point_result_to_json(scenario::simulate_point(s, s.points[0], false))
            .dump();
      },
      [&](const sweep::ChildOutput& child) {
        Trial& t = out.trials[child.task];
        const auto& s = variants[child.task];
        std::string what;
        if (child.ok) {
          auto r = scenario::point_result_from_json(nlohmann::json::parse(child.text), s.points[0]);
          r.memory = t.memory;
          if (!r.completed) {
            t.outcome = Outcome::failed;
            t.reason = "the simulation did not complete (deadlocked programs)";
          } else if (r.allocator_out_of_memory) {
            // The memory model's peak fits, but PyTorch's caching allocator, replayed over the
            // step's allocations, found no block (fragmentation, blocks held by another stream):
            // the job would stop with CUDA out of memory, so it is not a layout to offer.
            t.outcome = Outcome::out_of_memory;
            t.reason = "the caching allocator runs out of memory in the simulated step";
          }
          const std::vector<scenario::PointResult> one{r};
          t.tflops_per_accelerator = report::make_rows(one).front().tflops_per_accelerator;
          t.result = std::move(r);
          what = t.outcome == Outcome::out_of_memory
                     ? std::string("out of memory (caching allocator)")
                     : text::fmt("%.2f samples/s", t.result->samples_per_s);
        } else {
          t.outcome = Outcome::failed;
          t.reason = child.text;
          what = "FAILED: " + child.text;
        }
        const double elapsed =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        progress << "[" << ++finished << "/" << to_simulate.size() << "] " << t.candidate.label()
                 << ": " << what << text::fmt(" (%.1f s elapsed)", elapsed) << "\n"
                 << std::flush;
      });
  return out;
}

std::vector<const Trial*> ranked(const SearchResult& r) {
  std::vector<const Trial*> v;
  for (const auto& t : r.trials)
    if (t.outcome == Outcome::simulated) v.push_back(&t);
  // Equal throughput (ZeRO-3 runs FSDP's schedule): the one with more memory to spare first.
  std::stable_sort(v.begin(), v.end(), [](const Trial* a, const Trial* b) {
    if (a->result->samples_per_s != b->result->samples_per_s)
      return a->result->samples_per_s > b->result->samples_per_s;
    return a->memory.worst_peak < b->memory.worst_peak;
  });
  return v;
}

}  // namespace trainsim::search

#include "scenario/point_runner.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <type_traits>
#include <unordered_map>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "collective/nccl_cost_model.hpp"
#include "engine/fabric_rates.hpp"
#include "engine/platform_builder.hpp"
#include "engine/program_executor.hpp"
#include "model/nccl_memory_traffic.hpp"
#include "program/build_program.hpp"
#include "pipeline/pipeline_result_json.hpp"
#include "scenario/child_process.hpp"
#include "scenario/pipeline_runner.hpp"

namespace trainsim::scenario {

namespace {

double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

/// The caching allocator manages the device less the runtime's reserve (CUDA context, NCCL's
/// buffers), the way torch.cuda.memory_reserved leaves them out.
engine::ExecuteOptions allocator_options(const Point& p, engine::ExecuteOptions o) {
  const auto& dev = p.machine->device;
  if (!dev.caching_allocator()) return o;
  o.device_memory = p.machine->topology.accelerator.memory - dev.runtime_reserve;
  o.unmanaged_memory = dev.runtime_reserve;
  o.allocate_at_host_issue = p.training.allocator_host_issue;
  if (p.training.allocator_retry_stalls) {
    o.retry_fixed = dev.allocator_retry;
    o.retry_per_byte = dev.allocator_retry_per_gb / 1e9;
  }
  return o;
}

/// The ranks whose spans a run keeps: the trace's (Scenario::trace_ranks), and rank 0, whose
/// step the input pipeline reads. Empty: every rank.
std::vector<bool> record_ranks(const Scenario& s, const Point& p) {
  if (s.trace_ranks.all()) return {};
  auto keep = s.trace_ranks.mask(static_cast<int>(p.layout.world));
  if (s.data && !keep.empty()) keep[0] = true;
  return keep;
}

}  // namespace

program::ScheduleInputs schedule_inputs(const Scenario& s, const Point& p) {
  program::ScheduleInputs in{p.model, p.training, p.layout, p.machine->device, {}};
  if (!p.training.attention_kernel.empty()) in.device.attention_kernel = p.training.attention_kernel;
  const auto mem_in = memory_inputs(s, p);
  for (long stage = 0; stage < p.training.pp; ++stage) {
    const auto r = memory::stage_memory(mem_in, stage);
    const double in_flight = memory::micro_batches_in_flight(p.training, stage);
    program::StageMemory m;
    m.activations_per_micro_batch = r.term("activations") / in_flight;
    m.workspace = r.term("activation_workspace");
    const double deferred = memory::deferred_head_micro_batches(p.training);
    const Bytes deferred_bytes = r.term("deferred_head_wgrad");
    if (deferred_bytes > 0) m.deferred_head_wgrad_per_micro_batch = deferred_bytes / deferred;
    m.gradient_reduce_copy = r.term("gradient_reduce_copy");
    const Bytes queued_bytes = r.term("queued_weight_gradients");
    if (queued_bytes > 0)
      m.queued_weight_gradients_per_micro_batch = queued_bytes / memory::queued_weight_gradients(p.training, stage);
    else
      m.queued_weight_gradients_per_micro_batch = memory::zero_bubble_v_weight_gradient_inputs(mem_in, stage);
    if (memory::megatron_step_gradients(p.training)) {
      m.step_fp16_gradients = r.term("gradients");
      m.step_gradient_copy = r.term("communication_buffers");
      m.step_fp32_gradients = r.term("master_gradients");
    }
    m.resident = r.sum_of_terms() - r.term("activations") - queued_bytes - m.workspace - deferred_bytes - m.gradient_reduce_copy -
                 m.step_fp16_gradients - m.step_gradient_copy - m.step_fp32_gradients;
    m.gathered = r.term("gathered_parameters") + r.term("gathered_gradients");
    in.stages.push_back(m);
  }
  if (p.training.pipeline == plan::PipelineSchedule::zero_bubble_v) {
    // One stage boundary's activation through one accelerator's share of its node's uplink.
    const auto rates = engine::fabric_rates(p.machine->topology);
    const double activation = 2.0 * static_cast<double>(p.training.micro_batch * p.model.seq_len * p.model.hidden);
    const double share = rates.node_uplink / static_cast<double>(p.layout.ranks_per_node);
    if (share > 0) in.pipeline_transfer = activation / share + rates.inter_hop;
  }
  return in;
}

std::string unsupported_reason(const Scenario& s, const Point& p) {
  return program::unsupported_plan(schedule_inputs(s, p));
}

PointResult simulate_point_in_process(const Scenario& s, const Point& p, bool trace) {
  const auto wall_start = std::chrono::steady_clock::now();
  const double cpu_start = process_cpu_seconds();
  const auto simgrid_engine = engine::make_exact_timing_engine();
  const auto platform = engine::build_platform(p.machine->topology, p.nodes,
                                               p.hbm_sharing ? model::hbm_link_bandwidth(p.machine->device) : 0,
                                               collective::ring_nics(p.machine->collectives));
  const auto program_start = std::chrono::steady_clock::now();
  auto in = schedule_inputs(s, p);
  // Unfolded, every rank runs a program built for it alone: `--no-fold` checks the sharing too.
  in.share_task_bodies = s.fold_symmetric_ranks;
  const auto prog = program::build_program(in);
  const auto program_end = std::chrono::steady_clock::now();
  const collective::RankLayout layout{static_cast<int>(p.layout.ranks_per_node)};
  const auto rates = engine::fabric_rates(p.machine->topology);
  auto options = allocator_options(p, engine::ExecuteOptions{trace, s.fold_symmetric_ranks,
                                                             p.sm_sharing ? p.machine->device.sm_count : 0});
  options.held_sm_slowdown = p.machine->device.held_sm_slowdown;
  if (trace) options.record_ranks = record_ranks(s, p);
  const auto result = engine::execute_program(
      prog, platform,
      [&](const program::CollectiveCall& c) {
        return collective::plan_collective(c.op, c.size, c.group, layout, p.machine->collectives, rates,
                                              p.collectives);
      },
      options);
  PointResult r;
  r.point = p;
  r.accelerators = static_cast<int>(p.layout.world);
  r.completed = result.completed;
  r.step_time = result.makespan;
  r.samples_per_s = result.makespan > 0 ? static_cast<double>(prog.samples_per_step) / result.makespan : 0;
  // Millions of spans, a few thousand names: each span holds indices into r.span_names. Task
  // names are already interned (program/interned_name.hpp), stream names live in `prog`: both
  // are looked up by id or address, and by text only the first time.
  std::unordered_map<std::string, int> id_of_text;
  auto intern_text = [&](const std::string& name) {
    const auto [at, added] = id_of_text.try_emplace(name, static_cast<int>(r.span_names.size()));
    if (added) r.span_names.push_back(name);
    return at->second;
  };
  std::unordered_map<const std::string*, int> stream_ids;  // by address in `prog`
  auto stream_id = [&](const std::string& name) {
    const auto [it, added] = stream_ids.try_emplace(&name, 0);
    if (added) it->second = intern_text(name);
    return it->second;
  };
  std::vector<int> task_name_ids;  // by InternedName::id(); -1: not seen yet
  auto task_name_id = [&](const program::InternedName& name) {
    const std::size_t k = name.id();
    if (task_name_ids.size() <= k) task_name_ids.resize(k + 1, -1);
    if (task_name_ids[k] < 0) task_name_ids[k] = intern_text(name.str());
    return task_name_ids[k];
  };
  std::vector<int> phase_ids;  // by program::Phase; -1: not seen yet
  auto phase_id = [&](program::Phase phase) {
    const auto k = static_cast<std::size_t>(phase);
    if (phase_ids.size() <= k) phase_ids.resize(k + 1, -1);
    if (phase_ids[k] < 0) phase_ids[k] = intern_text(program::phase_name(phase));
    return phase_ids[k];
  };
  r.spans.reserve(result.records.size());
  for (const auto& rec : result.records) {
    const auto& st = program::tasks_of(prog, rec.rank).streams[rec.stream];
    const auto& t = st.tasks[rec.index];
    r.spans.push_back({rec.rank, rec.stream, task_name_id(t.name), phase_id(t.phase), stream_id(st.name), rec.start,
                       rec.end});
  }
  for (std::size_t k = 0; k < result.peak_memory.size(); ++k)
    if (result.peak_memory[k] > r.peak_memory) {
      r.peak_memory = result.peak_memory[k];
      r.peak_memory_rank = static_cast<int>(k);
      r.peak_memory_time = result.peak_memory_time[k];
    }
  for (std::size_t k = 0; k < result.peak_reserved.size(); ++k) {
    if (result.peak_reserved[k] > r.peak_reserved) {
      r.peak_reserved = result.peak_reserved[k];
      r.allocator_retries = result.allocator_retries[k];
    }
    if (result.allocator_out_of_memory[k]) r.allocator_out_of_memory = true;
  }
  r.memory_samples = result.memory;
  r.sim_wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  r.sim_cpu_s = process_cpu_seconds() - cpu_start;
  r.wall.platform = std::chrono::duration<double>(program_start - wall_start).count();
  r.wall.program = std::chrono::duration<double>(program_end - program_start).count();
  r.wall.fold = result.fold_wall_s;
  r.wall.prepare = result.prepare_wall_s;
  r.wall.run = result.run_wall_s;
  r.activity = {result.classes, static_cast<double>(result.flows), static_cast<double>(result.execs)};
  return r;
}

nlohmann::json point_result_to_json(const PointResult& r) {
  nlohmann::json j = {{"accelerators", r.accelerators}, {"completed", r.completed},
          {"step_time", r.step_time},       {"samples_per_s", r.samples_per_s},
          {"sim_wall_s", r.sim_wall_s},     {"sim_cpu_s", r.sim_cpu_s},     {"span_names", r.span_names},
          {"peak_memory", r.peak_memory},   {"peak_memory_rank", r.peak_memory_rank},
          {"peak_memory_time", r.peak_memory_time},
          {"peak_reserved", r.peak_reserved}, {"allocator_retries", r.allocator_retries},
          {"allocator_out_of_memory", r.allocator_out_of_memory},
          {"wall", {r.wall.platform, r.wall.program, r.wall.fold, r.wall.prepare, r.wall.run}},
          {"activity", {r.activity.classes, r.activity.flows, r.activity.execs}}};
  if (r.pipeline) j["pipeline"] = pipeline::to_json(*r.pipeline);
  return j;
}

PointResult point_result_from_json(const nlohmann::json& j, const Point& p) {
  PointResult r;
  r.point = p;
  r.accelerators = j.at("accelerators").get<int>();
  r.completed = j.at("completed").get<bool>();
  r.step_time = j.at("step_time").get<double>();
  r.samples_per_s = j.at("samples_per_s").get<double>();
  r.sim_wall_s = j.at("sim_wall_s").get<double>();
  r.sim_cpu_s = j.at("sim_cpu_s").get<double>();
  r.peak_memory = j.at("peak_memory").get<double>();
  r.peak_memory_rank = j.at("peak_memory_rank").get<int>();
  r.peak_memory_time = j.at("peak_memory_time").get<double>();
  // Absent from points a sweep recorded before the caching allocator was followed.
  r.peak_reserved = j.value("peak_reserved", 0.0);
  r.allocator_retries = j.value("allocator_retries", 0L);
  r.allocator_out_of_memory = j.value("allocator_out_of_memory", false);
  const auto& wall = j.at("wall");
  r.wall = {wall[0].get<double>(), wall[1].get<double>(), wall[2].get<double>(), wall[3].get<double>(),
            wall[4].get<double>()};
  const auto& activity = j.at("activity");
  r.activity = {activity[0].get<int>(), activity[1].get<double>(), activity[2].get<double>()};
  r.span_names = j.at("span_names").get<std::vector<std::string>>();
  if (j.contains("pipeline")) r.pipeline = pipeline::pipeline_result_from_json(j.at("pipeline"));
  return r;
}

// The child is a fork of this same binary: both ends agree on these plain structs' layout.
static_assert(std::is_trivially_copyable_v<TaskSpan> && std::is_trivially_copyable_v<engine::MemorySample>);

std::string trace_records_to_bytes(const PointResult& r) {
  const std::uint64_t counts[2] = {r.spans.size(), r.memory_samples.size()};
  std::string bytes;
  bytes.reserve(sizeof counts + r.spans.size() * sizeof(TaskSpan) +
                r.memory_samples.size() * sizeof(engine::MemorySample));
  bytes.append(reinterpret_cast<const char*>(counts), sizeof counts);
  bytes.append(reinterpret_cast<const char*>(r.spans.data()), r.spans.size() * sizeof(TaskSpan));
  bytes.append(reinterpret_cast<const char*>(r.memory_samples.data()),
               r.memory_samples.size() * sizeof(engine::MemorySample));
  return bytes;
}

void trace_records_from_bytes(const std::string& bytes, PointResult& r) {
  std::uint64_t counts[2] = {0, 0};
  TRAINSIM_CHECK(bytes.size() >= sizeof counts, "trace records: short reply from the child");
  std::memcpy(counts, bytes.data(), sizeof counts);
  const std::size_t span_bytes = counts[0] * sizeof(TaskSpan);
  const std::size_t memory_bytes = counts[1] * sizeof(engine::MemorySample);
  TRAINSIM_CHECK(bytes.size() == sizeof counts + span_bytes + memory_bytes,
                 "trace records: reply of the wrong size from the child");
  r.spans.resize(counts[0]);
  r.memory_samples.resize(counts[1]);
  // memcpy into an empty vector's null data() is undefined even for 0 bytes (UBSan reports it).
  if (span_bytes > 0) std::memcpy(r.spans.data(), bytes.data() + sizeof counts, span_bytes);
  if (memory_bytes > 0)
    std::memcpy(r.memory_samples.data(), bytes.data() + sizeof counts + span_bytes, memory_bytes);
}

PointResult simulate_point(const Scenario& s, const Point& p, bool trace) {
  const auto verdict = memory::judge_memory(memory_inputs(s, p));
  auto unsimulated = [&](PointResult r) {
    r.point = p;
    r.accelerators = static_cast<int>(p.layout.world);
    r.memory = verdict;
    return r;
  };
  if (!verdict.fits) {
    PointResult r;
    r.oom = true;
    return unsimulated(r);
  }
  if (const auto why = unsupported_reason(s, p); !why.empty()) {
    PointResult r;
    r.not_simulated = why;
    return unsimulated(r);
  }
  PointResult r = simulate_forked(s, p, trace);
  r.memory = verdict;
  return r;
}

PointResult simulate_forked(const Scenario& s, const Point& p, bool trace) {
  // The input pipeline needs the detailed step's spans (its compute and communication time),
  // of rank 0 only: sending every rank's through the pipe costs seconds at hundreds of ranks.
  auto reply = run_in_child_with_tail(
      [&] {
        auto in_child = simulate_point_in_process(s, p, trace || s.data.has_value());
        if (!trace) {
          auto& sp = in_child.spans;
          sp.erase(std::remove_if(sp.begin(), sp.end(), [](const TaskSpan& x) { return x.rank != 0; }), sp.end());
        }
        ChildOutput out{point_result_to_json(in_child), trace_records_to_bytes(in_child)};
        return out;
      },
      "simulation of point \"" + p.label + "\"");
  PointResult r = point_result_from_json(reply.result, p);
  trace_records_from_bytes(reply.tail, r);
  reply.tail = std::string();
  if (s.data && r.completed) add_input_pipeline(s, p, r);
  if (!trace) r.spans.clear();
  if (trace && !s.trace_ranks.contains(0)) {  // kept for the input pipeline only
    auto& sp = r.spans;
    sp.erase(std::remove_if(sp.begin(), sp.end(), [](const TaskSpan& x) { return x.rank == 0; }), sp.end());
    auto& m = r.memory_samples;
    m.erase(std::remove_if(m.begin(), m.end(), [](const engine::MemorySample& x) { return x.rank == 0; }), m.end());
  }
  return r;
}

}  // namespace trainsim::scenario

#include "scenario/pipeline_runner.hpp"

#include <cstdio>
#include <stdexcept>

#include "engine/fabric_rates.hpp"
#include "engine/input_pipeline_executor.hpp"
#include "pipeline/diagnosis.hpp"
#include "pipeline/pipeline_result_json.hpp"
#include "pipeline/read_plan.hpp"
#include "program/build_program.hpp"
#include "program/data_parallel_schedule.hpp"
#include "scenario/pipeline_reader.hpp"
#include "scenario/point_runner.hpp"
#include "scenario/child_process.hpp"

namespace trainsim::scenario {

namespace {

/// Node 0's bytes per step over its uplink: every collective flow from one of its ranks to
/// another node, in the program the point actually runs (DDP, ZeRO, FSDP or model parallel).
Bytes inter_node_bytes(const Scenario& s, const Point& p, const program::DataParallelConfig& cfg) {
  const auto prog = program::build_program(schedule_inputs(s, p));
  const collective::RankLayout layout{cfg.ranks_per_node};
  const auto rates = engine::fabric_rates(p.machine->topology);
  Bytes total = 0;
  for (const auto& c : prog.collectives) {
    const auto plan = collective::repeated(
        collective::plan_collective(c.op, c.size, c.group, layout, p.machine->collectives, rates, p.collectives),
        c.repeat);
    for (const auto& ph : plan.phases)
      for (const auto& f : ph.flows)
        if (f.src / cfg.ranks_per_node == 0 && f.dst / cfg.ranks_per_node != 0) total += f.bytes;
  }
  return total;
}

/// "every rank (32 DataLoaders)", "TP rank 0 of the first and last stages (framework
/// default): 4 of 16 ranks on 2 of 2 nodes, 2 data-parallel replicas".
std::string readers_text(const PointReaders& r, const plan::Layout& layout) {
  long loaders = 0, nodes = 0;
  for (const auto& n : r.nodes) {
    loaders += n.loaders;
    nodes += n.loaders > 0 ? 1 : 0;
  }
  const char* who = r.rule == pipeline::DataReaders::every_rank  ? "every rank"
                    : r.rule == pipeline::DataReaders::tp_rank0 ? "TP rank 0 of every stage"
                                                                 : "TP rank 0 of the first and last stages";
  return std::string(who) + " (" + pipeline::data_readers_name(r.rule) +
         (r.from_framework ? ", the framework's rule" : ", data.readers") + "): " + std::to_string(loaders) + " of " +
         std::to_string(layout.world) + " ranks on " + std::to_string(nodes) + " of " + std::to_string(r.nodes.size()) +
         " nodes, " + std::to_string(r.sequences.replicas_per_sequence) + " data-parallel replica(s) per reading node";
}

}  // namespace

storage::FsxFileSystem point_file_system(const Scenario& s, const Point& p) {
  const auto& c = *s.data;
  return storage::size_file_system(c.fsx_spec, c.fsx_deployment,
                                   p.storage_capacity ? *p.storage_capacity : c.fsx_capacity);
}

void add_input_pipeline(const Scenario& s, const Point& p, PointResult& r) {
  const auto& c = *s.data;
  const auto cfg = training_for(s, p);
  engine::PipelineStepProfile step;
  step.step_time = r.step_time;
  for (const auto& sp : r.spans) {
    if (sp.rank != 0) continue;
    if (r.span_names[static_cast<std::size_t>(sp.stream_name)] == "compute") step.accelerator_busy += sp.end - sp.start;
    else step.communication_time += sp.end - sp.start;
  }
  step.inter_node_bytes = p.nodes > 1 ? inter_node_bytes(s, p, cfg) : 0;
  const PointReaders readers = point_readers(c, p.training, p.layout);
  for (const auto& n : readers.nodes) step.node_loaders.push_back(n.loaders);
  step.micro_batches = cfg.accumulation;
  step.samples_per_loader_batch = cfg.micro_batch;
  // A step trains micro-batch x accumulation samples per data-parallel replica; the TP, CP and
  // pipeline ranks of a replica share its samples.
  step.samples_per_step = p.layout.dp * cfg.micro_batch * cfg.accumulation;

  engine::PipelineSetup setup;
  setup.topology = &p.machine->topology;
  setup.loader = c.loader;
  setup.local_nvme = p.storage_kind.value_or(c.source) == pipeline::SourceKind::local_nvme;
  setup.step = step;
  pipeline::ReadPlanInput in;
  in.data = c.data;
  in.nodes = p.nodes;
  in.node_sequence = readers.sequences.node_sequence;
  in.samples_per_node_step = readers.sequences.replicas_per_sequence * cfg.micro_batch * cfg.accumulation;
  in.epochs = c.epochs;
  in.local_nvme = setup.local_nvme;
  in.page_cache_per_node = c.loader.page_cache_fraction * p.machine->topology.host->memory;
  in.seed = c.shuffle_seed;
  std::string source;
  if (!setup.local_nvme) {
    setup.fsx = point_file_system(s, p);
    in.servers = setup.fsx.servers;
    in.server_cache = setup.fsx.cache;
    in.large_file_threshold = setup.fsx.large_file_threshold;
    in.large_file_stripes = setup.fsx.large_file_stripes;
    // Baseline (burst) MB/s: the burst holds while the credit bucket lasts.
    auto rate = [](BytesPerSecond base, BytesPerSecond burst) {
      char text[48];
      if (burst > base) std::snprintf(text, sizeof text, "%.0f (burst %.0f) MB/s", base / 1e6, burst / 1e6);
      else std::snprintf(text, sizeof text, "%.0f MB/s", base / 1e6);
      return std::string(text);
    };
    char buf[96];
    std::snprintf(buf, sizeof buf, "FSx %s %.1f TiB (%d servers, ", setup.fsx.deployment.c_str(),
                  setup.fsx.capacity / 1099511627776.0, setup.fsx.servers);
    source = buf + rate(setup.fsx.disk_baseline, setup.fsx.disk_burst) + " disk, " +
             rate(setup.fsx.network_baseline, setup.fsx.network_burst) + " network, ";
    std::snprintf(buf, sizeof buf, "%.1f GiB cache)", setup.fsx.cache / 1073741824.0);
    source += buf;
  } else {
    source = "local NVMe (" + format_bytes(p.machine->topology.host->local_nvme_read) + "/s per node)";
  }
  const auto plan = pipeline::plan_reads(in);
  if (plan.steps_per_epoch < 1)
    throw std::runtime_error("the data set holds less than one global batch");
  setup.plan = &plan;
  const auto j = run_in_child([&] { return pipeline::to_json(engine::simulate_input_pipeline(setup)); },
                              "input pipeline simulation of point \"" + p.label + "\"");
  auto result = pipeline::pipeline_result_from_json(j);
  result.source = source;
  result.readers = readers_text(readers, p.layout);
  result.diagnoses = pipeline::diagnose(result.epochs, c.diagnosis);
  const auto& last = result.epochs.back();
  r.samples_per_s = last.samples_per_s;
  r.step_time = last.time / static_cast<double>(plan.steps_per_epoch);
  r.pipeline = std::move(result);
}

}  // namespace trainsim::scenario

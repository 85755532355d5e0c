// `trainsim search`: the layouts (schedule, TP, CP, PP and its schedule, micro-batch,
// checkpointing, offloading, sequence parallelism, sharding) of one point at its global batch,
// judged for memory and simulated, fastest first.
#include <algorithm>
#include <iostream>

#include "cli/commands.hpp"
#include "search/node_scaling.hpp"
#include "search/search_report.hpp"

namespace trainsim::cli {

const char* const kSearchUsage =
    "trainsim search SCENARIO [--point LABEL] [--nodes LIST] [--global-batch B] [--schedule LIST]\n"
    "                [--tp LIST] [--cp LIST] [--cp-comm-type LIST] [--pp LIST] [--pipeline-schedule LIST]\n"
    "                [--virtual-stages LIST] [--micro-batch LIST]\n"
    "                [--checkpointing LIST] [--checkpoint-policy LIST] [--offloading LIST]\n"
    "                [--sequence-parallel LIST]\n"
    "                [--shard LIST] [--top K] [--jobs N]"
    " [--format table|json|csv]\n"
    "  which layout of a point trains fastest: every combination of the axes at the point's\n"
    "  global batch (sequences per step), judged by the memory model (OOM layouts are not\n"
    "  simulated) and simulated, fastest first, the point's own layout marked\n"
    "  --point  the point to search (default: the scenario's first)\n"
    "  --nodes  search on this many nodes (the global batch stays the point's); a list, e.g.\n"
    "           --nodes 2,4,8,16, searches each and prints the fastest layout per node count\n"
    "           with its speed-up, efficiency and accelerator-hours per million samples\n"
    "  --schedule  training schedules to compare: ddp, zero1, zero2, zero3, fsdp, or all\n"
    "           (default: the point's own); another schedule runs with the point's precision\n"
    "           (FSDP's fsdp_mixed becomes amp) and without the options of the point's own\n"
    "           framework that it lacks, each named under the table\n"
    "  --tp, --cp, --pp, --micro-batch, --shard  comma-separated degrees, e.g. --tp 1,2,4,8;\n"
    "           defaults: TP over powers of two up to a node and PP over the divisors of the\n"
    "           accelerators when the point is model-parallel, every power-of-two micro-batch\n"
    "           that divides a replica's batch, else the point's own values (CP: context\n"
    "           parallelism, Megatron-core's ring attention, the point's own by default)\n"
    "  --cp-comm-type  p2p,a2a,all_gather: how a Megatron-core CP group exchanges (the K, V\n"
    "           ring, all-to-alls of Q, K, V and O, or K, V all-gathered), tried at CP > 1\n"
    "           (default: the point's own)\n"
    "  --pipeline-schedule  gpipe,1f1b,zb-h1,zb-v: the schedule of pipelines without virtual stages\n"
    "           (default: the point's own); only at PP > 1\n"
    "  --virtual-stages  model chunks per pipeline stage: 1 is the point's plain schedule, more\n"
    "           Megatron's interleaved 1F1B (default: 1, 2 and the point's own when Megatron-LM\n"
    "           pipelines it); only at PP > 1\n"
    "  --shard  hybrid_shard_degree values of a sharded schedule; `full` shards over all DP ranks\n"
    "  --checkpointing  on,off (default both)\n"
    "  --checkpoint-policy  full,selective_op,selective_attention: what checkpointed layers\n"
    "           keep, each tried where checkpointing is on (default: the point's own)\n"
    "  --offloading  on,off: activation offloading of the checkpointed layer inputs to host\n"
    "           memory, with checkpointing only (default: the point's own)\n"
    "  --sequence-parallel  on,off: Megatron's sequence parallelism at TP > 1 (default: the\n"
    "           point's own)\n"
    "  --top    simulated layouts in the table (default 10; 0: all)\n"
    "  --jobs   simulations at once (default 1), each in its own process\n";

namespace {

long positive(const std::string& flag, const std::string& v) {
  if (v.empty() || v.size() > 9 || v.find_first_not_of("0123456789") != std::string::npos ||
      std::stol(v) < 1)
    throw UsageError(flag + " expects positive integers, not \"" + v + "\"");
  return std::stol(v);
}

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const auto comma = list.find(',', start);
    out.push_back(list.substr(start, comma - start));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

std::vector<long> degrees(const std::string& flag, const std::string& list) {
  std::vector<long> out;
  for (const auto& v : split(list)) out.push_back(positive(flag, v));
  return out;
}

std::vector<bool> on_off(const std::string& flag, const std::string& list) {
  std::vector<bool> out;
  for (const auto& v : split(list)) {
    if (v != "on" && v != "off")
      throw UsageError(flag + " expects on and/or off, not \"" + v + "\"");
    out.push_back(v == "on");
  }
  return out;
}

}  // namespace

int search_command(const std::vector<std::string>& args) {
  std::string scenario_file, format = "table";
  search::SearchOptions options;
  std::size_t top = 10;
  std::vector<int> node_counts;
  ArgCursor cursor(args);
  while (!cursor.done()) {
    const std::string& a = cursor.next();
    if (a == "--point") {
      options.point_label = cursor.value(a);
    } else if (a == "--nodes") {
      for (const long n : degrees(a, cursor.value(a))) node_counts.push_back(static_cast<int>(n));
    } else if (a == "--global-batch") {
      options.global_batch = positive(a, cursor.value(a));
    } else if (a == "--schedule") {
      for (const auto& v : split(cursor.value(a))) {
        const auto& names = search::schedule_names();
        if (v == "all") {
          options.space.schedule.insert(options.space.schedule.end(), names.begin(), names.end());
        } else if (std::find(names.begin(), names.end(), v) != names.end()) {
          options.space.schedule.push_back(v);
        } else {
          throw UsageError("--schedule expects ddp, zero1, zero2, zero3, fsdp or all, not \"" + v +
                           "\"");
        }
      }
    } else if (a == "--tp") {
      options.space.tp = degrees(a, cursor.value(a));
    } else if (a == "--cp") {
      options.space.cp = degrees(a, cursor.value(a));
    } else if (a == "--cp-comm-type") {
      for (const auto& v : split(cursor.value(a))) {
        const auto& names = search::cp_comm_type_names();
        if (std::find(names.begin(), names.end(), v) == names.end())
          throw UsageError("--cp-comm-type expects p2p, a2a and/or all_gather, not \"" + v + "\"");
        options.space.cp_comm_type.push_back(v);
      }
    } else if (a == "--pipeline-schedule") {
      for (const auto& v : split(cursor.value(a))) {
        const auto& names = search::pipeline_schedule_names();
        if (std::find(names.begin(), names.end(), v) == names.end())
          throw UsageError("--pipeline-schedule expects gpipe, 1f1b, zb-h1 and/or zb-v, not \"" + v +
                           "\" (interleaving: --virtual-stages)");
        options.space.pipeline_schedule.push_back(v);
      }
    } else if (a == "--pp") {
      options.space.pp = degrees(a, cursor.value(a));
    } else if (a == "--virtual-stages") {
      options.space.virtual_stages = degrees(a, cursor.value(a));
    } else if (a == "--micro-batch") {
      options.space.micro_batch = degrees(a, cursor.value(a));
    } else if (a == "--shard") {
      for (const auto& v : split(cursor.value(a)))
        options.space.shard.push_back(v == "full" ? 0 : positive(a, v));
    } else if (a == "--checkpointing") {
      options.space.checkpointing = on_off(a, cursor.value(a));
    } else if (a == "--checkpoint-policy") {
      for (const auto& v : split(cursor.value(a))) {
        const auto& names = search::checkpoint_policy_names();
        if (std::find(names.begin(), names.end(), v) == names.end())
          throw UsageError("--checkpoint-policy expects full, selective_op and/or selective_attention, not \"" + v + "\"");
        options.space.checkpoint_policy.push_back(v);
      }
    } else if (a == "--offloading") {
      options.space.offloading = on_off(a, cursor.value(a));
    } else if (a == "--sequence-parallel") {
      options.space.sequence_parallel = on_off(a, cursor.value(a));
    } else if (a == "--top") {
      const std::string v = cursor.value(a);
      top = v == "0" ? 0 : static_cast<std::size_t>(positive(a, v));
    } else if (a == "--jobs") {
      options.jobs = static_cast<int>(positive(a, cursor.value(a)));
    } else if (a == "--format") {
      format = cursor.value(a);
      if (format != "table" && format != "json" && format != "csv")
        throw UsageError("--format must be table, json or csv, not \"" + format + "\"");
    } else {
      take_scenario_operand(a, scenario_file);
    }
  }
  if (scenario_file.empty()) throw UsageError("search needs a SCENARIO file");
  if (node_counts.size() > 1) {
    const auto scaling = search::run_node_scaling(scenario_file, options, node_counts, std::cerr);
    if (format == "table") search::write_scaling_table(std::cout, scaling);
    if (format == "json") search::write_scaling_json(std::cout, scaling);
    if (format == "csv") search::write_scaling_csv(std::cout, scaling);
    return 0;
  }
  if (node_counts.size() == 1) options.nodes = node_counts.front();
  const auto result = search::run_search(scenario_file, options, std::cerr);
  if (format == "table") search::write_search_table(std::cout, result, top);
  if (format == "json") search::write_search_json(std::cout, result);
  if (format == "csv") search::write_search_csv(std::cout, result);
  return 0;
}

}  // namespace trainsim::cli

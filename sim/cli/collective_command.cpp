// `trainsim collective`: an nccl-tests-style sweep of one collective on a topology, simulated
// with the same collective model training schedules use, optionally beside measured curves.
#include <algorithm>
#include <iostream>
#include <map>
#include <optional>
#include <set>

#include "cli/commands.hpp"
#include "collective/collective_calibration.hpp"
#include "collective/measurement_file.hpp"
#include "core/error.hpp"
#include "report/collective_report.hpp"
#include "scenario/collective_sweep.hpp"
#include "topology/topology.hpp"

namespace trainsim::cli {

const char* const kCollectiveUsage =
    "trainsim collective --topology FILE [--nodes N[,N...]] [--op OP] [--sizes LIST]\n"
    "                    [--format table|json|csv] [--compare FILE] [--algo A] [--proto P]\n"
    "  simulate one collective over every accelerator of N nodes at each size, as nccl-tests\n"
    "  prints it: size, count (float32), time, algbw and busbw (doc/PERFORMANCE.md), and the\n"
    "  algorithm and protocol the NCCL-like tuner chose\n"
    "  --op      all_reduce (default), all_gather, reduce_scatter, alltoall, broadcast, send_recv,\n"
    "            ring_exchange\n"
    "  --sizes   8,1K,64M (K/M/G = 2^10/2^20/2^30); A,...,B doubles from A to B; MIN:MAX doubles\n"
    "  --compare a trainsim.collective_measurements/1 file (validate/README.md): adds measured\n"
    "            busbw, error per point, fitted points, geometric-mean error per size band; with\n"
    "            no --op/--nodes/--sizes it simulates exactly the file's rows\n"
    "  --algo    ring|tree|nvls|nvls_tree, --proto LL|LL128|Simple: force the choice (NCCL_ALGO, NCCL_PROTO)\n";

namespace {

using collective::Op;

/// "8", "1K", "64M", "8G", optionally with a trailing "B"; binary multiples as nccl-tests.
Bytes parse_size(std::string text) {
  const std::string original = text;
  if (!text.empty() && (text.back() == 'B' || text.back() == 'b')) text.pop_back();
  double mult = 1;
  if (!text.empty()) {
    switch (text.back()) {
      case 'K': case 'k': mult = 1024.0; break;
      case 'M': case 'm': mult = 1024.0 * 1024; break;
      case 'G': case 'g': mult = 1024.0 * 1024 * 1024; break;
      case 'T': case 't': mult = 1024.0 * 1024 * 1024 * 1024; break;
      default: break;
    }
    if (mult > 1) text.pop_back();
  }
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (text.empty() || used != text.size() || !(v > 0))
    throw UsageError("bad size \"" + original + "\"; expected e.g. 8, 1K, 64M, 8G");
  return v * mult;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const auto at = s.find(sep, start);
    out.push_back(s.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) return out;
    start = at + 1;
  }
}

void double_until(std::vector<Bytes>& out, Bytes from, Bytes to) {
  if (to < from) throw UsageError("size range must go up");
  for (Bytes s = from * 2; s <= to; s *= 2) out.push_back(s);
}

std::vector<Bytes> parse_sizes(const std::string& text) {
  std::vector<Bytes> out;
  const auto colon = split(text, ':');
  if (colon.size() == 2) {
    out.push_back(parse_size(colon[0]));
    double_until(out, out.back(), parse_size(colon[1]));
    return out;
  }
  const auto items = split(text, ',');
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (items[i] != "...") {
      out.push_back(parse_size(items[i]));
      continue;
    }
    if (out.empty() || i + 1 >= items.size())
      throw UsageError("\"...\" needs a size on each side, e.g. 1K,...,8G");
    const Bytes to = parse_size(items[++i]);
    double_until(out, out.back(), to);
    if (out.back() != to) out.push_back(to);
  }
  return out;
}

std::vector<int> parse_nodes(const std::string& text) {
  std::vector<int> out;
  for (const auto& item : split(text, ',')) {
    std::size_t used = 0;
    int v = 0;
    try {
      v = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || v < 1) throw UsageError("bad node count \"" + item + "\"");
    out.push_back(v);
  }
  return out;
}

collective::Algorithm parse_algorithm(const std::string& a) {
  const auto algo = collective::parse_algorithm(a);
  if (!algo || *algo == collective::Algorithm::pairwise)
    throw UsageError("--algo must be ring, tree, nvls or nvls_tree, not \"" + a + "\"");
  return *algo;
}

collective::Protocol parse_protocol(const std::string& p) {
  const auto proto = collective::parse_protocol(p);
  if (!proto) throw UsageError("--proto must be LL, LL128 or Simple, not \"" + p + "\"");
  return *proto;
}

}  // namespace

int collective_command(const std::vector<std::string>& args) {
  std::string topology_file, format = "table", compare_file;
  std::optional<std::vector<int>> nodes;
  std::optional<Op> op;
  std::optional<std::vector<Bytes>> sizes;
  collective::TunerOverride force;
  ArgCursor cursor(args);
  while (!cursor.done()) {
    const std::string& a = cursor.next();
    if (a == "--topology") {
      topology_file = cursor.value(a);
    } else if (a == "--nodes") {
      nodes = parse_nodes(cursor.value(a));
    } else if (a == "--op") {
      const std::string& name = cursor.value(a);
      op = collective::parse_op(name);
      if (!op) throw UsageError("unknown --op \"" + name + "\"");
    } else if (a == "--sizes") {
      sizes = parse_sizes(cursor.value(a));
    } else if (a == "--format") {
      format = cursor.value(a);
      if (format != "table" && format != "json" && format != "csv")
        throw UsageError("--format must be table, json or csv, not \"" + format + "\"");
    } else if (a == "--compare") {
      compare_file = cursor.value(a);
    } else if (a == "--algo") {
      force.algorithm = parse_algorithm(cursor.value(a));
    } else if (a == "--proto") {
      force.protocol = parse_protocol(cursor.value(a));
    } else {
      throw UsageError("unknown argument " + a);
    }
  }
  if (topology_file.empty()) throw UsageError("collective needs --topology FILE");

  const auto topo = topology::load_topology(topology_file);
  if (topo.calibration_file.empty())
    throw ConfigError(topology_file, "/collective_calibration",
                      "the topology names no collective calibration");
  const auto cal = collective::load_collective_calibration(topo.calibration_file);
  std::optional<collective::MeasurementFile> reference;
  if (!compare_file.empty()) reference = collective::load_measurements(compare_file);
  if (!reference && !sizes) throw UsageError("collective needs --sizes (or --compare FILE)");

  // What to simulate: (op, nodes) -> sizes, in a fixed order.
  std::map<std::pair<int, int>, std::set<Bytes>> grid;
  if (sizes) {
    for (int n : nodes.value_or(std::vector<int>{1}))
      for (Bytes s : *sizes) grid[{static_cast<int>(op.value_or(Op::all_reduce)), n}].insert(s);
  } else {
    for (const auto& m : reference->rows) {
      if (op && m.op != *op) continue;
      if (nodes && std::find(nodes->begin(), nodes->end(), m.nodes) == nodes->end()) continue;
      grid[{static_cast<int>(m.op), m.nodes}].insert(m.size);
    }
    if (grid.empty()) throw UsageError("no row of " + compare_file + " matches --op / --nodes");
  }

  std::vector<report::CollectiveRow> rows;
  for (const auto& [key, size_set] : grid) {
    scenario::SweepRequest req;
    req.op = static_cast<Op>(key.first);
    req.nodes = key.second;
    req.sizes.assign(size_set.begin(), size_set.end());
    req.force = force;
    for (const auto& p : scenario::run_sweep(topo, cal, req)) {
      report::CollectiveRow row;
      row.op = req.op;
      row.nodes = req.nodes;
      row.point = p;
      rows.push_back(row);
    }
  }
  const auto rep = report::make_collective_report(
      topo.name, static_cast<int>(topo.accelerators().size()), std::move(rows),
      std::move(reference), cal.fitted, cal.fitted_rows);
  if (format == "table") report::write_collective_table(std::cout, rep);
  if (format == "json") report::write_collective_json(std::cout, rep);
  if (format == "csv") report::write_collective_csv(std::cout, rep);
  return 0;
}

}  // namespace trainsim::cli

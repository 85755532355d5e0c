#include "collective/tuner_regions.hpp"

#include <cmath>

#include "collective/collective_plan.hpp"
#include "core/json_reader.hpp"

namespace trainsim::collective {

namespace {

/// On segment ab, to a tolerance relative to the coordinates' scale (bytes reach 1e11).
bool on_segment(TunerPoint a, TunerPoint b, TunerPoint p) {
  const double abx = b.bytes - a.bytes, aby = b.ranks - a.ranks;
  const double apx = p.bytes - a.bytes, apy = p.ranks - a.ranks;
  if (abx == 0 && aby == 0) return apx == 0 && apy == 0;  // a degenerate edge is its point
  const double cross = abx * apy - aby * apx;
  const double scale = std::hypot(abx, aby) * std::hypot(apx, apy);
  if (std::abs(cross) > 1e-12 * scale) return false;
  const double dot = abx * apx + aby * apy;
  return dot >= 0 && dot <= abx * abx + aby * aby;
}

}  // namespace

bool region_holds(const TunerRegion& r, TunerPoint p) {
  const auto& v = r.vertices;
  const std::size_t n = v.size();
  for (std::size_t i = 0; i < n; ++i)
    if (on_segment(v[i], v[(i + 1) % n], p)) return true;
  bool inside = false;
  for (std::size_t i = 0; i < n; ++i) {
    const TunerPoint a = v[i], b = v[(i + 1) % n];
    if ((a.ranks > p.ranks) == (b.ranks > p.ranks)) continue;
    const double x = a.bytes + (p.ranks - a.ranks) * (b.bytes - a.bytes) / (b.ranks - a.ranks);
    if (p.bytes < x) inside = !inside;
  }
  return inside;
}

std::optional<std::pair<Algorithm, Protocol>> region_choice(
    const TunerRegions& t, Op op, Bytes size, int nodes, int ranks,
    const std::function<bool(Algorithm, Protocol)>& usable) {
  if (nodes < t.min_nodes || nodes * t.ranks_per_node != ranks) return std::nullopt;
  const auto it = t.by_op.find(op_name(op));
  if (it == t.by_op.end()) return std::nullopt;
  const TunerPoint p{size, static_cast<double>(ranks)};
  for (const auto& r : it->second)
    if (usable(r.algorithm, r.protocol) && region_holds(r, p))
      return std::make_pair(r.algorithm, r.protocol);
  return std::nullopt;
}

TunerRegions load_tuner_regions(const std::string& path) {
  const auto doc = read_json_file(path);
  JsonObject root = root_object(doc, path);
  root.require_schema_version(1);
  root.require_kind("nccl_tuner_regions");
  TunerRegions t;
  t.file = path;
  t.name = root.string("name");
  root.allow("description");
  root.require_source();
  t.ranks_per_node = static_cast<int>(root.positive_integer("ranks_per_node"));
  t.min_nodes = static_cast<int>(root.positive_integer("min_nodes"));
  JsonObject ops = root.object("regions");
  for (const char* name : {"all_reduce", "all_gather", "reduce_scatter"}) {
    if (!ops.has(name)) continue;
    auto& list = t.by_op[name];
    for (auto& o : ops.object_array(name)) {
      TunerRegion r;
      const auto a = parse_algorithm(o.string("algorithm"));
      if (!a || *a == Algorithm::pairwise)
        o.fail("algorithm", "expected ring, tree, nvls or nvls_tree");
      const auto pr = parse_protocol(o.string("protocol"));
      if (!pr) o.fail("protocol", "expected LL, LL128 or Simple");
      r.algorithm = *a;
      r.protocol = *pr;
      for (auto& v : o.object_array("vertices")) {
        r.vertices.push_back({v.number("bytes"), v.number("ranks")});
        v.finish();
      }
      if (r.vertices.size() < 2) o.fail("vertices", "expected at least 2 vertices");
      o.finish();
      list.push_back(std::move(r));
    }
  }
  ops.finish();
  root.finish();
  return t;
}

}  // namespace trainsim::collective

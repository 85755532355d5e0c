// load_topology(): parse the JSON with the strict reader, validate, then check connectivity on
// the NodeGraph. Every error names the file and the JSON path of the offending value.
#include "topology/topology.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/paths.hpp"
#include "core/json_reader.hpp"
#include "topology/topology_graph.hpp"

namespace trainsim::topology {
namespace {

constexpr int kSchemaVersion = 1;
// Bounds a typo such as "gpu{0..80000}" before it allocates a huge node.
constexpr long kMaxRangeSize = 4096;

const std::vector<std::string>& kind_names() {
  static const std::vector<std::string> names{"accelerator", "switch", "cpu", "nic", "gateway"};
  return names;
}

VertexKind kind_from_name(const std::string& name) {
  if (name == "accelerator") return VertexKind::accelerator;
  if (name == "switch") return VertexKind::switch_;
  if (name == "cpu") return VertexKind::cpu;
  if (name == "nic") return VertexKind::nic;
  return VertexKind::gateway;  // choice() has already rejected anything else
}

// Ids become parts of link ids ("a--b") and of engine host names, so keep them plain.
bool plain_id(const std::string& id) {
  if (id.empty()) return false;
  for (char c : id)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

bool all_digits(const std::string& s) {
  if (s.empty() || s.size() > 9) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

/// Expands one "{a..b}" range, inclusive: "hpu{0..7}" -> hpu0 .. hpu7. Text without braces is
/// one id. Every result must be a plain id.
std::vector<std::string> expand_ids(const std::string& text, const std::string& file,
                                    const std::string& path) {
  const auto bad = [&](const std::string& why) {
    throw ConfigError(file, path, "bad vertex id \"" + text + "\": " + why);
  };
  std::vector<std::string> ids;
  const auto open = text.find('{');
  if (open == std::string::npos) {
    ids.push_back(text);
  } else {
    const auto close = text.find('}', open);
    const auto dots = text.find("..", open);
    if (close == std::string::npos || dots == std::string::npos || dots > close)
      bad("a range is written {first..last}, e.g. \"hpu{0..7}\"");
    const std::string first = text.substr(open + 1, dots - open - 1);
    const std::string last = text.substr(dots + 2, close - dots - 2);
    if (!all_digits(first) || !all_digits(last))
      bad("range bounds must be non-negative integers, e.g. \"hpu{0..7}\"");
    const long lo = std::stol(first);
    const long hi = std::stol(last);
    if (lo > hi) bad("the range's first bound is larger than its last");
    if (hi - lo >= kMaxRangeSize)
      bad("range of more than " + std::to_string(kMaxRangeSize) + " ids");
    const std::string prefix = text.substr(0, open);
    const std::string suffix = text.substr(close + 1);
    for (long i = lo; i <= hi; ++i) ids.push_back(prefix + std::to_string(i) + suffix);
  }
  for (const auto& id : ids)
    if (!plain_id(id))
      bad("ids use letters, digits and '_' only, with at most one {first..last} range");
  return ids;
}

std::string required_text(JsonObject& obj, const std::string& key) {
  std::string s = obj.string(key);
  if (s.empty()) obj.fail(key, "must not be empty");
  return s;
}

/// Reads node.vertices and node.links; keeps what is needed to name earlier definitions.
class NodeReader {
public:
  explicit NodeReader(Topology& topo) : topo_(topo) {}

  void read_vertices(JsonObject& node) {
    for (JsonObject& v : node.object_array("vertices")) {
      const std::string text = v.string("id");
      const VertexKind kind = kind_from_name(v.choice("kind", kind_names()));
      v.allow("note");
      v.finish();
      for (const auto& id : expand_ids(text, v.file(), v.path_of("id"))) {
        const auto [it, fresh] = vertex_path_.emplace(id, v.path_of("id"));
        if (!fresh)
          v.fail("id", "duplicate vertex id \"" + id + "\" (first at " + it->second + ")");
        topo_.vertices.push_back(Vertex{id, kind});
      }
    }
  }

  void read_links(JsonObject& node) {
    for (JsonObject& l : node.object_array("links")) read_link(l);
  }

private:
  void read_link(JsonObject& l) {
    const int forms = static_cast<int>(l.has("between")) + static_cast<int>(l.has("full_mesh")) +
                      static_cast<int>(l.has("star"));
    if (forms != 1)
      throw ConfigError(l.file(), l.path(),
                        "a link has exactly one of \"between\" (two ids), \"full_mesh\" (a list) "
                        "or \"star\" (a center id) with \"leaves\"");
    if (l.has("leaves") && !l.has("star"))
      l.fail("leaves", "\"leaves\" belongs to a \"star\" link");

    std::vector<std::pair<std::string, std::string>> pairs;
    std::string form_key;
    if (l.has("between")) {
      form_key = "between";
      const auto ends = l.string_array("between");
      if (ends.size() != 2) l.fail("between", "expected exactly two vertex ids");
      for (std::size_t j = 0; j < 2; ++j)
        known(l, ends[j], l.path_of("between") + "/" + std::to_string(j));
      if (ends[0] == ends[1]) l.fail("between", "a link joins two different vertices");
      pairs.emplace_back(ends[0], ends[1]);
    } else if (l.has("full_mesh")) {
      form_key = "full_mesh";
      const auto ids = id_list(l, "full_mesh");
      if (ids.size() < 2) l.fail("full_mesh", "a full mesh needs at least two vertices");
      for (std::size_t i = 0; i < ids.size(); ++i)
        for (std::size_t j = i + 1; j < ids.size(); ++j) pairs.emplace_back(ids[i], ids[j]);
    } else {
      form_key = "star";
      const std::string center = l.string("star");
      known(l, center, l.path_of("star"));
      const auto leaves = id_list(l, "leaves");
      if (leaves.empty()) l.fail("leaves", "a star needs at least one leaf");
      for (const auto& leaf : leaves) {
        if (leaf == center) l.fail("leaves", "the star's center \"" + center + "\" is also a leaf");
        pairs.emplace_back(center, leaf);
      }
    }

    const BytesPerSecond bandwidth = l.quantity("bandwidth", Dimension::bandwidth);
    const Seconds latency = l.non_negative_quantity("latency", Dimension::seconds);
    const Sharing sharing =
        l.choice_or("sharing", {"split_duplex", "shared"}, "split_duplex") == "shared"
            ? Sharing::shared
            : Sharing::split_duplex;
    const std::string source = required_text(l, "source");
    l.allow("note");
    l.finish();

    for (const auto& [a, b] : pairs) {
      const auto key = std::minmax(a, b);
      const auto [it, fresh] = link_path_.emplace(std::make_pair(key.first, key.second), l.path());
      if (!fresh)
        l.fail(form_key, "duplicate link between \"" + a + "\" and \"" + b + "\" (first at " +
                             it->second + ")");
      topo_.links.push_back(Link{a + "--" + b, a, b, bandwidth, latency, sharing, source});
    }
  }

  // A list of ids, each entry possibly a range; every id known and listed once.
  std::vector<std::string> id_list(JsonObject& l, const std::string& key) {
    std::vector<std::string> out;
    std::set<std::string> seen;
    const auto entries = l.string_array(key);
    for (std::size_t j = 0; j < entries.size(); ++j) {
      const std::string path = l.path_of(key) + "/" + std::to_string(j);
      for (const auto& id : expand_ids(entries[j], l.file(), path)) {
        known(l, id, path);
        if (!seen.insert(id).second)
          throw ConfigError(l.file(), path, "vertex \"" + id + "\" is listed twice");
        out.push_back(id);
      }
    }
    return out;
  }

  void known(const JsonObject& l, const std::string& id, const std::string& path) const {
    if (vertex_path_.count(id) == 0)
      throw ConfigError(l.file(), path, "unknown vertex \"" + id + "\" (not in /node/vertices)");
  }

  Topology& topo_;
  std::map<std::string, std::string> vertex_path_;                        // id -> where defined
  std::map<std::pair<std::string, std::string>, std::string> link_path_;  // sorted ends -> where
};

void check_vertex_kinds(const Topology& topo) {
  std::size_t gateways = 0;
  std::size_t accelerators = 0;
  for (const auto& v : topo.vertices) {
    gateways += v.kind == VertexKind::gateway ? 1 : 0;
    accelerators += v.kind == VertexKind::accelerator ? 1 : 0;
  }
  if (gateways != 1)
    throw ConfigError(topo.file, "/node/vertices",
                      "expected exactly one vertex of kind \"gateway\" (where the node meets the "
                      "fabric), found " +
                          std::to_string(gateways));
  if (accelerators == 0)
    throw ConfigError(topo.file, "/node/vertices",
                      "expected at least one vertex of kind \"accelerator\"");
}

void check_connected(const Topology& topo) {
  const auto unreachable = NodeGraph(topo).unreachable_from_first();
  if (unreachable.empty()) return;
  std::string list;
  for (const auto& id : unreachable) list += (list.empty() ? "\"" : ", \"") + id + "\"";
  throw ConfigError(topo.file, "/node/links",
                    "the node graph is not connected: no path from \"" + topo.vertices.front().id +
                        "\" to " + list);
}

AcceleratorRef read_accelerator(JsonObject acc, const std::string& topology_file) {
  AcceleratorRef ref;
  ref.device_file = relative_to(topology_file, required_text(acc, "device"));
  ref.memory = acc.quantity("memory", Dimension::bytes);
  ref.source = required_text(acc, "source");
  acc.finish();
  return ref;
}

Fabric read_fabric(JsonObject f) {
  Fabric fabric;
  fabric.kind = f.choice("kind", {"non_blocking_star"});
  fabric.uplink_bandwidth = f.quantity("uplink_bandwidth", Dimension::bandwidth);
  fabric.latency = f.non_negative_quantity("latency", Dimension::seconds);
  fabric.source = required_text(f, "source");
  f.finish();
  return fabric;
}

}  // namespace

Topology load_topology(const std::string& path) {
  const nlohmann::json doc = read_json_file(path);
  JsonObject root = root_object(doc, path);
  Topology topo;
  topo.file = path;

  const long version = root.positive_integer("schema_version");
  if (version != kSchemaVersion)
    root.fail("schema_version", "unsupported schema_version " + std::to_string(version) +
                                    "; this simulator reads " + std::to_string(kSchemaVersion));
  topo.schema_version = kSchemaVersion;
  topo.name = required_text(root, "name");
  topo.description = root.string_or("description", "");
  topo.accelerator = read_accelerator(root.object("accelerator"), path);
  const std::string calibration = root.string_or("collective_calibration", "");
  if (!calibration.empty()) topo.calibration_file = relative_to(path, calibration);

  JsonObject node = root.object("node");
  NodeReader reader(topo);
  reader.read_vertices(node);
  reader.read_links(node);
  node.finish();

  topo.fabric = read_fabric(root.object("fabric"));
  if (root.has("host")) topo.host = read_host_resources(root.object("host"));
  else root.allow("host");
  root.finish();

  check_vertex_kinds(topo);
  check_connected(topo);
  return topo;
}

std::vector<std::string> Topology::accelerators() const {
  std::vector<std::string> ids;
  for (const auto& v : vertices)
    if (v.kind == VertexKind::accelerator) ids.push_back(v.id);
  return ids;
}

const Vertex* Topology::find_vertex(const std::string& id) const {
  for (const auto& v : vertices)
    if (v.id == id) return &v;
  return nullptr;
}

std::string Topology::gateway() const {
  for (const auto& v : vertices)
    if (v.kind == VertexKind::gateway) return v.id;
  TRAINSIM_CHECK(false, "topology " + name + " has no gateway vertex");
  return {};
}

const char* vertex_kind_name(VertexKind k) {
  switch (k) {
    case VertexKind::accelerator: return "accelerator";
    case VertexKind::switch_: return "switch";
    case VertexKind::cpu: return "cpu";
    case VertexKind::nic: return "nic";
    case VertexKind::gateway: return "gateway";
  }
  return "?";
}

}  // namespace trainsim::topology

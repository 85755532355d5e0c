#include "collective/collective_calibration.hpp"

#include <cmath>
#include <filesystem>

#include "collective/nccl_cost_model.hpp"
#include "collective/tuner_regions.hpp"
#include "core/json_reader.hpp"

namespace trainsim::collective {

const char* algorithm_name(Algorithm a) {
  switch (a) {
    case Algorithm::ring: return "ring";
    case Algorithm::direct: return "direct";
    case Algorithm::tree: return "tree";
    case Algorithm::nvls: return "nvls";
    case Algorithm::nvls_tree: return "nvls_tree";
    case Algorithm::pairwise: return "pairwise";
  }
  return "?";
}

const char* protocol_name(Protocol p) {
  switch (p) {
    case Protocol::ll: return "LL";
    case Protocol::ll128: return "LL128";
    case Protocol::simple: return "Simple";
  }
  return "?";
}

std::optional<Algorithm> parse_algorithm(const std::string& name) {
  for (Algorithm a : {Algorithm::ring, Algorithm::tree, Algorithm::nvls, Algorithm::nvls_tree,
                      Algorithm::pairwise})
    if (name == algorithm_name(a)) return a;
  return std::nullopt;
}

std::optional<Protocol> parse_protocol(const std::string& name) {
  for (Protocol p : kProtocols)
    if (name == protocol_name(p)) return p;
  return std::nullopt;
}

bool FabricLevel::allows(Algorithm a) const {
  for (Algorithm x : algorithms)
    if (x == a) return true;
  return false;
}

bool FabricLevel::allows(Protocol p) const {
  for (Protocol x : protocols)
    if (x == p) return true;
  return false;
}

double FabricLevel::efficiency(Algorithm a) const {
  switch (a) {
    case Algorithm::tree: return tree_efficiency;
    case Algorithm::nvls: return nvls_efficiency;
    case Algorithm::nvls_tree: return 0;  // per level: nvls inside the node, tree across
    default: return ring_efficiency;  // ring, pairwise and point-to-point share the link path
  }
}

namespace {

double fraction(JsonObject& o, const std::string& key) {
  const double v = o.number(key);
  if (v <= 0 || v > 1) o.fail(key, "expected a value in (0, 1]");
  return v;
}

void require_source(JsonObject& o) {
  o.require_source();
  o.allow("note");
}

LevelCalibration read_level(JsonObject o) {
  LevelCalibration l;
  l.algorithm = o.choice("algorithm", {"ring", "direct"}) == "ring" ? Algorithm::ring
                                                                   : Algorithm::direct;
  l.step_latency = o.non_negative_quantity("step_latency", Dimension::seconds);
  l.bandwidth_efficiency = fraction(o, "bandwidth_efficiency");
  require_source(o);
  o.finish();
  return l;
}

/// "fitted": [{"parameter", "rows", "method"}] -> text lines and row keys.
void read_fitted(JsonObject& root, const std::string& prefix, CollectiveCalibration& c) {
  if (!root.has("fitted")) return;
  for (auto& f : root.object_array("fitted")) {
    std::string line = prefix + f.string("parameter") + " fitted to";
    for (const auto& r : f.string_array("rows")) {
      line += " " + r;
      c.fitted_rows.push_back(r);
    }
    line += " (" + f.string("method") + ")";
    f.finish();
    c.fitted.push_back(line);
  }
}

std::string beside(const std::string& file, const std::string& name) {
  const auto p = std::filesystem::path(name);
  if (p.is_absolute()) return name;
  return (std::filesystem::path(file).parent_path() / p).lexically_normal().string();
}

void read_protocols(const std::string& path, CollectiveCalibration& c) {
  const auto doc = read_json_file(path);
  JsonObject root = root_object(doc, path);
  root.require_schema_version(1);
  root.require_kind("nccl_protocols");
  root.allow("description");
  for (Protocol p : kProtocols) {
    JsonObject o = root.object(protocol_name(p));
    ProtocolParams& pp = c.protocols[static_cast<std::size_t>(p)];
    pp.bandwidth_fraction = fraction(o, "bandwidth_fraction");
    pp.base_latency = o.non_negative_quantity("base_latency", Dimension::seconds);
    pp.chunk = o.quantity_or("chunk", Dimension::bytes, 0);
    require_source(o);
    o.finish();
  }
  root.finish();
}

FabricLevel read_fabric(const std::string& path, CollectiveCalibration& c) {
  const auto doc = read_json_file(path);
  JsonObject root = root_object(doc, path);
  root.require_schema_version(1);
  root.require_kind("nccl_fabric");
  FabricLevel f;
  f.file = path;
  f.name = root.string("name");
  root.allow("description");
  root.allow("protocols_source");
  root.allow("algorithms_source");
  for (const auto& a : root.string_array("algorithms")) {
    if (a == "ring") f.algorithms.push_back(Algorithm::ring);
    else if (a == "tree") f.algorithms.push_back(Algorithm::tree);
    else if (a == "nvls") f.algorithms.push_back(Algorithm::nvls);
    else root.fail("algorithms", "unknown algorithm \"" + a + "\"; expected ring, tree or nvls");
  }
  if (root.has("protocols")) {
    for (const auto& name : root.string_array("protocols")) {
      bool known = false;
      for (Protocol p : kProtocols)
        if (name == protocol_name(p)) {
          f.protocols.push_back(p);
          known = true;
        }
      if (!known) root.fail("protocols", "unknown protocol \"" + name + "\"; expected LL, LL128 or Simple");
    }
    if (!f.allows(Protocol::simple)) root.fail("protocols", "Simple must be allowed");
  } else {
    f.protocols.assign(kProtocols.begin(), kProtocols.end());
  }
  {
    JsonObject e = root.object("efficiency");
    f.ring_efficiency = fraction(e, "ring");
    if (e.has("tree")) f.tree_efficiency = fraction(e, "tree");
    if (e.has("nvls")) f.nvls_efficiency = fraction(e, "nvls");
    require_source(e);
    e.finish();
    for (Algorithm a : f.algorithms)
      if (f.efficiency(a) <= 0)
        root.fail("efficiency", std::string("no efficiency for allowed algorithm ") +
                                    algorithm_name(a));
  }
  {
    JsonObject s = root.object("step_latency");
    for (Protocol p : kProtocols)
      f.step_latency[static_cast<std::size_t>(p)] =
          s.non_negative_quantity(protocol_name(p), Dimension::seconds);
    require_source(s);
    s.finish();
  }
  // {"value": "512KiB", "source": ...}; the tree's and LL128's chunks default to Simple's.
  auto chunk = [&](const std::string& key) {
    JsonObject s = root.object(key);
    const Bytes v = s.quantity("value", Dimension::bytes);
    require_source(s);
    s.finish();
    return v;
  };
  f.simple_chunk = chunk("simple_chunk");
  f.tree_chunk = root.has("tree_chunk") ? chunk("tree_chunk") : f.simple_chunk;
  f.ll128_chunk = root.has("ll128_chunk") ? chunk("ll128_chunk") : f.simple_chunk;
  if (root.has("channel_rate_limit")) {
    JsonObject s = root.object("channel_rate_limit");
    f.channel_rate_limit = s.quantity("value", Dimension::bandwidth);
    if (f.channel_rate_limit <= 0) s.fail("value", "expected a positive rate");
    require_source(s);
    s.finish();
    // Only ring and point-to-point channels are mapped to flows (nccl_tuner.cpp); a tree's
    // lanes are not NCCL's channels.
    if (f.allows(Algorithm::tree) || f.allows(Algorithm::nvls))
      root.fail("channel_rate_limit", "a per-channel limit is modelled for ring only; remove tree/nvls");
  }
  if (root.has("ll128_efficiency")) {
    JsonObject s = root.object("ll128_efficiency");
    f.ll128_efficiency = fraction(s, "value");
    require_source(s);
    s.finish();
  }
  if (f.allows(Algorithm::nvls)) {
    JsonObject s = root.object("nvls_latency");
    f.nvls_latency = s.non_negative_quantity("value", Dimension::seconds);
    require_source(s);
    s.finish();
  }
  read_fitted(root, std::filesystem::path(path).filename().string() + " ", c);
  root.finish();
  return f;
}

KernelChannels read_channels(JsonObject o) {
  KernelChannels k;
  auto count = [&](const std::string& key) {
    if (!o.has(key)) return 0;
    const double v = o.number(key);
    if (v < 1 || v > 64 || v != std::floor(v)) o.fail(key, "expected a whole number of channels in [1, 64]");
    return static_cast<int>(v);
  };
  k.one_node = count("one_node");
  k.multi_node = count("multi_node");
  k.net_peer = count("net_peer");
  k.multi_node_per_accelerator = count("multi_node_per_accelerator");
  k.nvls = count("nvls");
  require_source(o);
  o.finish();
  return k;
}

}  // namespace

CollectiveCalibration load_collective_calibration(const std::string& path) {
  const auto doc = read_json_file(path);
  JsonObject root = root_object(doc, path);
  CollectiveCalibration c;
  c.file = path;
  const double version = root.number("schema_version");
  if (version != 1 && version != 2) root.fail("schema_version", "expected 1 or 2");
  c.schema_version = static_cast<int>(version);
  c.library = root.string("library");
  root.allow("description");
  if (c.schema_version == 1) {
    c.intra_node = read_level(root.object("intra_node"));
    c.inter_node = read_level(root.object("inter_node"));
    read_fitted(root, "", c);
  } else {
    read_protocols(beside(path, root.string("protocols")), c);
    c.intra_fabric = read_fabric(beside(path, root.string("intra_node")), c);
    c.inter_fabric = read_fabric(beside(path, root.string("inter_node")), c);
    if (root.has("inter_node_protocols")) {
      // The platform, not the wire, decides which protocols cross the network (aws-ofi-nccl
      // keeps LL/LL128 only where EFA delivers 128-byte writes in order).
      JsonObject o = root.object("inter_node_protocols");
      c.inter_fabric.protocols.clear();
      for (const auto& name : o.string_array("value")) {
        const auto p = parse_protocol(name);
        if (!p) o.fail("value", "unknown protocol \"" + name + "\"; expected LL, LL128 or Simple");
        c.inter_fabric.protocols.push_back(*p);
      }
      if (!c.inter_fabric.allows(Protocol::simple)) o.fail("value", "Simple must be allowed");
      require_source(o);
      o.finish();
    }
    if (root.has("tuner_plugin"))
      c.tuner_regions = std::make_shared<const TunerRegions>(
          load_tuner_regions(beside(path, root.string("tuner_plugin"))));
    if (root.has("nccl_cost_model"))
      c.nccl_cost_model = std::make_shared<const NcclCostModel>(
          load_nccl_cost_model(beside(path, root.string("nccl_cost_model"))));
    if (!c.intra_fabric.allows(Algorithm::ring))
      root.fail("intra_node", "the intra-node fabric must allow ring");
    if (!c.inter_fabric.allows(Algorithm::ring))
      root.fail("inter_node", "the inter-node fabric must allow ring");
    if (root.has("channels")) c.channels = read_channels(root.object("channels"));
    if (c.intra_fabric.channel_rate_limit > 0)
      root.fail("intra_node", "channel_rate_limit is modelled across nodes only");
    // The cap is per NCCL channel: the channels a call runs must be known.
    if (c.inter_fabric.channel_rate_limit > 0 &&
        (c.channels.multi_node <= 0 || c.channels.net_peer <= 0))
      root.fail("channels", "the inter-node fabric's channel_rate_limit needs multi_node and net_peer");
    if (root.has("partial_node_ring_nics"))
      c.partial_node_ring_nic = read_partial_node_ring_nics(root.object("partial_node_ring_nics"));
  }
  root.finish();
  return c;
}

}  // namespace trainsim::collective

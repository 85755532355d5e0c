// Topology loading, validation and routing. Runs from the repository root (it reads
// topologies/*.json and tests/data/topology/*.json). Error tests mutate a copy of
// tests/data/topology/minimal.json, write it to a temporary file and check the JSON path that
// the ConfigError names.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/json_reader.hpp"
#include "topology/topology.hpp"
#include "topology/topology_graph.hpp"

namespace trainsim::topology {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kData = "tests/data/topology/";

json minimal() { return read_json_file(kData + "minimal.json"); }

json with(json doc, const std::string& pointer, const json& value) {
  doc[json::json_pointer(pointer)] = value;
  return doc;
}

json without(json doc, const std::string& pointer) {
  const json::json_pointer p(pointer);
  json& parent = doc[p.parent_pointer()];
  if (parent.is_array())
    parent.erase(std::stoul(p.back()));
  else
    parent.erase(p.back());
  return doc;
}

json with_vertex(json doc, const json& vertex) {
  doc["node"]["vertices"].push_back(vertex);
  return doc;
}

json with_link(json doc, const json& link) {
  doc["node"]["links"].push_back(link);
  return doc;
}

// Each written document gets its own file, named after the test, so a failure can be inspected.
std::string write_temp(const json& doc) {
  static int counter = 0;
  const fs::path dir = fs::path(::testing::TempDir()) / "trainsim_topology_test";
  fs::create_directories(dir);
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const fs::path file = dir / (std::string(info->test_suite_name()) + "." + info->name() + "_" +
                               std::to_string(counter++) + ".json");
  std::ofstream(file) << doc.dump(2);
  return file.string();
}

Topology load_doc(const json& doc) { return load_topology(write_temp(doc)); }

struct Failure {
  std::string json_path;
  std::string message;
};

Failure failure_of_file(const std::string& file) {
  try {
    (void)load_topology(file);
  } catch (const ConfigError& e) {
    return {e.json_path(), e.what()};
  }
  ADD_FAILURE() << file << " loaded, expected a ConfigError";
  return {"<no error>", ""};
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The error names `path` (both as json_path() and in the message) and says `words`.
void expect_rejected(const json& doc, const std::string& path, const std::string& words) {
  const Failure f = failure_of_file(write_temp(doc));
  EXPECT_EQ(f.json_path, path) << f.message;
  EXPECT_TRUE(contains(f.message, "at " + path + ":")) << f.message;
  EXPECT_TRUE(contains(f.message, words)) << "expected \"" << words << "\" in: " << f.message;
}

std::vector<std::string> vertices_on(const Topology& topo, const std::vector<Hop>& route,
                                     const std::string& from) {
  std::vector<std::string> path{from};
  for (const Hop& h : route) {
    const Link& l = topo.links[h.link_index];
    path.push_back(h.forward ? l.b : l.a);
  }
  return path;
}

using Ids = std::vector<std::string>;

// ---- The shipped topologies ----------------------------------------------------------------

TEST(ShippedTopology, Dl1Loads) {
  const Topology t = load_topology("topologies/dl1.24xlarge.json");
  EXPECT_EQ(t.name, "dl1.24xlarge");
  EXPECT_EQ(t.accelerators(),
            (Ids{"hpu0", "hpu1", "hpu2", "hpu3", "hpu4", "hpu5", "hpu6", "hpu7"}));
  EXPECT_EQ(t.vertices.size(), 18u);  // 8 hpu + 4 pcie switches + cpu + 4 efa + uplink
  // 28 mesh pairs (8*7/2) + 8 hpu-switch + 4 switch-cpu + 4 efa-switch + 4 efa-uplink
  EXPECT_EQ(t.links.size(), 48u);
  EXPECT_EQ(t.gateway(), "uplink");
  EXPECT_EQ(t.accelerator.device_file, "topologies/devices/gaudi1.json");
  EXPECT_EQ(t.calibration_file, "topologies/calibration/dl1-hccl.json");
  EXPECT_DOUBLE_EQ(t.accelerator.memory, 32.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(t.fabric.uplink_bandwidth, 400e9 / 8);
  EXPECT_DOUBLE_EQ(t.fabric.latency, 10e-6);
  for (const Link& l : t.links) EXPECT_FALSE(l.source.empty()) << l.id;
}

TEST(ShippedTopology, Dl1RoutesUseTheRoceMeshAndTheLocalEfa) {
  const Topology t = load_topology("topologies/dl1.24xlarge.json");
  const NodeGraph g(t);
  EXPECT_TRUE(g.connected());
  const auto direct = g.route("hpu0", "hpu5");
  ASSERT_EQ(direct.size(), 1u);
  EXPECT_EQ(t.links[direct[0].link_index].id, "hpu0--hpu5");
  EXPECT_TRUE(direct[0].forward);
  EXPECT_DOUBLE_EQ(g.route_bandwidth("hpu0", "hpu5"), 100e9 / 8);

  const auto back = g.route("hpu5", "hpu0");
  ASSERT_EQ(back.size(), 1u);
  EXPECT_FALSE(back[0].forward);

  EXPECT_EQ(vertices_on(t, g.route("hpu0", "uplink"), "hpu0"),
            (Ids{"hpu0", "pcie_switch0", "efa0", "uplink"}));
  EXPECT_EQ(vertices_on(t, g.route("hpu7", "uplink"), "hpu7"),
            (Ids{"hpu7", "pcie_switch3", "efa3", "uplink"}));
  // 2us (PCIe) + 2us (PCIe) + 1us (EFA port); the 100 Gbps EFA port is the narrowest.
  EXPECT_NEAR(g.route_latency("hpu0", "uplink"), 5e-6, 1e-15);
  EXPECT_DOUBLE_EQ(g.route_bandwidth("hpu0", "uplink"), 100e9 / 8);
}

TEST(ShippedTopology, P4dLoads) {
  const Topology t = load_topology("topologies/p4d.24xlarge.json");
  EXPECT_EQ(t.name, "p4d.24xlarge");
  EXPECT_EQ(t.accelerators(),
            (Ids{"gpu0", "gpu1", "gpu2", "gpu3", "gpu4", "gpu5", "gpu6", "gpu7"}));
  EXPECT_EQ(t.vertices.size(), 19u);  // 8 gpu + nvswitch + 4 pcie switches + cpu + 4 efa + uplink
  // 8 nvswitch + 8 gpu-switch + 4 switch-cpu + 4 efa-switch + 4 efa-uplink
  EXPECT_EQ(t.links.size(), 28u);
  EXPECT_EQ(t.gateway(), "uplink");
  EXPECT_EQ(t.accelerator.device_file, "topologies/devices/a100-40gb.json");
  EXPECT_EQ(t.calibration_file, "topologies/calibration/p4d-nccl.json");
  EXPECT_EQ(t.find_vertex("nvswitch")->kind, VertexKind::switch_);
  for (const Link& l : t.links) EXPECT_FALSE(l.source.empty()) << l.id;
}

TEST(ShippedTopology, P4dRoutesCrossTheNvswitch) {
  const Topology t = load_topology("topologies/p4d.24xlarge.json");
  const NodeGraph g(t);
  EXPECT_EQ(vertices_on(t, g.route("gpu0", "gpu5"), "gpu0"), (Ids{"gpu0", "nvswitch", "gpu5"}));
  EXPECT_DOUBLE_EQ(g.route_bandwidth("gpu0", "gpu5"), 300e9);
  // gpu0 and gpu1 also meet at pcie_switch0 in 2 hops, but NVSwitch latency is lower (1+1 us
  // against 2+2 us), so the tie on hop count goes to the NVSwitch.
  EXPECT_EQ(vertices_on(t, g.route("gpu0", "gpu1"), "gpu0"), (Ids{"gpu0", "nvswitch", "gpu1"}));
  EXPECT_EQ(vertices_on(t, g.route("gpu4", "uplink"), "gpu4"),
            (Ids{"gpu4", "pcie_switch2", "efa2", "uplink"}));
}

TEST(ShippedTopology, DgxA100ReachesAnotherHcaOverPcieOnly) {
  const Topology t = load_topology("topologies/dgx-a100-80g-ib.json");
  const NodeGraph g(t);
  // Each GPU's own route to the fabric keeps its one-link HCA (2 hops; through the switch, 3).
  for (int k = 0; k < 8; ++k) {
    const std::string gpu = "gpu" + std::to_string(k), hca = "hca" + std::to_string(k);
    EXPECT_EQ(vertices_on(t, g.route(gpu, "uplink"), gpu), (Ids{gpu, hca, "uplink"}));
  }
  // A sibling's HCA: across their PCIe switch, not through the sibling (NVLink, 3 hops) nor
  // through the gateway and its own HCA (gpu1, hca1, uplink, hca0: 3 hops too).
  EXPECT_EQ(vertices_on(t, g.route_through_switches("gpu1", "hca0"), "gpu1"),
            (Ids{"gpu1", "pcie_switch0", "hca0"}));
  // Another switch's HCA: up to the CPU and down (NCCL's SYS path).
  EXPECT_EQ(vertices_on(t, g.route_through_switches("gpu0", "hca2"), "gpu0"),
            (Ids{"gpu0", "pcie_switch0", "cpu", "pcie_switch1", "hca2"}));
  // The shortest route of all goes through gpu2 over NVLink, which 2.8.3 does not relay.
  EXPECT_EQ(vertices_on(t, g.route("gpu0", "hca2"), "gpu0"), (Ids{"gpu0", "nvswitch", "gpu2", "hca2"}));
  EXPECT_TRUE(g.route_through_switches("gpu0", "gpu0").empty());
}

// ---- Loading ---------------------------------------------------------------------------------

TEST(TopologyLoader, MinimalFixture) {
  const std::string file = kData + "minimal.json";
  const Topology t = load_topology(file);
  EXPECT_EQ(t.file, file);
  EXPECT_EQ(t.schema_version, 1);
  EXPECT_FALSE(t.description.empty());
  EXPECT_EQ(t.accelerators(), (Ids{"acc0", "acc1"}));
  EXPECT_EQ(t.accelerator.device_file, kData + "devices/test-device.json");
  EXPECT_EQ(t.calibration_file, kData + "calibration/test.json");
  EXPECT_DOUBLE_EQ(t.accelerator.memory, 16e9);
  ASSERT_EQ(t.links.size(), 4u);
  EXPECT_EQ(t.links[0].id, "sw--acc0");  // star links run from the center to each leaf
  EXPECT_EQ(t.links[1].id, "sw--acc1");
  EXPECT_EQ(t.links[2].id, "nic0--sw");
  EXPECT_EQ(t.links[0].sharing, Sharing::split_duplex);  // the default
  EXPECT_EQ(t.links[2].sharing, Sharing::shared);
  EXPECT_DOUBLE_EQ(t.links[0].bandwidth, 50e9);
  EXPECT_DOUBLE_EQ(t.links[2].latency, 2e-6);
  EXPECT_DOUBLE_EQ(t.links[3].latency, 0.0);  // "0us" is a valid latency
  EXPECT_EQ(t.fabric.kind, "non_blocking_star");
  EXPECT_EQ(t.find_vertex("nope"), nullptr);
  EXPECT_EQ(t.find_vertex("gw")->kind, VertexKind::gateway);
}

TEST(TopologyLoader, OptionalKeysMayBeLeftOut) {
  const Topology t =
      load_doc(without(without(minimal(), "/description"), "/collective_calibration"));
  EXPECT_EQ(t.description, "");
  EXPECT_EQ(t.calibration_file, "");
}

TEST(TopologyLoader, RangesExpandInclusiveAndKeepFileOrder) {
  json doc = with_vertex(minimal(), {{"id", "r{2..4}_x"}, {"kind", "accelerator"}});
  doc = with_link(doc, {{"full_mesh", json::array({"r{2..4}_x", "sw"})},
                        {"bandwidth", "1GB/s"},
                        {"latency", "1us"},
                        {"source", "test"}});
  const Topology t = load_doc(doc);
  EXPECT_EQ(t.accelerators(), (Ids{"acc0", "acc1", "r2_x", "r3_x", "r4_x"}));
  ASSERT_EQ(t.links.size(), 4u + 6u);  // 4 members in the mesh: 4*3/2 pairs
  EXPECT_EQ(t.links[4].id, "r2_x--r3_x");
  EXPECT_EQ(t.links[9].id, "r4_x--sw");
}

TEST(TopologyLoader, SingleValueRange) {
  json doc = with(minimal(), "/node/vertices/0/id", "acc{0..0}");
  doc = with(doc, "/node/links/0/leaves", json::array({"acc{0..0}"}));
  const Topology t = load_doc(doc);
  EXPECT_EQ(t.accelerators(), (Ids{"acc0"}));
}

// ---- Validation errors ----------------------------------------------------------------------

TEST(TopologyErrors, MalformedJson) {
  const Failure f = failure_of_file(kData + "malformed.json");
  EXPECT_TRUE(contains(f.message, "malformed JSON")) << f.message;
  EXPECT_TRUE(contains(f.message, "malformed.json")) << f.message;
}

TEST(TopologyErrors, MissingFile) {
  EXPECT_TRUE(contains(failure_of_file(kData + "no-such-file.json").message, "cannot open"));
}

TEST(TopologyErrors, SchemaVersion) {
  expect_rejected(with(minimal(), "/schema_version", 2), "/schema_version", "unsupported");
  expect_rejected(with(minimal(), "/schema_version", "1"), "/schema_version", "integer");
  expect_rejected(without(minimal(), "/schema_version"), "/schema_version", "missing");
}

TEST(TopologyErrors, UnknownKeys) {
  expect_rejected(with(minimal(), "/colour", "blue"), "/colour", "unknown key");
  expect_rejected(with(minimal(), "/accelerator/count", 8), "/accelerator/count", "unknown key");
  expect_rejected(with(minimal(), "/node/switches", json::array()), "/node/switches",
                  "unknown key");
  expect_rejected(with(minimal(), "/node/vertices/2/notes", "x"), "/node/vertices/2/notes",
                  "unknown key");
  expect_rejected(with(minimal(), "/node/links/1/bandwith", "1GB/s"), "/node/links/1/bandwith",
                  "unknown key");
  expect_rejected(with(minimal(), "/fabric/oversubscription", 2), "/fabric/oversubscription",
                  "unknown key");
}

TEST(TopologyErrors, MissingKeys) {
  expect_rejected(without(minimal(), "/name"), "/name", "missing");
  expect_rejected(without(minimal(), "/accelerator/memory"), "/accelerator/memory", "missing");
  expect_rejected(without(minimal(), "/node/links"), "/node/links", "missing");
  expect_rejected(without(minimal(), "/node/vertices/1/kind"), "/node/vertices/1/kind", "missing");
  expect_rejected(without(minimal(), "/node/links/0/source"), "/node/links/0/source", "missing");
  expect_rejected(without(minimal(), "/fabric/latency"), "/fabric/latency", "missing");
  expect_rejected(without(minimal(), "/fabric"), "/fabric", "missing");
}

TEST(TopologyErrors, BadUnits) {
  expect_rejected(with(minimal(), "/node/links/1/bandwidth", "16GB"), "/node/links/1/bandwidth",
                  "bad unit");
  expect_rejected(with(minimal(), "/node/links/1/bandwidth", 16e9), "/node/links/1/bandwidth",
                  "with its unit");
  expect_rejected(with(minimal(), "/node/links/0/latency", "1 furlong"), "/node/links/0/latency",
                  "bad unit");
  expect_rejected(with(minimal(), "/accelerator/memory", "16GB/s"), "/accelerator/memory",
                  "bad unit");
  expect_rejected(with(minimal(), "/fabric/uplink_bandwidth", "fast"), "/fabric/uplink_bandwidth",
                  "bad unit");
}

TEST(TopologyErrors, BandwidthMustBePositive) {
  expect_rejected(with(minimal(), "/node/links/2/bandwidth", "0Gbps"), "/node/links/2/bandwidth",
                  "positive");
  expect_rejected(with(minimal(), "/node/links/2/bandwidth", "-5GB/s"), "/node/links/2/bandwidth",
                  "positive");
  expect_rejected(with(minimal(), "/fabric/uplink_bandwidth", "0Gbps"), "/fabric/uplink_bandwidth",
                  "positive");
}

TEST(TopologyErrors, LatencyMustNotBeNegative) {
  expect_rejected(with(minimal(), "/node/links/0/latency", "-1us"), "/node/links/0/latency",
                  "non-negative");
  expect_rejected(with(minimal(), "/fabric/latency", "-1us"), "/fabric/latency", "non-negative");
}

TEST(TopologyErrors, UnknownVertexReference) {
  expect_rejected(with(minimal(), "/node/links/1/between/1", "nope"), "/node/links/1/between/1",
                  "unknown vertex \"nope\"");
  expect_rejected(with(minimal(), "/node/links/0/star", "hub"), "/node/links/0/star",
                  "unknown vertex \"hub\"");
  // acc{0..2} expands to acc2, which does not exist.
  expect_rejected(with(minimal(), "/node/links/0/leaves/0", "acc{0..2}"), "/node/links/0/leaves/0",
                  "unknown vertex \"acc2\"");
}

TEST(TopologyErrors, DuplicateVertexId) {
  expect_rejected(with_vertex(minimal(), {{"id", "sw"}, {"kind", "switch"}}), "/node/vertices/4/id",
                  "duplicate vertex id \"sw\"");
  // A range that overlaps an earlier one.
  expect_rejected(with_vertex(minimal(), {{"id", "acc{1..2}"}, {"kind", "accelerator"}}),
                  "/node/vertices/4/id", "duplicate vertex id \"acc1\"");
}

TEST(TopologyErrors, BadVertexIdOrRange) {
  expect_rejected(with(minimal(), "/node/vertices/0/id", "acc{3..1}"), "/node/vertices/0/id",
                  "first bound is larger");
  expect_rejected(with(minimal(), "/node/vertices/0/id", "acc{0..}"), "/node/vertices/0/id",
                  "non-negative integers");
  expect_rejected(with(minimal(), "/node/vertices/0/id", "acc{0-1}"), "/node/vertices/0/id",
                  "{first..last}");
  expect_rejected(with(minimal(), "/node/vertices/2/id", "nic--0"), "/node/vertices/2/id",
                  "letters, digits");
  expect_rejected(with(minimal(), "/node/vertices/2/id", ""), "/node/vertices/2/id",
                  "letters, digits");
}

TEST(TopologyErrors, BadKind) {
  expect_rejected(with(minimal(), "/node/vertices/1/kind", "router"), "/node/vertices/1/kind",
                  "unknown value \"router\"");
}

TEST(TopologyErrors, ExactlyOneGateway) {
  expect_rejected(with(minimal(), "/node/vertices/3/kind", "nic"), "/node/vertices",
                  "exactly one vertex of kind \"gateway\"");
  expect_rejected(with(minimal(), "/node/vertices/2/kind", "gateway"), "/node/vertices", "found 2");
}

TEST(TopologyErrors, AtLeastOneAccelerator) {
  expect_rejected(with(minimal(), "/node/vertices/0/kind", "cpu"), "/node/vertices",
                  "at least one vertex of kind \"accelerator\"");
}

TEST(TopologyErrors, DisconnectedNodeGraph) {
  const Failure f = failure_of_file(kData + "disconnected.json");
  EXPECT_EQ(f.json_path, "/node/links");
  EXPECT_TRUE(contains(f.message, "at /node/links:")) << f.message;
  EXPECT_TRUE(contains(f.message, "not connected")) << f.message;
  EXPECT_TRUE(contains(f.message, "\"acc2\", \"acc3\"")) << f.message;
  // Dropping the NIC's link to the gateway strands the gateway.
  expect_rejected(without(minimal(), "/node/links/2"), "/node/links", "\"gw\"");
}

TEST(TopologyErrors, LinkNeedsExactlyOneForm) {
  expect_rejected(without(minimal(), "/node/links/1/between"), "/node/links/1", "exactly one of");
  expect_rejected(with(minimal(), "/node/links/1/full_mesh", json::array({"acc0", "acc1"})),
                  "/node/links/1", "exactly one of");
  expect_rejected(with(minimal(), "/node/links/1/leaves", json::array({"acc0"})),
                  "/node/links/1/leaves", "belongs to a \"star\"");
  expect_rejected(without(minimal(), "/node/links/0/leaves"), "/node/links/0/leaves", "missing");
}

TEST(TopologyErrors, MalformedLinkEnds) {
  expect_rejected(with(minimal(), "/node/links/1/between", json::array({"nic0", "sw", "gw"})),
                  "/node/links/1/between", "exactly two");
  expect_rejected(with(minimal(), "/node/links/1/between", json::array({"sw", "sw"})),
                  "/node/links/1/between", "two different vertices");
  expect_rejected(with(minimal(), "/node/links/0/leaves", json::array({"acc0", "sw"})),
                  "/node/links/0/leaves", "also a leaf");
  expect_rejected(with(minimal(), "/node/links/0/leaves", json::array({"acc0", "acc{0..1}"})),
                  "/node/links/0/leaves/1", "listed twice");
  expect_rejected(with(minimal(), "/node/links/0/leaves", json::array()), "/node/links/0/leaves",
                  "at least one leaf");
}

TEST(TopologyErrors, DuplicateLink) {
  const json link = {{"between", json::array({"acc0", "sw"})},
                     {"bandwidth", "1GB/s"},
                     {"latency", "1us"},
                     {"source", "test"}};
  expect_rejected(with_link(minimal(), link), "/node/links/3/between",
                  "duplicate link between \"acc0\" and \"sw\" (first at /node/links/0)");
}

TEST(TopologyErrors, OtherBadValues) {
  expect_rejected(with(minimal(), "/node/links/0/source", ""), "/node/links/0/source",
                  "must not be empty");
  expect_rejected(with(minimal(), "/node/links/0/sharing", "half_duplex"), "/node/links/0/sharing",
                  "expected one of: split_duplex, shared");
  expect_rejected(with(minimal(), "/fabric/kind", "fat_tree"), "/fabric/kind", "non_blocking_star");
  expect_rejected(with(minimal(), "/node/vertices/0", "acc0"), "/node/vertices/0",
                  "expected an object");
}

// ---- Routes ----------------------------------------------------------------------------------

TEST(NodeGraphRoutes, EqualRoutesGoToTheLowestLinkIndices) {
  const Topology t = load_topology(kData + "diamond.json");
  const NodeGraph g(t);
  // Both ways round are 2 hops and 2us: links {0, 3} via right beat links {1, 2} via left.
  EXPECT_EQ(vertices_on(t, g.route("src", "dst"), "src"), (Ids{"src", "right", "dst"}));
  EXPECT_EQ(vertices_on(t, g.route("dst", "src"), "dst"), (Ids{"dst", "right", "src"}));
}

TEST(NodeGraphRoutes, LatencyBreaksHopTies) {
  const Topology t =
      load_doc(with(read_json_file(kData + "diamond.json"), "/node/links/0/latency", "1.5us"));
  const NodeGraph g(t);
  EXPECT_EQ(vertices_on(t, g.route("src", "dst"), "src"), (Ids{"src", "left", "dst"}));
  EXPECT_NEAR(g.route_latency("src", "dst"), 2e-6, 1e-15);
  EXPECT_DOUBLE_EQ(g.route_bandwidth("src", "dst"), 20e9);
}

TEST(NodeGraphRoutes, HopCountBeatsLatency) {
  const json slow_direct = {{"between", json::array({"src", "dst"})},
                            {"bandwidth", "1GB/s"},
                            {"latency", "50us"},
                            {"source", "test"}};
  const Topology t = load_doc(with_link(read_json_file(kData + "diamond.json"), slow_direct));
  const NodeGraph g(t);
  const auto r = g.route("src", "dst");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(t.links[r[0].link_index].id, "src--dst");
}

TEST(NodeGraphRoutes, SameVertexIsAnEmptyRoute) {
  const Topology t = load_topology(kData + "minimal.json");
  const NodeGraph g(t);
  EXPECT_TRUE(g.route("acc0", "acc0").empty());
  EXPECT_EQ(g.route_latency("acc0", "acc0"), 0.0);
  EXPECT_EQ(g.route_bandwidth("acc0", "acc0"), std::numeric_limits<double>::infinity());
}

TEST(NodeGraphRoutes, UnknownVertexIsAnInvariantError) {
  const Topology t = load_topology(kData + "minimal.json");
  const NodeGraph g(t);
  EXPECT_THROW((void)g.route("acc0", "nope"), InvariantError);
}

TEST(NodeGraphRoutes, DisconnectedGraphBuiltByHand) {
  Topology t;
  t.name = "by hand";
  t.vertices = {
      {"a", VertexKind::accelerator}, {"b", VertexKind::accelerator}, {"c", VertexKind::gateway}};
  t.links = {{"a--b", "a", "b", 1e9, 1e-6, Sharing::split_duplex, "test"}};
  const NodeGraph g(t);
  EXPECT_FALSE(g.connected());
  EXPECT_EQ(g.unreachable_from_first(), (Ids{"c"}));
  EXPECT_EQ(g.route("a", "b").size(), 1u);
  EXPECT_THROW((void)g.route("a", "c"), InvariantError);
}

// Every route is a chain of adjacent links, the reverse route crosses the same links backwards,
// and a second graph over a second load gives the very same routes.
void check_all_routes(const std::string& file) {
  const Topology t1 = load_topology(file);
  const Topology t2 = load_topology(file);
  const NodeGraph g1(t1);
  const NodeGraph g2(t2);
  for (const Vertex& from : t1.vertices) {
    for (const Vertex& to : t1.vertices) {
      const auto r = g1.route(from.id, to.id);
      const auto again = g2.route(from.id, to.id);
      ASSERT_EQ(r.size(), again.size()) << from.id << " -> " << to.id;
      const auto path = vertices_on(t1, r, from.id);
      EXPECT_EQ(path.back(), to.id);
      const auto back = g1.route(to.id, from.id);
      ASSERT_EQ(back.size(), r.size());
      for (std::size_t i = 0; i < r.size(); ++i) {
        const Link& l = t1.links[r[i].link_index];
        EXPECT_EQ(path[i], r[i].forward ? l.a : l.b);
        EXPECT_EQ(r[i].link_index, again[i].link_index);
        EXPECT_EQ(r[i].forward, again[i].forward);
        EXPECT_EQ(back[r.size() - 1 - i].link_index, r[i].link_index);
        EXPECT_EQ(back[r.size() - 1 - i].forward, !r[i].forward);
      }
    }
  }
}

TEST(NodeGraphRoutes, DeterministicChainedAndSymmetricDl1) {
  check_all_routes("topologies/dl1.24xlarge.json");
}

TEST(NodeGraphRoutes, DeterministicChainedAndSymmetricP4d) {
  check_all_routes("topologies/p4d.24xlarge.json");
}

TEST(TopologyNames, VertexKindNames) {
  EXPECT_STREQ(vertex_kind_name(VertexKind::accelerator), "accelerator");
  EXPECT_STREQ(vertex_kind_name(VertexKind::switch_), "switch");
  EXPECT_STREQ(vertex_kind_name(VertexKind::cpu), "cpu");
  EXPECT_STREQ(vertex_kind_name(VertexKind::nic), "nic");
  EXPECT_STREQ(vertex_kind_name(VertexKind::gateway), "gateway");
}

}  // namespace
}  // namespace trainsim::topology

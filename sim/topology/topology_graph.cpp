#include "topology/topology_graph.hpp"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/connected_components.hpp>
#include <boost/graph/dijkstra_shortest_paths.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <tuple>

#include "core/error.hpp"

namespace trainsim::topology {
namespace {

struct EdgeInfo {
  std::size_t link;         // index into Topology::links
  std::int64_t latency_ps;  // integer so that sums compare exactly, whatever the summation order
};

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS,
                                    boost::no_property, EdgeInfo>;

// The cost Dijkstra minimises, compared lexicographically: hop count, then latency, then the
// path's link indices in ascending order. The last key makes the route independent of the
// priority queue's order among equal paths, and, being direction-free, makes route(b, a) the
// reverse of route(a, b). Adding one edge to two paths of equal hop count keeps their order
// (inserting one value into two sorted sequences keeps their lexicographic order), so Dijkstra
// stays exact under this ordering.
struct PathCost {
  std::size_t hops = 0;
  std::int64_t latency_ps = 0;
  std::vector<std::size_t> sorted_links;  // the ordering key
  std::vector<std::size_t> links;         // the same links in path order, from the source
};

constexpr std::size_t kUnreached = std::numeric_limits<std::size_t>::max();

struct PathLess {
  bool operator()(const PathCost& x, const PathCost& y) const {
    return std::tie(x.hops, x.latency_ps, x.sorted_links) <
           std::tie(y.hops, y.latency_ps, y.sorted_links);
  }
};

struct PathExtend {
  PathCost operator()(PathCost d, const EdgeInfo& e) const {
    if (d.hops == kUnreached) return d;
    d.hops += 1;
    d.latency_ps += e.latency_ps;
    d.sorted_links.insert(std::upper_bound(d.sorted_links.begin(), d.sorted_links.end(), e.link),
                          e.link);
    d.links.push_back(e.link);
    return d;
  }
};

std::int64_t to_picoseconds(Seconds s) { return static_cast<std::int64_t>(std::llround(s * 1e12)); }

std::vector<Hop> hops_from(const Topology& topo, std::size_t from, const PathCost& cost) {
  std::vector<Hop> route;
  std::string at = topo.vertices[from].id;
  for (std::size_t l : cost.links) {
    const Link& link = topo.links[l];
    const bool forward = link.a == at;
    route.push_back(Hop{l, forward});
    at = forward ? link.b : link.a;
  }
  return route;
}

}  // namespace

NodeGraph::NodeGraph(const Topology& topo) : topo_(topo) {
  const std::size_t n = topo.vertices.size();
  for (std::size_t i = 0; i < n; ++i) index_.emplace(topo.vertices[i].id, i);

  Graph g(n);
  for (std::size_t l = 0; l < topo.links.size(); ++l) {
    const Link& link = topo.links[l];
    boost::add_edge(index_of(link.a), index_of(link.b), EdgeInfo{l, to_picoseconds(link.latency)},
                    g);
  }

  component_.assign(n, 0);
  if (n > 0) boost::connected_components(g, component_.data());

  PathCost unreached;
  unreached.hops = kUnreached;
  routes_.assign(n, std::vector<std::vector<Hop>>(n));
  std::vector<PathCost> cost(n);
  for (std::size_t from = 0; from < n; ++from) {
    boost::dijkstra_shortest_paths(g, from,
                                   boost::distance_map(cost.data())
                                       .weight_map(boost::get(boost::edge_bundle, g))
                                       .distance_compare(PathLess{})
                                       .distance_combine(PathExtend{})
                                       .distance_inf(unreached)
                                       .distance_zero(PathCost{}));
    for (std::size_t to = 0; to < n; ++to)
      if (cost[to].hops != kUnreached) routes_[from][to] = hops_from(topo, from, cost[to]);
  }
}

std::size_t NodeGraph::index_of(const std::string& id) const {
  const auto it = index_.find(id);
  TRAINSIM_CHECK(it != index_.end(), "unknown vertex \"" + id + "\" in topology " + topo_.name);
  return it->second;
}

bool NodeGraph::connected() const { return unreachable_from_first().empty(); }

std::vector<std::string> NodeGraph::unreachable_from_first() const {
  std::vector<std::string> out;
  for (std::size_t i = 1; i < component_.size(); ++i)
    if (component_[i] != component_[0]) out.push_back(topo_.vertices[i].id);
  return out;
}

std::vector<Hop> NodeGraph::route(const std::string& from, const std::string& to) const {
  const std::size_t f = index_of(from);
  const std::size_t t = index_of(to);
  TRAINSIM_CHECK(f == t || !routes_[f][t].empty(),
                 "no route from " + from + " to " + to + " in topology " + topo_.name);
  return routes_[f][t];
}

std::vector<Hop> NodeGraph::route_through_switches(const std::string& from,
                                                        const std::string& to) const {
  const std::size_t f = index_of(from), t = index_of(to);
  const std::size_t n = topo_.vertices.size();
  // Dijkstra by hand with route()'s path order; node templates have tens of vertices.
  std::vector<PathCost> cost(n);
  std::vector<bool> done(n, false);
  for (auto& c : cost) c.hops = kUnreached;
  cost[f] = PathCost{};
  const PathLess less;
  for (;;) {
    std::size_t u = n;
    for (std::size_t v = 0; v < n; ++v)
      if (!done[v] && cost[v].hops != kUnreached && (u == n || less(cost[v], cost[u]))) u = v;
    if (u == n || u == t) break;
    done[u] = true;
    const VertexKind kind = topo_.vertices[u].kind;
    if (u != f && kind != VertexKind::switch_ && kind != VertexKind::cpu) continue;  // not a relay
    const std::string& here = topo_.vertices[u].id;
    for (std::size_t l = 0; l < topo_.links.size(); ++l) {
      const Link& link = topo_.links[l];
      if (link.a != here && link.b != here) continue;
      const std::size_t v = index_of(link.a == here ? link.b : link.a);
      if (done[v]) continue;
      const PathCost c = PathExtend{}(cost[u], EdgeInfo{l, to_picoseconds(link.latency)});
      if (cost[v].hops == kUnreached || less(c, cost[v])) cost[v] = c;
    }
  }
  if (f == t || cost[t].hops == kUnreached) return {};
  return hops_from(topo_, f, cost[t]);
}

Seconds NodeGraph::route_latency(const std::string& from, const std::string& to) const {
  Seconds total = 0;
  for (const Hop& h : route(from, to)) total += topo_.links[h.link_index].latency;
  return total;
}

BytesPerSecond NodeGraph::route_bandwidth(const std::string& from, const std::string& to) const {
  // An empty route (from == to) is limited by no link.
  BytesPerSecond narrowest = std::numeric_limits<BytesPerSecond>::infinity();
  for (const Hop& h : route(from, to))
    narrowest = std::min(narrowest, topo_.links[h.link_index].bandwidth);
  return narrowest;
}

}  // namespace trainsim::topology

#include "engine/platform_builder.hpp"

#include <map>
#include <string>

#include <simgrid/kernel/routing/NetZoneImpl.hpp>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/NetZone.hpp>
#include <xbt/log.h>

#include "core/error.hpp"
#include "topology/topology_graph.hpp"

namespace sg4 = simgrid::s4u;

namespace trainsim::engine {

using simgrid::kernel::routing::NetPoint;

Seconds Platform::route_latency(int src_rank, int dst_rank) const {
  const int sn = src_rank / ranks_per_node, dn = dst_rank / ranks_per_node;
  const int sl = src_rank % ranks_per_node, dl = dst_rank % ranks_per_node;
  if (sn == dn) return intra_latency[sl][dl];
  return gateway_latency[sl] + fabric_latency + gateway_latency[dl];
}

Seconds Platform::route_latency(int src_rank, int dst_rank, int src_nic, int dst_nic) const {
  const int sn = src_rank / ranks_per_node, dn = dst_rank / ranks_per_node;
  if (sn == dn || (src_nic < 0 && dst_nic < 0)) return route_latency(src_rank, dst_rank);
  // Same rule as endpoint(): no NIC or the rank's own is its own route; any other NIC must have
  // been built, or a plan naming it would silently run at the own route's latency.
  auto leg = [&](int rank, int nic) {
    const int local = rank % ranks_per_node;
    if (nic < 0 || nic == own_nic[static_cast<std::size_t>(local)]) return gateway_latency[static_cast<std::size_t>(local)];
    const auto it = via_nic_latency.find({local, nic});
    TRAINSIM_CHECK(it != via_nic_latency.end(), "the platform has no route from local rank " + std::to_string(local) +
                                                    " through NIC " + std::to_string(nic) + " (build_platform's via_nics)");
    return it->second;
  };
  return leg(src_rank, src_nic) + fabric_latency + leg(dst_rank, dst_nic);
}

simgrid::s4u::Host* Platform::endpoint(int rank, int nic) const {
  const int local = rank % ranks_per_node;
  if (nic < 0 || nic == own_nic[static_cast<std::size_t>(local)]) return rank_host[static_cast<std::size_t>(rank)];
  const auto it = via_nic_host.find({local, nic});
  TRAINSIM_CHECK(it != via_nic_host.end(), "the platform has no route from local rank " + std::to_string(local) +
                                               " through NIC " + std::to_string(nic) + " (build_platform's via_nics)");
  return it->second[static_cast<std::size_t>(rank / ranks_per_node)];
}

void configure_exact_timing(sg4::Engine& e) {
  e.set_config("network/model:CM02");
  e.set_config("network/crosstraffic:0");
  e.set_config("network/TCP-gamma:0");
}

std::unique_ptr<sg4::Engine> make_exact_timing_engine(const std::string& program_name) {
  xbt_log_control_set("root.thresh:critical");
  int argc = 1;
  std::string name = program_name;
  char* argv[] = {name.data(), nullptr};
  auto e = std::make_unique<sg4::Engine>(&argc, argv);
  configure_exact_timing(*e);
  return e;
}

namespace {

struct BuiltLink {
  sg4::Link* link;
  bool split;
};

std::vector<sg4::LinkInRoute> to_route(const std::vector<topology::Hop>& hops,
                                       const std::vector<BuiltLink>& links) {
  std::vector<sg4::LinkInRoute> out;
  for (const auto& h : hops) {
    const BuiltLink& l = links[h.link_index];
    if (!l.split) {
      out.emplace_back(l.link);
    } else {
      out.emplace_back(l.link, h.forward ? sg4::LinkInRoute::Direction::UP
                                         : sg4::LinkInRoute::Direction::DOWN);
    }
  }
  return out;
}

/// What an accelerator's links can carry into and out of it at once: both directions of a
/// split-duplex link, the one capacity of a shared one.
BytesPerSecond attached_capacity(const topology::Topology& topo, const std::string& acc) {
  BytesPerSecond sum = 0;
  for (const auto& l : topo.links)
    if (l.a == acc || l.b == acc) sum += l.sharing == topology::Sharing::split_duplex ? 2 * l.bandwidth : l.bandwidth;
  return sum;
}

/// The first of `nic_ids` (by index) that `hops` pass through, -1 for none.
int first_nic_on(const topology::Topology& topo, const std::vector<topology::Hop>& hops,
                 const std::vector<std::string>& nic_ids) {
  for (const auto& h : hops) {
    const auto& l = topo.links[h.link_index];
    for (std::size_t n = 0; n < nic_ids.size(); ++n)
      if (l.a == nic_ids[n] || l.b == nic_ids[n]) return static_cast<int>(n);
  }
  return -1;
}

}  // namespace

void check_hbm_link(const topology::Topology& topo, BytesPerSecond hbm_link_bandwidth) {
  // The HBM link never limits a collective alone (engine/program_executor.hpp's folding leaves it
  // out of the flows' components on that ground): it carries at least what the accelerator's
  // other links can bring in and take out together.
  for (const auto& a : topo.accelerators())
    if (const BytesPerSecond attached = attached_capacity(topo, a); attached > hbm_link_bandwidth)
      throw ConfigError(topo.file, "/node/links",
                        "accelerator " + a + "'s links carry " + std::to_string(attached) +
                            " B/s in and out, more than its HBM link's " + std::to_string(hbm_link_bandwidth) +
                            " B/s (the device's streaming rate / HBM bytes per link byte): expected at most that");
}

Platform build_platform(const topology::Topology& topo, int nodes, BytesPerSecond hbm_link_bandwidth,
                        const std::vector<int>& via_nics) {
  Platform p;
  p.nodes = nodes;
  const auto accs = topo.accelerators();
  const std::string gw_id = topo.gateway();
  p.ranks_per_node = static_cast<int>(accs.size());
  p.fabric_latency = topo.fabric.latency;
  std::string cpu_id;
  for (const auto& v : topo.vertices)
    if (v.kind == topology::VertexKind::cpu) {
      cpu_id = v.id;
      break;
    }

  const topology::NodeGraph graph(topo);
  p.intra_latency.assign(accs.size(), std::vector<Seconds>(accs.size(), 0));
  for (std::size_t i = 0; i < accs.size(); ++i) {
    p.gateway_latency.push_back(graph.route_latency(accs[i], gw_id));
    for (std::size_t j = 0; j < accs.size(); ++j)
      p.intra_latency[i][j] = graph.route_latency(accs[i], accs[j]);
    if (!cpu_id.empty()) p.cpu_latency.push_back(graph.route_latency(accs[i], cpu_id));
  }
  const bool hbm = hbm_link_bandwidth > 0;
  if (hbm) check_hbm_link(topo, hbm_link_bandwidth);
  // Routes inside a node, computed once on the graph and replayed for every node.
  std::map<std::pair<std::string, std::string>, std::vector<topology::Hop>> routes;
  std::vector<std::string> endpoints = accs;
  endpoints.push_back(gw_id);
  if (!cpu_id.empty()) endpoints.push_back(cpu_id);
  for (const auto& a : endpoints)
    for (const auto& b : endpoints)
      if (a != b) routes[{a, b}] = graph.route(a, b);
  // Routes through another NIC than the accelerator's own: to the NIC over PCIe, then on.
  std::vector<std::string> nic_ids;
  for (const auto& v : topo.vertices)
    if (v.kind == topology::VertexKind::nic) nic_ids.push_back(v.id);
  struct ViaNic {
    int local, nic;
    std::vector<topology::Hop> up;  ///< accelerator -> NIC -> gateway
  };
  std::vector<ViaNic> via;
  for (const auto& acc : accs) p.own_nic.push_back(first_nic_on(topo, routes[{acc, gw_id}], nic_ids));
  for (int nic : via_nics) {
    if (nic < 0 || static_cast<std::size_t>(nic) >= nic_ids.size())
      throw ConfigError(topo.file, "/node/vertices",
                        "a collective calibration routes ring channels through NIC " + std::to_string(nic) +
                            ": expected an index below the topology's " + std::to_string(nic_ids.size()) + " NICs");
    const std::string& nic_id = nic_ids[static_cast<std::size_t>(nic)];
    for (std::size_t i = 0; i < accs.size(); ++i) {
      if (p.own_nic[i] == nic) continue;
      auto up = graph.route_through_switches(accs[i], nic_id);
      if (up.empty())
        throw ConfigError(topo.file, "/node/links",
                          "no path from " + accs[i] + " to " + nic_id +
                              " through switches and CPUs only: expected one (a PCIe switch link to the NIC) "
                              "for the collective calibration's ring NIC choice");
      const auto on = graph.route(nic_id, gw_id);
      up.insert(up.end(), on.begin(), on.end());
      Seconds latency = 0;
      for (const auto& h : up) latency += topo.links[h.link_index].latency;
      p.via_nic_latency[{static_cast<int>(i), nic}] = latency;
      via.push_back({static_cast<int>(i), nic, std::move(up)});
    }
  }

  auto* fabric = sg4::create_star_zone("fabric");
  // SimGrid checks each new link's name against every link of the zone tree, one zone at a time,
  // so filling nodes already attached to the fabric costs O(nodes^2). Nodes are filled detached
  // (with the fabric's models, which attaching would copy) and attached once all exist; links,
  // hosts and routers are created in the same order as when attaching first.
  auto* fabric_impl = fabric->get_impl();
  std::vector<sg4::NetZone*> node_zones;
  std::vector<sg4::SplitDuplexLink*> uplinks;
  std::vector<NetPoint*> gateways;
  for (int n = 0; n < nodes; ++n) {
    const std::string prefix = "n" + std::to_string(n) + ".";
    auto* zone = sg4::create_full_zone("node" + std::to_string(n));
    auto* impl = zone->get_impl();
    impl->set_network_model(fabric_impl->get_network_model());
    impl->set_cpu_pm_model(fabric_impl->get_cpu_pm_model());
    impl->set_cpu_vm_model(fabric_impl->get_cpu_vm_model());
    impl->set_disk_model(fabric_impl->get_disk_model());
    impl->set_host_model(fabric_impl->get_host_model());
    std::map<std::string, NetPoint*> netpoint;
    std::map<std::string, sg4::Link*> hbm_of;  // accelerator id -> its HBM link
    for (const auto& v : topo.vertices) {
      if (v.kind == topology::VertexKind::accelerator) {
        auto* h = zone->create_host(prefix + v.id, p.host_speed);
        netpoint[v.id] = h->get_netpoint();
        p.rank_host.push_back(h);
        if (hbm) {
          // Shared: reads and writes use the same device-memory bandwidth.
          auto* link = zone->create_link(prefix + v.id + ".hbm", hbm_link_bandwidth);
          link->set_latency(0)->seal();
          hbm_of[v.id] = link;
          p.hbm_link.push_back(link);
        }
      } else if (v.id == cpu_id) {
        auto* h = zone->create_host(prefix + v.id, p.host_speed);
        netpoint[v.id] = h->get_netpoint();
        p.cpu_host.push_back(h);
      } else {
        netpoint[v.id] = zone->create_router(prefix + v.id);
      }
    }
    std::vector<BuiltLink> links;
    for (const auto& l : topo.links) {
      if (l.sharing == topology::Sharing::split_duplex) {
        auto* link = zone->create_split_duplex_link(prefix + l.id, l.bandwidth);
        link->set_latency(0)->seal();
        links.push_back({link, true});
      } else {
        auto* link = zone->create_link(prefix + l.id, l.bandwidth);
        link->set_latency(0)->seal();
        links.push_back({link, false});
      }
    }
    for (const auto& [ends, hops] : routes) {
      auto route = to_route(hops, links);
      if (hbm) {
        // A transfer's bytes also pass through device memory at each accelerator it touches.
        if (auto it = hbm_of.find(ends.first); it != hbm_of.end()) route.insert(route.begin(), sg4::LinkInRoute(it->second));
        if (auto it = hbm_of.find(ends.second); it != hbm_of.end()) route.emplace_back(it->second);
      }
      zone->add_route(netpoint[ends.first], netpoint[ends.second], nullptr, nullptr, route, false);
    }
    for (const auto& v : via) {
      const std::string& acc = accs[static_cast<std::size_t>(v.local)];
      auto* h = zone->create_host(prefix + acc + "@" + nic_ids[static_cast<std::size_t>(v.nic)], p.host_speed);
      p.via_nic_host[{v.local, v.nic}].push_back(h);
      auto route = to_route(v.up, links);
      if (hbm) route.insert(route.begin(), sg4::LinkInRoute(hbm_of.at(acc)));
      zone->add_route(h->get_netpoint(), netpoint[gw_id], nullptr, nullptr, route, false);
      std::vector<topology::Hop> down(v.up.rbegin(), v.up.rend());
      for (auto& hop : down) hop.forward = !hop.forward;
      auto back = to_route(down, links);
      if (hbm) back.emplace_back(hbm_of.at(acc));
      zone->add_route(netpoint[gw_id], h->get_netpoint(), nullptr, nullptr, back, false);
    }
    auto* uplink = fabric->create_split_duplex_link(prefix + "uplink", topo.fabric.uplink_bandwidth);
    uplink->set_latency(0)->seal();
    node_zones.push_back(zone);
    uplinks.push_back(uplink);
    gateways.push_back(netpoint[gw_id]);
  }
  for (std::size_t n = 0; n < node_zones.size(); ++n) {
    node_zones[n]->set_parent(fabric);
    node_zones[n]->seal();
    fabric->add_route(node_zones[n]->get_netpoint(), nullptr, gateways[n], nullptr,
                      {sg4::LinkInRoute(uplinks[n], sg4::LinkInRoute::Direction::UP)}, true);
  }
  fabric->seal();
  return p;
}

}  // namespace trainsim::engine

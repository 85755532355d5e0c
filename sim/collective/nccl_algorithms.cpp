#include "collective/nccl_algorithms.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include "core/error.hpp"

namespace trainsim::collective {

GroupShape shape_of(const std::vector<int>& group, const RankLayout& layout) {
  GroupShape g;
  std::map<int, std::size_t> index;  // node id -> position in g.nodes
  for (int r : group) {
    const auto [it, fresh] = index.emplace(layout.node_of(r), g.nodes.size());
    if (fresh) g.nodes.emplace_back();
    g.nodes[it->second].push_back(r);
  }
  g.ranks_ = static_cast<int>(group.size());
  for (const auto& members : g.nodes) {
    g.most_ = std::max(g.most_, static_cast<int>(members.size()));
    g.even_ = g.even_ && members.size() == g.nodes.front().size();
  }
  return g;
}

namespace {

/// Sums bytes per (src, dst) so channels sharing a pair become one flow; ordered output.
class FlowSum {
public:
  void add(int src, int dst, Bytes bytes, bool inter, int src_nic = -1, int dst_nic = -1) {
    if (bytes > 0 && src != dst) sum_[{src, dst, inter, src_nic, dst_nic}] += bytes;
  }
  [[nodiscard]] std::vector<PayloadFlow> flows() const {
    std::vector<PayloadFlow> out;
    out.reserve(sum_.size());
    for (const auto& [key, bytes] : sum_)
      out.push_back({std::get<0>(key), std::get<1>(key), bytes, std::get<2>(key), std::get<3>(key),
                     std::get<4>(key)});
    return out;
  }

private:
  std::map<std::tuple<int, int, bool, int, int>, Bytes> sum_;
};

int ceil_log2(int n) {
  int l = 0;
  while ((1 << l) < n) ++l;
  return l;
}

/// Parent of node i in NCCL's binary tree over n nodes rooted at 0 (-1 for the root), as
/// NCCL's trees.cc builds it: with b the lowest set bit of i, the parent is (i ^ b) | 2b, or
/// i ^ b when that is out of range. The root has a single child (the highest power of two
/// below n), so every other inner node has two children and a parent.
int btree_parent(int i, int n) {
  if (i == 0) return -1;
  int bit = 1;
  while (!(bit & i)) bit <<= 1;
  const int up = (i ^ bit) | (bit << 1);
  return up < n ? up : i ^ bit;
}

/// Parent of node i in tree t of NCCL's double binary tree over n nodes (-1 for the root).
/// Tree 0 is the binary tree; tree 1 mirrors it (n even) or shifts it by one (n odd), so a node
/// inner in one tree is a leaf in the other. Per tree of S/2 a node moves S/2 to and from its
/// parent and each child: S per direction on two nodes, 2S for an inner node beyond two nodes.
int tree_parent(int t, int i, int n) {
  if (t == 0) return btree_parent(i, n);
  if (n % 2 == 0) {
    const int p = btree_parent(n - 1 - i, n);
    return p < 0 ? -1 : n - 1 - p;
  }
  const int p = btree_parent((i - 1 + n) % n, n);
  return p < 0 ? -1 : (p + 1) % n;
}

}  // namespace

Schedule ring_schedule(Op op, Bytes size, const GroupShape& g, const RankLayout& layout,
                       const std::vector<int>& entry_nic) {
  Schedule s;
  s.algorithm = Algorithm::ring;
  const int n = g.ranks(), nodes = g.node_count();
  if (n < 2) return s;
  const bool twice = op == Op::all_reduce;  // reduce-scatter then all-gather around the ring
  const int steps = twice ? 2 * (n - 1) : n - 1;
  s.inter_steps = nodes > 1 ? (twice ? 2 * (nodes - 1) : nodes - 1) : 0;
  s.intra_steps = steps - s.inter_steps;
  const Bytes per_rank = static_cast<double>(steps) * size / n;  // broadcast: S (n-1)/n
  s.pipeline_depth = steps;
  s.inter_depth = s.inter_steps;
  s.pipeline_unit = op == Op::broadcast ? size : size / n;
  s.units_per_lane = per_rank / s.pipeline_unit;
  // A group holding part of each node takes its channels' NICs from the entry table.
  const bool pinned = nodes > 1 && !entry_nic.empty() && g.per_node() < layout.ranks_per_node;
  FlowSum sum;
  if (nodes == 1) {
    const int k = g.on_node(0);
    for (int j = 0; j < k; ++j) sum.add(g.nodes[0][j], g.nodes[0][(j + 1) % k], per_rank, false);
    s.flows = sum.flows();
    return s;
  }
  // Channel c enters every node at position c and leaves it from position c-1 (of the node's
  // own ranks, taken in turn where it holds fewer than the fullest node), through one NIC on
  // both sides (NCCL's ring returns to the NIC it started from), each channel carrying 1/lanes
  // of the ring's bytes.
  const int lanes = g.per_node();
  for (int m = 0; m < nodes; ++m) {
    const auto& here = g.nodes[m];
    const auto& next = g.nodes[(m + 1) % nodes];
    const int k = g.on_node(m), k_next = g.on_node((m + 1) % nodes);
    std::vector<int> hop_lanes(static_cast<std::size_t>(k), 0);  // hop j: position j to j + 1
    std::map<std::pair<int, int>, int> crossing_lanes;              // (exit position, next rank)
    for (int c = 0; c < lanes; ++c) {
      for (int i = 0; i + 1 < k; ++i) ++hop_lanes[static_cast<std::size_t>((c + i) % k)];
      ++crossing_lanes[{(c + k - 1) % k, next[static_cast<std::size_t>(c % k_next)]}];
    }
    for (int j = 0; j < k; ++j)
      if (hop_lanes[static_cast<std::size_t>(j)] > 0)
        sum.add(here[j], here[(j + 1) % k], per_rank * hop_lanes[static_cast<std::size_t>(j)] / lanes, false);
    for (const auto& [hop, count] : crossing_lanes) {
      const int dst = hop.second;
      int nic = -1;
      if (pinned) {
        const auto entry = static_cast<std::size_t>(layout.local_of(dst));
        TRAINSIM_CHECK(entry < entry_nic.size(), "the ring NIC table has no entry for local rank " +
                                                     std::to_string(entry));
        nic = entry_nic[entry];
      }
      sum.add(here[static_cast<std::size_t>(hop.first)], dst, per_rank * count / lanes, true, nic, nic);
    }
  }
  s.flows = sum.flows();
  return s;
}

namespace {

/// The double binary tree's inter-node flows: lane l (of 2k) runs on position l % k of every
/// node, on tree l / k, carrying S / lanes up to the parent and back down. 2k lanes: every
/// position (its NIC) carries one lane of each tree, so an inner node's 3 lanes' worth and a
/// leaf's 1 are spread evenly over the node's NICs.
void add_tree_flows(Bytes size, const GroupShape& g, FlowSum& sum) {
  const int nodes = g.node_count(), k = g.per_node();
  const int lanes = 2 * k;
  const Bytes lane_bytes = size / lanes;
  // Lane l at position l % (the node's ranks): a node holding fewer of the group's ranks than
  // the fullest runs several lanes through one position.
  auto at = [&](int m, int l) { return g.nodes[m][static_cast<std::size_t>(l % g.on_node(m))]; };
  for (int l = 0; l < lanes; ++l) {
    const int t = l / k;
    for (int m = 0; m < nodes; ++m) {
      const int parent = tree_parent(t, m, nodes);
      if (parent < 0) continue;
      sum.add(at(m, l), at(parent, l), lane_bytes, true);  // reduce up the tree
      sum.add(at(parent, l), at(m, l), lane_bytes, true);  // broadcast down the tree
    }
  }
}

}  // namespace

Schedule tree_schedule(Bytes size, const GroupShape& g) {
  Schedule s;
  s.algorithm = Algorithm::tree;
  const int nodes = g.node_count(), k = g.per_node();
  TRAINSIM_CHECK(nodes >= 2, "tree all_reduce needs at least two nodes");
  const int lanes = 2 * k;  // each lane: one channel, on one of the two trees
  const Bytes lane_bytes = size / lanes;
  FlowSum sum;
  for (int l = 0; l < lanes; ++l) {
    for (int m = 0; m < nodes; ++m) {
      const auto& here = g.nodes[m];
      const int km = g.on_node(m), p = l % km;
      for (int i = 0; i + 1 < km; ++i) {
        const int a = here[(p + i) % km], b = here[(p + i + 1) % km];
        sum.add(b, a, lane_bytes, false);  // reduce up the chain
        sum.add(a, b, lane_bytes, false);  // broadcast down the chain
      }
    }
  }
  add_tree_flows(size, g, sum);
  s.flows = sum.flows();
  const int depth = ceil_log2(nodes);
  s.intra_steps = 2 * (k - 1);
  s.inter_steps = 2 * depth;
  // A chunk crosses the chain once (its up and down legs overlap) and the tree up and down.
  s.pipeline_depth = k + 2 * depth;
  s.inter_depth = 2 * depth;
  s.pipeline_unit = size / 2;  // each tree streams half of S
  s.units_per_lane = 1;
  return s;
}

Schedule nvls_schedule(Bytes size, const GroupShape& g) {
  Schedule s;
  s.algorithm = Algorithm::nvls;
  TRAINSIM_CHECK(g.node_count() == 1, "NVLS all_reduce runs inside one node");
  const auto& r = g.nodes.front();
  const int k = g.per_node();
  if (k < 2) return s;
  FlowSum sum;
  // The switch reduces: each port carries S up and S down. Ring-neighbour flows give exactly
  // those port loads on a non-blocking switch with k flows instead of k(k-1).
  for (int j = 0; j < k; ++j) sum.add(r[j], r[(j + 1) % k], size, false);
  s.flows = sum.flows();
  s.pipeline_depth = 2;  // into the switch, out of it
  s.pipeline_unit = size;
  s.units_per_lane = 1;
  return s;
}

Schedule nvls_tree_schedule(Bytes size, const GroupShape& g) {
  Schedule s;
  s.algorithm = Algorithm::nvls_tree;
  const int nodes = g.node_count(), k = g.per_node();
  TRAINSIM_CHECK(nodes >= 2, "NVLS tree all_reduce needs at least two nodes");
  TRAINSIM_CHECK(g.even(), "NVLS tree all_reduce needs the same ranks on every node");
  FlowSum sum;
  if (k > 1)
    for (const auto& r : g.nodes)
      for (int j = 0; j < k; ++j) sum.add(r[j], r[(j + 1) % k], size, false);  // as nvls_schedule
  add_tree_flows(size, g, sum);
  s.flows = sum.flows();
  const int depth = ceil_log2(nodes);
  s.inter_steps = 2 * depth;
  // Into the switch, up and down the tree, out of the switch.
  s.pipeline_depth = 2 + 2 * depth;
  s.inter_depth = 2 * depth;
  s.pipeline_unit = size / 2;
  s.units_per_lane = 1;
  return s;
}

Schedule pairwise_schedule(Op op, Bytes size, const GroupShape& g) {
  Schedule s;
  s.algorithm = Algorithm::pairwise;
  const int n = g.ranks(), nodes = g.node_count();
  FlowSum sum;
  if (op == Op::send_recv) {
    TRAINSIM_CHECK(n == 2, "send_recv needs a group of exactly two ranks");
    const bool inter = nodes == 2;
    sum.add(g.nodes[0][0], inter ? g.nodes[1][0] : g.nodes[0][1], size, inter);
    (inter ? s.inter_steps : s.intra_steps) = 1;
    s.flows = sum.flows();
    return s;
  }
  if (op == Op::ring_exchange) {
    if (n < 2) return s;
    std::vector<int> ring, node_of;  // node by node, and the node of each
    for (int m = 0; m < nodes; ++m) {
      ring.insert(ring.end(), g.nodes[m].begin(), g.nodes[m].end());
      node_of.insert(node_of.end(), g.nodes[m].size(), m);
    }
    bool inter = false;
    for (int i = 0; i < n; ++i) {
      const int next = (i + 1) % n;
      const bool crosses = node_of[static_cast<std::size_t>(i)] != node_of[static_cast<std::size_t>(next)];
      inter = inter || crosses;
      sum.add(ring[static_cast<std::size_t>(i)], ring[static_cast<std::size_t>(next)], size, crosses);
    }
    // One step, as each of the send_recv calls it stands for; across nodes the network's.
    (inter ? s.inter_steps : s.intra_steps) = 1;
    s.flows = sum.flows();
    return s;
  }
  TRAINSIM_CHECK(op == Op::alltoall, "pairwise schedules are for alltoall, send_recv and ring_exchange");
  if (n < 2) return s;
  const Bytes share = size / n;
  // A rank's bytes for a node holding another number of the group's ranks go to the position
  // its own maps to there.
  for (int m = 0; m < nodes; ++m)
    for (int j = 0; j < g.on_node(m); ++j) {
      for (int i = 0; i < g.on_node(m); ++i) sum.add(g.nodes[m][j], g.nodes[m][i], share, false);
      for (int o = 0; o < nodes; ++o)
        if (o != m) sum.add(g.nodes[m][j], g.nodes[o][static_cast<std::size_t>(j % g.on_node(o))], share * g.on_node(o), true);
    }
  s.flows = sum.flows();
  s.peer_rounds = n - 1;
  return s;
}

}  // namespace trainsim::collective

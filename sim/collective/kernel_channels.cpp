#include "collective/kernel_channels.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace trainsim::collective {

int kernel_channels(Op op, const std::vector<int>& group, const RankLayout& layout,
                    const CollectiveCalibration& cal, Algorithm algorithm) {
  if (cal.schema_version < 2 || group.size() < 2) return 0;
  if (algorithm == Algorithm::nvls || algorithm == Algorithm::nvls_tree) return cal.channels.nvls;
  std::map<int, int> per_node;
  for (int r : group) ++per_node[layout.node_of(r)];
  const bool one_node = per_node.size() == 1;
  switch (op) {
    case Op::send_recv:
    case Op::ring_exchange: return one_node ? 0 : cal.channels.net_peer;
    case Op::alltoall: return 0;
    default: break;
  }
  if (one_node) return cal.channels.one_node;
  if (cal.channels.multi_node == 0) return 0;
  int most = 0;
  for (const auto& [node, n] : per_node) most = std::max(most, n);
  if (most >= layout.ranks_per_node) return cal.channels.multi_node;
  if (cal.channels.multi_node_per_accelerator > 0)
    return cal.channels.multi_node_per_accelerator * most;
  const double scaled = static_cast<double>(cal.channels.multi_node) * most / layout.ranks_per_node;
  return std::max(2, static_cast<int>(std::lround(scaled)));
}

}  // namespace trainsim::collective

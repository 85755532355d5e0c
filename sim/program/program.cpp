#include "program/program.hpp"

#include <map>

#include "core/error.hpp"

namespace trainsim::program {

const char* phase_name(Phase p) {
  switch (p) {
    case Phase::forward: return "forward";
    case Phase::backward: return "backward";
    case Phase::optimizer: return "optimizer";
    case Phase::gradient_sync: return "gradient_sync";
    case Phase::parameter_sync: return "parameter_sync";
    case Phase::offload: return "offload";
    case Phase::other: return "other";
  }
  return "?";
}

void validate(const Program& p) {
  std::vector<std::map<int, int>> seen(p.collectives.size());  // rank -> count
  std::vector<std::vector<int>> order(p.ranks.size());
  for (std::size_t r = 0; r < p.ranks.size(); ++r) {
    const auto& rp = p.ranks[r];
    TRAINSIM_CHECK(rp.rank == static_cast<int>(r), "rank programs must be in rank order");
    for (const auto& s : rp.streams) {
      for (const auto& t : s.tasks) {
        for (const auto& d : t.deps) {
          TRAINSIM_CHECK(d.stream >= 0 && d.stream < static_cast<int>(rp.streams.size()),
                         "dependency on an unknown stream in task " + t.name);
          TRAINSIM_CHECK(d.index >= 0 &&
                             d.index < static_cast<int>(rp.streams[d.stream].tasks.size()),
                         "dependency on an unknown task in task " + t.name);
        }
        if (t.kind == TaskKind::host_copy)
          TRAINSIM_CHECK(t.copy_bytes > 0, "host copy " + t.name + " moves no bytes");
        if (t.kind == TaskKind::collective) {
          TRAINSIM_CHECK(t.collective >= 0 &&
                             t.collective < static_cast<int>(p.collectives.size()),
                         "unknown collective in task " + t.name);
          seen[t.collective][rp.rank]++;
          order[r].push_back(t.collective);
        }
      }
    }
  }
  for (std::size_t c = 0; c < p.collectives.size(); ++c) {
    for (int member : p.collectives[c].group)
      TRAINSIM_CHECK(seen[c][member] == 1,
                     "collective " + p.collectives[c].name + " must appear once on rank " +
                         std::to_string(member));
    TRAINSIM_CHECK(seen[c].size() == p.collectives[c].group.size(),
                   "collective " + p.collectives[c].name + " appears on a non-member rank");
  }
  // Two collectives shared by two ranks must be issued in the same order on both.
  std::vector<std::map<int, std::size_t>> position(p.ranks.size());
  for (std::size_t r = 0; r < order.size(); ++r)
    for (std::size_t i = 0; i < order[r].size(); ++i) position[r][order[r][i]] = i;
  for (std::size_t c = 0; c + 1 < p.collectives.size(); ++c) {
    const auto& g = p.collectives[c].group;
    for (std::size_t d = c + 1; d < p.collectives.size(); ++d) {
      int sign = 0;
      for (int r : g) {
        auto it = position[r].find(static_cast<int>(d));
        if (it == position[r].end()) continue;
        const int s = position[r][static_cast<int>(c)] < it->second ? 1 : -1;
        TRAINSIM_CHECK(sign == 0 || sign == s, "collectives " + p.collectives[c].name + " and " +
                                                   p.collectives[d].name +
                                                   " are issued in different orders");
        sign = s;
      }
    }
  }
}

}  // namespace trainsim::program

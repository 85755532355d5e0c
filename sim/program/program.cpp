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
  // Where each rank issues each collective: (stream, position on that stream).
  std::vector<std::map<int, std::pair<int, int>>> where(p.ranks.size());
  for (std::size_t r = 0; r < p.ranks.size(); ++r) {
    const auto& rp = p.ranks[r];
    TRAINSIM_CHECK(rp.rank == static_cast<int>(r), "rank programs must be in rank order");
    for (std::size_t si = 0; si < rp.streams.size(); ++si) {
      const auto& s = rp.streams[si];
      int position = 0;
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
          where[r][t.collective] = {static_cast<int>(si), position++};
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
  // A stream runs its collectives in order, and a collective starts when every member reaches
  // it: two collectives that share a stream on two ranks must come in the same order on both, or
  // each rank waits for the other. Collectives on different streams of a rank impose no order.
  for (std::size_t c = 0; c + 1 < p.collectives.size(); ++c) {
    const auto& g = p.collectives[c].group;
    for (std::size_t d = c + 1; d < p.collectives.size(); ++d) {
      int sign = 0;
      for (int r : g) {
        const auto& at = where[static_cast<std::size_t>(r)];
        auto it = at.find(static_cast<int>(d));
        if (it == at.end()) continue;
        const auto& here = at.at(static_cast<int>(c));
        if (here.first != it->second.first) continue;
        const int s = here.second < it->second.second ? 1 : -1;
        TRAINSIM_CHECK(sign == 0 || sign == s, "collectives " + p.collectives[c].name + " and " +
                                                   p.collectives[d].name +
                                                   " are issued in different orders");
        sign = s;
      }
    }
  }
}

}  // namespace trainsim::program

#include "program/rank_folding.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <numeric>
#include <unordered_map>

#include "collective/nccl_algorithms.hpp"

namespace trainsim::program {

namespace {

std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  // splitmix64-style combination: cheap, and collisions are ruled out by the full comparison.
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h;
}

std::uint64_t bits(double d) {
  std::uint64_t u = 0;
  std::memcpy(&u, &d, sizeof u);
  return u;
}

/// What a collective call looks like from one member: which peers it has is left out on purpose.
struct CallShape {
  collective::Op op;
  Bytes size;
  std::size_t group;
  int repeat;
  bool operator==(const CallShape& o) const {
    return op == o.op && size == o.size && group == o.group && repeat == o.repeat;
  }
};

struct CallShapeHash {
  std::size_t operator()(const CallShape& c) const {
    return mix(mix(mix(static_cast<std::uint64_t>(c.op), bits(c.size)), c.group), static_cast<std::uint64_t>(c.repeat));
  }
};

/// Each call's shape as a small dense number, equal numbers for equal shapes. Comparing ranks
/// then reads one compact table (a few MB for a 1,024-GPU job's hundreds of thousands of calls)
/// instead of the calls themselves, which the ranks reach in no useful order.
std::vector<std::uint32_t> call_shapes(const Program& p) {
  std::unordered_map<CallShape, std::uint32_t, CallShapeHash> ids;
  std::vector<std::uint32_t> shape(p.collectives.size());
  for (std::size_t c = 0; c < p.collectives.size(); ++c) {
    const auto& call = p.collectives[c];
    const CallShape here{call.op, call.size, call.group.size(), call.repeat};
    // A group's calls come in runs of one shape (the ring steps of a GEMM, the micro-batches'
    // sends): the previous call's number spares most lookups.
    if (c > 0) {
      const auto& before = p.collectives[c - 1];
      if (here == CallShape{before.op, before.size, before.group.size(), before.repeat}) {
        shape[c] = shape[c - 1];
        continue;
      }
    }
    shape[c] = ids.emplace(here, static_cast<std::uint32_t>(ids.size())).first->second;
  }
  return shape;
}

std::uint64_t signature(const std::vector<std::uint32_t>& shape, const RankProgram& r) {
  std::uint64_t h = mix(0, bits(r.resident));
  for (const auto& s : r.streams) {
    h = mix(h, std::hash<std::string>{}(s.name));
    h = mix(h, static_cast<std::uint64_t>(s.kind));
    h = mix(h, s.tasks.size());
    for (const auto& t : s.tasks) {
      h = mix(h, static_cast<std::uint64_t>(t.kind) * 16 + static_cast<std::uint64_t>(t.phase));
      h = mix(h, bits(t.duration));
      h = mix(h, bits(t.memory_bound));
      h = mix(h, t.deps.size());
      h = mix(h, static_cast<std::uint64_t>(t.kernels) * 2 + (t.host_sync ? 1 : 0));
      h = mix(h, bits(t.host_per_kernel));
      if (t.kind == TaskKind::collective) h = mix(h, shape[static_cast<std::size_t>(t.collective)]);
      if (t.kind == TaskKind::host_copy)
        h = mix(mix(h, bits(t.copy_bytes)), static_cast<std::uint64_t>(t.copy_direction));
    }
  }
  return h;
}

bool same_program(const std::vector<std::uint32_t>& shape, const RankProgram& a, const RankProgram& b) {
  if (a.resident != b.resident || a.streams.size() != b.streams.size()) return false;
  for (std::size_t s = 0; s < a.streams.size(); ++s) {
    const auto& sa = a.streams[s];
    const auto& sb = b.streams[s];
    if (sa.name != sb.name || sa.kind != sb.kind || sa.tasks.size() != sb.tasks.size()) return false;
    for (std::size_t i = 0; i < sa.tasks.size(); ++i) {
      const auto& x = sa.tasks[i];
      const auto& y = sb.tasks[i];
      if (x.kind != y.kind || x.phase != y.phase || x.duration != y.duration || !(x.deps == y.deps) ||
          x.memory_bound != y.memory_bound ||
          x.alloc != y.alloc || x.release != y.release || x.workspace != y.workspace ||
          x.release_borrowed != y.release_borrowed || x.alloc_pool != y.alloc_pool ||
          x.borrowed_pool != y.borrowed_pool || x.borrowed_free_at_issue != y.borrowed_free_at_issue ||
          x.name != y.name ||
          x.copy_bytes != y.copy_bytes || x.copy_direction != y.copy_direction || x.kernels != y.kernels ||
          x.host_sync != y.host_sync || x.host_after != y.host_after || x.host_per_kernel != y.host_per_kernel)
        return false;
      if (x.kind == TaskKind::collective &&
          shape[static_cast<std::size_t>(x.collective)] != shape[static_cast<std::size_t>(y.collective)])
        return false;
    }
  }
  return true;
}

struct UnionFind {
  std::vector<int> parent;
  explicit UnionFind(std::size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  int find(int x) {
    while (parent[static_cast<std::size_t>(x)] != x) {
      parent[static_cast<std::size_t>(x)] = parent[static_cast<std::size_t>(parent[static_cast<std::size_t>(x)])];
      x = parent[static_cast<std::size_t>(x)];
    }
    return x;
  }
  void join(int a, int b) {
    a = find(a);
    b = find(b);
    if (a != b) parent[static_cast<std::size_t>(std::max(a, b))] = std::min(a, b);
  }
};

/// Fills the merged-call tables from a call -> root map; roots are numbered in call order.
void number_merged_calls(RankFolding& f, const Program& p, UnionFind& uf) {
  std::vector<int> id_of_root(p.collectives.size(), -1);
  f.merged_of_call.assign(p.collectives.size(), -1);
  std::vector<std::size_t> count;  // merged call -> how many calls it stands for
  for (std::size_t c = 0; c < p.collectives.size(); ++c) {
    int& id = id_of_root[static_cast<std::size_t>(uf.find(static_cast<int>(c)))];
    if (id < 0) {
      id = static_cast<int>(count.size());
      count.push_back(0);
    }
    f.merged_of_call[c] = id;
    ++count[static_cast<std::size_t>(id)];
  }
  // Each list sized once: a 1,024-GPU step has millions of calls in a hundred thousand lists.
  f.calls.resize(count.size());
  for (std::size_t m = 0; m < count.size(); ++m) f.calls[m].reserve(count[m]);
  for (std::size_t c = 0; c < p.collectives.size(); ++c)
    f.calls[static_cast<std::size_t>(f.merged_of_call[c])].push_back(static_cast<int>(c));
  // The classes of a group's members, found once per distinct group (every call of a
  // tensor-parallel group has the same members).
  std::vector<std::vector<int>> classes_of_group;  // by RankGroup::id; empty: not yet found
  auto group_classes = [&](const RankGroup& g) -> const std::vector<int>& {
    if (g.id() >= classes_of_group.size()) classes_of_group.resize(g.id() + 1);
    auto& classes = classes_of_group[g.id()];
    if (classes.empty())
      for (int r : g) {
        const int k = f.class_of_rank[static_cast<std::size_t>(r)];
        if (std::find(classes.begin(), classes.end(), k) == classes.end()) classes.push_back(k);
      }
    return classes;
  };
  // Calls read in order: a merged call's calls lie a replica's worth of calls apart, and reading
  // them merged call by merged call misses the cache at nearly every one.
  f.classes_of.assign(f.calls.size(), {});
  std::vector<std::uint32_t> last_group(f.calls.size(), UINT32_MAX);  // merged call -> group last listed
  for (std::size_t c = 0; c < p.collectives.size(); ++c) {
    const auto m = static_cast<std::size_t>(f.merged_of_call[c]);
    const RankGroup& g = p.collectives[c].group;
    if (last_group[m] == g.id()) continue;
    last_group[m] = g.id();
    auto& cls = f.classes_of[m];
    const auto& theirs = group_classes(g);
    if (cls.empty()) {
      cls = theirs;  // distinct already; a merged call of one call (every call unfolded) ends here
      continue;
    }
    // Folded, a merged call takes part in a few classes: a scan finds the ones listed.
    for (int k : theirs)
      if (std::find(cls.begin(), cls.end(), k) == cls.end()) cls.push_back(k);
  }
  for (auto& cls : f.classes_of) std::sort(cls.begin(), cls.end());
}

/// Each class's representative (a rank with its own tasks) must meet each merged call once, and every call a member makes
/// must be merged into the call its representative makes at that place.
bool consistent(const RankFolding& f, const Program& p) {
  std::vector<int> last_class(f.calls.size(), -1);
  std::vector<std::size_t> holders(f.calls.size(), 0);
  for (int k = 0; k < f.classes(); ++k) {
    const auto& rep = p.ranks[static_cast<std::size_t>(f.representative[static_cast<std::size_t>(k)])];
    for (const auto& s : rep.streams)
      for (const auto& t : s.tasks) {
        if (t.kind != TaskKind::collective) continue;
        const auto m = static_cast<std::size_t>(f.merged_of_call[static_cast<std::size_t>(t.collective)]);
        if (last_class[m] == k) return false;  // met twice by one class
        last_class[m] = k;
        ++holders[m];
      }
  }
  // A merged call waits for one arrival per class taking part: each must hold it.
  for (std::size_t m = 0; m < f.calls.size(); ++m)
    if (holders[m] != f.classes_of[m].size()) return false;
  return true;
}

}  // namespace

RankFolding identity_folding(const Program& p) {
  RankFolding f;
  const auto n = p.ranks.size();
  for (std::size_t r = 0; r < n; ++r) {
    f.class_of_rank.push_back(static_cast<int>(r));
    f.representative.push_back(static_cast<int>(r));
    f.members.push_back({static_cast<int>(r)});
  }
  UnionFind uf(p.collectives.size());
  number_merged_calls(f, p, uf);
  return f;
}

RankFolding fold_ranks(const Program& p) {
  RankFolding f;
  f.class_of_rank.assign(p.ranks.size(), -1);
  const auto shape = call_shapes(p);
  std::unordered_map<std::uint64_t, std::vector<int>> classes_by_signature;
  UnionFind uf(p.collectives.size());
  auto representative_of = [&](int k) -> const RankProgram& {
    return p.ranks[static_cast<std::size_t>(f.representative[static_cast<std::size_t>(k)])];
  };
  std::vector<std::vector<int>> rep_calls;  // class -> its representative's calls, streams in order
  for (std::size_t r = 0; r < p.ranks.size(); ++r) {
    const auto& program = p.ranks[r];
    if (program.body >= 0) {
      // A shared body: its schedule built it equal to a lower rank's, so the rank joins that
      // rank's class, provided its calls have the shapes of the class's calls at every place.
      const int k = f.class_of_rank[static_cast<std::size_t>(program.body)];
      const auto& theirs = rep_calls[static_cast<std::size_t>(k)];
      auto merge = [&](std::size_t place, int call) {
        if (shape[static_cast<std::size_t>(theirs[place])] != shape[static_cast<std::size_t>(call)]) return false;
        uf.join(theirs[place], call);
        return true;
      };
      if (program.calls_from < 0) {
        if (theirs.size() != program.calls.size()) return identity_folding(p);
        for (std::size_t i = 0; i < theirs.size(); ++i)
          if (!merge(i, program.calls[i])) return identity_folding(p);
      } else {
        // Calls taken from a lower rank of the class (a TP peer): those were checked and merged
        // with it; only the patched places are this rank's own.
        const int from = program.calls_from;
        const bool taken_from_class =
            from < static_cast<int>(r) && f.class_of_rank[static_cast<std::size_t>(from)] == k &&
            (from == program.body ||
             (p.ranks[static_cast<std::size_t>(from)].body == program.body && p.ranks[static_cast<std::size_t>(from)].calls_from < 0));
        if (!taken_from_class || !program.calls.empty()) return identity_folding(p);
        for (const auto& patch : program.call_patches)
          if (patch.place < 0 || static_cast<std::size_t>(patch.place) >= theirs.size() ||
              !merge(static_cast<std::size_t>(patch.place), patch.call))
            return identity_folding(p);
      }
      f.class_of_rank[r] = k;
      f.members[static_cast<std::size_t>(k)].push_back(static_cast<int>(r));
      continue;
    }
    // Neighbouring ranks are usually alike (TP peers, DP replicas of a stage): try the previous
    // rank's class first, which spares hashing the program. Classes hold equal programs only, so
    // whichever class matches is the one the signature would have found.
    int cls = -1;
    if (r > 0 && same_program(shape, representative_of(f.class_of_rank[r - 1]), program))
      cls = f.class_of_rank[r - 1];
    if (cls < 0) {
      auto& candidates = classes_by_signature[signature(shape, program)];
      for (int k : candidates)
        if (same_program(shape, representative_of(k), program)) {
          cls = k;
          break;
        }
      if (cls < 0) {
        cls = f.classes();
        f.representative.push_back(static_cast<int>(r));
        f.members.emplace_back();
        rep_calls.push_back(calls_of(p, static_cast<int>(r)));
        candidates.push_back(cls);
      }
    }
    f.class_of_rank[r] = cls;
    f.members[static_cast<std::size_t>(cls)].push_back(static_cast<int>(r));
    // Merge each of its calls with the representative's call at the same place, while the
    // program just compared is still in cache.
    const auto& rep = representative_of(cls);
    if (&rep == &program) continue;
    for (std::size_t s = 0; s < rep.streams.size(); ++s)
      for (std::size_t i = 0; i < rep.streams[s].tasks.size(); ++i) {
        const auto& t = rep.streams[s].tasks[i];
        if (t.kind == TaskKind::collective) uf.join(t.collective, program.streams[s].tasks[i].collective);
      }
  }
  number_merged_calls(f, p, uf);
  if (!consistent(f, p)) return identity_folding(p);
  return f;
}

bool groups_fill_nodes_alike(const Program& p, int ranks_per_node) {
  std::vector<char> seen;  // by interned group id
  const collective::RankLayout layout{ranks_per_node};
  for (const auto& call : p.collectives) {
    const auto id = call.group.id();
    if (id < seen.size() && seen[id] != 0) continue;
    if (id >= seen.size()) seen.resize(id + 1, 0);
    seen[id] = 1;
    if (!collective::shape_of(call.group, layout).even()) return false;
  }
  return true;
}

}  // namespace trainsim::program

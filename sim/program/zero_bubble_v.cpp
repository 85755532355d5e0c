#include "program/zero_bubble_v.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <deque>
#include <stdexcept>
#include <string>

namespace trainsim::program {

namespace {

// The paper's code indexes passes as categories (F, B, W) and, within one, two "chunks" in the
// order the passes run through the V: F's chunk 0 is the first leg (stage 0 -> pp - 1) and F's
// chunk 1 the second (pp - 1 -> 0); B's chunk 0 is the backward of the second leg, which starts at
// stage 0 where the loss is, and B's chunk 1 the backward of the first leg. A model chunk is
// therefore the category-chunk for F and 1 - it for B and W.
constexpr int kForward = 0, kBackward = 1, kWeight = 2;

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("zero_bubble_v_schedule: " + what);
}

struct Placed {
  int category;
  int chunk;  ///< the paper's category-chunk, not the model chunk
  long micro;
};

/// One greedy pass's result: every stage's passes in order, each pass's end time (indexed as
/// the paper's get_id), and each stage's bubble, the time it waited for a neighbour after its first
/// forward.
struct Trial {
  std::vector<std::vector<Placed>> order;
  std::vector<long> end_time;
  std::vector<long> stage_bubble;
  long max_bubble = 0;
};

class VGraph {
 public:
  VGraph(long pp, long m, const ZeroBubbleVCosts& c, const ZeroBubbleVMemory& mem)
      : pp_(pp),
        m_(m),
        comm_(c.communication),
        cost_{c.forward, c.input_gradient, c.weight_gradient},
        mem_{mem.forward, -mem.forward - mem.weight_gradient, mem.weight_gradient},
        // The paper's `max_mem or ...`: a limit of 0 means the default.
        max_mem_(mem.limit != 0 ? mem.limit : mem.forward * pp * 2) {}

  [[nodiscard]] long nodes() const { return 6 * pp_ * m_; }
  [[nodiscard]] long cost(int category) const { return cost_[static_cast<std::size_t>(category)]; }
  [[nodiscard]] long id(int category, int chunk, long stage, long micro) const {
    return ((category * 2L + chunk) * pp_ + stage) * m_ + micro;
  }

  /// try_v_schedule: each attempt re-runs the greedy pass with the previous attempt's bubbles as
  /// the allowance, and the chain stops at the first attempt that does not strictly lower the
  /// largest bubble. The paper's code recurses; since its bubbles are never negative, an
  /// approved list's maximum is the previous attempt's max_bubble, and unwinding the recursion
  /// keeps exactly the last attempt that still improved, so a loop gives the same answer without
  /// the recursion depth.
  [[nodiscard]] Trial best(bool fill_f, bool fill_b) const {
    Trial kept = attempt(fill_f, fill_b, std::vector<long>(static_cast<std::size_t>(pp_), -1));
    for (;;) {
      Trial next = attempt(fill_f, fill_b, kept.stage_bubble);
      if (next.max_bubble >= kept.max_bubble) return kept;
      kept = std::move(next);
    }
  }

 private:
  /// The state of one greedy pass and the paper's put / put_w.
  struct Pass {
    const VGraph& g;
    std::vector<std::array<long, 6>> count;  ///< per stage, passes placed by category * 2 + chunk
    std::vector<long> cur_time, mem;
    std::vector<std::deque<int>> pending_w;  ///< the chunks of B's whose W is still to run
    Trial out;

    explicit Pass(const VGraph& graph)
        : g(graph),
          count(static_cast<std::size_t>(graph.pp_), std::array<long, 6>{}),
          cur_time(static_cast<std::size_t>(graph.pp_), 0),
          mem(static_cast<std::size_t>(graph.pp_), 0),
          pending_w(static_cast<std::size_t>(graph.pp_)) {
      out.order.resize(static_cast<std::size_t>(graph.pp_));
      out.end_time.assign(static_cast<std::size_t>(graph.nodes()), -1);
      out.stage_bubble.assign(static_cast<std::size_t>(graph.pp_), 0);
    }

    long& placed(long stage, int category, int chunk) {
      return count[static_cast<std::size_t>(stage)][static_cast<std::size_t>(category * 2 + chunk)];
    }
    long& end(long node) { return out.end_time[static_cast<std::size_t>(node)]; }
    long& now(long stage) { return cur_time[static_cast<std::size_t>(stage)]; }
    long& used(long stage) { return mem[static_cast<std::size_t>(stage)]; }
    long& bubble(long stage) { return out.stage_bubble[static_cast<std::size_t>(stage)]; }
    std::deque<int>& waiting(long stage) { return pending_w[static_cast<std::size_t>(stage)]; }

    void put(int category, int chunk, long stage) {
      const long no_bubble = now(stage) + g.cost(category);
      long t = no_bubble;
      const long micro = placed(stage, category, chunk);
      require(micro < g.m_, "a stage ran out of micro-batches");
      require(used(stage) + g.mem_[static_cast<std::size_t>(category)] <= g.max_mem_,
              "the memory limit cannot hold the schedule at stage " + std::to_string(stage));
      // A pass follows its predecessor on the same stage: F1 after F0, B0 (the second leg's
      // backward, where the loss is) after F1, B1 after B0, W after its B.
      if (category == kWeight) {
        require(end(g.id(kBackward, chunk, stage, micro)) >= 0,
                "a weight gradient before its input gradient");
      } else if (category > 0 || chunk > 0) {
        const int previous = category * 2 + chunk - 1;
        require(end(g.id(previous / 2, previous % 2, stage, micro)) >= 0,
                "a pass before its predecessor");
      }
      // The neighbour that feeds this pass, and the transfer from it.
      if (category != kWeight) {
        const long feeder = chunk == 1 ? stage + 1 : stage - 1;
        if (feeder >= 0 && feeder < g.pp_) {
          const long from = end(g.id(category, chunk, feeder, micro));
          require(from >= 0,
                  "a pass before its neighbour's input (a memory limit under 2 pp forwards?)");
          t = std::max(t, from + g.comm_ + g.cost(category));
        }
      }
      // The wait before a stage's first forward is start-up, not bubble.
      if (placed(stage, kForward, 0) > 0) bubble(stage) += t - no_bubble;
      end(g.id(category, chunk, stage, micro)) = t;
      now(stage) = t;
      used(stage) += g.mem_[static_cast<std::size_t>(category)];
      out.order[static_cast<std::size_t>(stage)].push_back({category, chunk, micro});
      if (category == kBackward) waiting(stage).push_back(chunk);
      ++placed(stage, category, chunk);
    }

    void put_w(long stage) {
      require(!waiting(stage).empty(),
              "no weight gradient left to free memory at stage " + std::to_string(stage));
      const int chunk = waiting(stage).front();
      waiting(stage).pop_front();
      put(kWeight, chunk, stage);
    }

    /// The largest bubble any stage has so far, raised for `stage` by how much less than the
    /// worst stage it waited in the approved attempt: a stage that had slack may spend it.
    [[nodiscard]] long max_stage_bubble(long stage, const std::vector<long>& approved,
                                        long max_approved) const {
      long worst = 0;
      for (long b : out.stage_bubble) worst = std::max(worst, b);
      if (stage >= 0)
        worst = std::max(worst, max_approved - approved[static_cast<std::size_t>(stage)]);
      return worst;
    }

    /// Before a B or F whose input comes from `feeder` (a node id, or -1 when it has none): run
    /// the waiting W's that fit before the input arrives, then maybe one more if the wait still
    /// exceeds the stage's allowance. With no feeder the paper's code reads end_time[-1], Python's
    /// last element (the last stage's last W of model chunk 0, in practice still -1 then); kept
    /// for identity.
    void fill(long stage, long feeder, bool allowed, const std::vector<long>& approved,
              long max_approved) {
      while (!waiting(stage).empty() && feeder >= 0 &&
             end(feeder) + g.comm_ >= now(stage) + g.cost(kWeight))
        put_w(stage);
      const long input = end(feeder >= 0 ? feeder : g.nodes() - 1);
      if (!waiting(stage).empty() &&
          input + g.comm_ - now(stage) >
              max_stage_bubble(stage, approved, max_approved) - bubble(stage) &&
          allowed)
        put_w(stage);
    }
  };

  [[nodiscard]] Trial attempt(bool fill_f, bool fill_b, const std::vector<long>& approved) const {
    Pass p(*this);
    const long max_approved = *std::max_element(approved.begin(), approved.end());
    const long last = pp_ - 1;

    // Warm-up of the first leg: one forward per stage, then, from the last stage back, as many
    // more first-leg forwards on the stages before it as fit in memory and in the time until the
    // second leg's first forward comes back.
    for (long i = 0; i < pp_; ++i) p.put(kForward, 0, i);
    for (long i = last; i >= 0; --i) {
      if (i == last) {
        p.put(kForward, 1, i);
        continue;
      }
      const long back = p.end(id(kForward, 1, i + 1, 0)) + comm_;
      while (p.used(i) + mem_[0] * (2 + i * 2) <= max_mem_ && p.now(i) + cost_[0] <= back &&
             p.placed(i, kForward, 0) < m_) {
        for (long j = 0; j <= i; ++j) p.put(kForward, 0, j);
      }
      p.put(kForward, 1, i);
    }
    // Bring each stage level with the one before it, alternating the legs, from the last stage
    // down (a sweep's passes then find their inputs placed).
    int leg = 0;
    for (long i = 1; i < pp_; ++i) {
      for (;;) {
        const long mine = p.placed(i, kForward, 0) + p.placed(i, kForward, 1);
        const long before = p.placed(i - 1, kForward, 0) + p.placed(i - 1, kForward, 1);
        const long second = p.placed(i - 1, kForward, 1);
        if (!(mine < before || (p.placed(i, kForward, 1) <= second && second < m_))) break;
        for (long j = last; j >= i; --j)
          if (p.placed(j, kForward, leg) < m_) p.put(kForward, leg, j);
        leg = 1 - leg;
      }
    }

    // Steady state: each round places one B and then at most one F on every stage.
    for (long round = 0; round < 2 * m_; ++round) {
      for (long i = 0; i < pp_; ++i)
        while (p.used(i) + mem_[1] > max_mem_) p.put_w(i);

      // The second leg's backward (B chunk 0) must lead; the first leg's (B chunk 1) goes next once
      // its gradient has arrived. Those are placed first, from the last stage down, since each
      // feeds the stage below it; then the others from stage 0 up.
      std::vector<std::pair<long, int>> b_ranks;
      std::vector<long> first_leg, second_leg;
      for (long i = 0; i < pp_; ++i) {
        const long b1 = p.placed(i, kBackward, 1), b0 = p.placed(i, kBackward, 0);
        if (b1 >= b0)
          second_leg.push_back(i);
        else if (i == last || p.end(id(kBackward, 1, i + 1, b1)) >= 0 || b0 >= m_)
          first_leg.push_back(i);
        else
          second_leg.push_back(i);
      }
      for (auto it = first_leg.rbegin(); it != first_leg.rend(); ++it) b_ranks.emplace_back(*it, 1);
      for (long i : second_leg) b_ranks.emplace_back(i, 0);
      for (const auto& [i, chunk] : b_ranks) {
        long feeder = -1;
        if (chunk == 1 && i < last) feeder = id(kBackward, 1, i + 1, p.placed(i, kBackward, 1));
        if (chunk == 0 && i > 0) feeder = id(kBackward, 0, i - 1, p.placed(i, kBackward, 0));
        // Only the second leg's B obeys fill_b; the first leg's always may take a W.
        p.fill(i, feeder, chunk == 1 || fill_b, approved, max_approved);
        p.put(kBackward, chunk, i);
      }

      for (long i = 0; i < pp_; ++i) {
        const long f0 = p.placed(i, kForward, 0), f1 = p.placed(i, kForward, 1);
        if (f1 >= m_) continue;
        int chunk = -1;
        if (f1 >= f0)
          chunk = 0;
        else if (i == last || p.end(id(kForward, 1, i + 1, f1)) >= 0)
          chunk = 1;
        else if (f0 < m_ && (i == 0 || p.end(id(kForward, 0, i - 1, f0)) >= 0))
          chunk = 0;
        if (chunk < 0) continue;
        while (p.used(i) + mem_[0] > max_mem_) p.put_w(i);
        long feeder = -1;
        if (chunk == 0 && i > 0) feeder = id(kForward, 0, i - 1, p.placed(i, kForward, 0));
        if (chunk == 1 && i < last) feeder = id(kForward, 1, i + 1, p.placed(i, kForward, 1));
        p.fill(i, feeder, fill_f, approved, max_approved);
        p.put(kForward, chunk, i);
      }
    }
    for (long i = 0; i < pp_; ++i)
      while (!p.waiting(i).empty()) p.put_w(i);

    p.out.max_bubble = p.max_stage_bubble(-1, approved, max_approved);
    return std::move(p.out);
  }

  long pp_, m_, comm_;
  std::array<long, 3> cost_, mem_;
  long max_mem_;
};

using Kind = ZeroBubbleVNode::Kind;

/// A node with its tie-breaker in the paper's sort: the communication id (one per F or B, in the
/// order the stages' passes are listed), or, for compute, a value past every id.
struct Keyed {
  ZeroBubbleVNode node;
  long key;
};

bool is_receive(Kind k) { return k == Kind::receive_forward || k == Kind::receive_backward; }

}  // namespace

std::vector<std::vector<ZeroBubbleVNode>> zero_bubble_v_schedule(long pp, long micro_batches,
                                                                 const ZeroBubbleVCosts& costs,
                                                                 const ZeroBubbleVMemory& memory) {
  require(pp >= 2, "pp must be at least 2");
  require(micro_batches >= 1, "micro_batches must be at least 1");
  const VGraph g(pp, micro_batches, costs, memory);

  // get_v_schedule: the four fill variants, keeping the first strictly lowest largest bubble.
  Trial chosen;
  bool have = false;
  for (bool fill_b : {true, false})
    for (bool fill_f : {true, false}) {
      Trial t = g.best(fill_f, fill_b);
      if (!have || t.max_bubble < chosen.max_bubble) {
        chosen = std::move(t);
        have = true;
      }
    }

  // Every stage's nodes in the order the paper's code appends them (the sort below is stable, so
  // equal keys keep it): stage by stage, each pass followed by its send, the receive going to the
  // neighbour's list.
  std::vector<std::vector<Keyed>> lists(static_cast<std::size_t>(pp));
  long comm_id = 0;
  for (long i = 0; i < pp; ++i) {
    for (const Placed& x : chosen.order[static_cast<std::size_t>(i)]) {
      const long done =
          chosen.end_time[static_cast<std::size_t>(g.id(x.category, x.chunk, i, x.micro))];
      const long chunk = x.category == kForward ? x.chunk : 1 - x.chunk;
      static constexpr std::array<Kind, 3> compute{Kind::forward, Kind::input_gradient,
                                                   Kind::weight_gradient};
      lists[static_cast<std::size_t>(i)].push_back(
          {{compute[static_cast<std::size_t>(x.category)], chunk, x.micro,
            done - g.cost(x.category), done},
           -1});
      if (x.category == kWeight) continue;
      // Category-chunk 1 travels towards stage 0, chunk 0 towards the last stage; the last stage's
      // first leg feeds its second locally, with no transfer.
      const long to = x.chunk == 1 ? i - 1 : i + 1;
      if (to >= 0 && to < pp) {
        const bool fwd = x.category == kForward;
        lists[static_cast<std::size_t>(i)].push_back(
            {{fwd ? Kind::send_forward : Kind::send_backward, chunk, x.micro, done, done},
             comm_id});
        lists[static_cast<std::size_t>(to)].push_back(
            {{fwd ? Kind::receive_forward : Kind::receive_backward, chunk, x.micro, done, done},
             comm_id});
      }
      ++comm_id;  // the paper counts an id for every F and B, with or without a transfer
    }
  }

  // The time of the paper's post-validation nodes on each stage: the latest, over this stage and
  // those after it, of when stage j's first-leg forward of micro-batch min(2 (pp - 1 - j), m - 1)
  // starts, less one transfer. They are not produced, but a receive right after them was not
  // swapped before the compute preceding them, so their position still matters.
  std::vector<long> validation(static_cast<std::size_t>(pp));
  long validation_time = 0;
  for (long i = pp - 1; i >= 0; --i) {
    const long micro = std::min(2 * (pp - 1 - i), micro_batches - 1);
    validation_time = std::max(
        validation_time, chosen.end_time[static_cast<std::size_t>(g.id(kForward, 0, i, micro))] -
                             costs.forward - costs.communication);
    validation[static_cast<std::size_t>(i)] = validation_time;
  }

  std::vector<std::vector<ZeroBubbleVNode>> result(static_cast<std::size_t>(pp));
  for (long s = 0; s < pp; ++s) {
    auto& list = lists[static_cast<std::size_t>(s)];
    for (auto& k : list)
      if (k.key < 0) k.key = comm_id;  // compute waits for the communication of the same instant
    std::stable_sort(list.begin(), list.end(), [](const Keyed& a, const Keyed& b) {
      return a.node.start != b.node.start ? a.node.start < b.node.start : a.key < b.key;
    });
    // The post-validation nodes (with smaller ids than any other) precede every node starting
    // at or after their time.
    const auto barrier =
        static_cast<std::size_t>(std::count_if(list.begin(), list.end(), [&](const Keyed& k) {
          return k.node.start < validation[static_cast<std::size_t>(s)];
        }));
    // A receive due while the compute before it still runs is posted first, so that it overlaps
    // it; one pass, so a receive moves back by one place at most.
    for (std::size_t i = 1; i < list.size(); ++i) {
      const auto& before = list[i - 1].node;
      const auto& here = list[i].node;
      if (i != barrier && before.computes() && is_receive(here.kind) &&
          here.start <= before.completion)
        std::swap(list[i - 1], list[i]);
    }
    auto& out = result[static_cast<std::size_t>(s)];
    out.reserve(list.size());
    for (const auto& k : list) out.push_back(k.node);
  }
  return result;
}

}  // namespace trainsim::program

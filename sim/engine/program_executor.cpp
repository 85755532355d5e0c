#include "engine/program_executor.hpp"

#include <algorithm>
#include <memory>
#include <unordered_map>

#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Barrier.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/ConditionVariable.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Exec.hpp>
#include <simgrid/s4u/Mutex.hpp>

#include "core/error.hpp"

namespace sg4 = simgrid::s4u;

namespace trainsim::engine {

namespace {

using program::TaskKind;

class Executor {
public:
  Executor(const program::Program& prog, const Platform& platform,
           const std::function<collective::CollectivePlan(const program::CollectiveCall&)>& plan,
           bool record)
      : prog_(prog), platform_(platform), record_(record) {
    for (const auto& c : prog.collectives) {
      plans_.push_back(plan(c));
      const auto members = static_cast<unsigned>(c.group.size());
      CollectiveState st;
      st.arrival = sg4::Barrier::create(members);
      for (const auto& ph : plans_.back().phases) {
        st.phase_end.push_back(sg4::Barrier::create(members));
        std::unordered_map<int, std::vector<std::size_t>> by_src;
        Seconds hop = 0;
        for (std::size_t f = 0; f < ph.flows.size(); ++f) {
          // Each member starts the flows it sends: a sender outside the group would never run.
          TRAINSIM_CHECK(std::find(c.group.begin(), c.group.end(), ph.flows[f].src) != c.group.end(),
                         "collective " + c.name + " has a flow from a rank outside its group");
          by_src[ph.flows[f].src].push_back(f);
          hop = std::max(hop, platform.route_latency(ph.flows[f].src, ph.flows[f].dst));
        }
        st.flows_by_src.push_back(std::move(by_src));
        st.latency.push_back(ph.fixed_latency + ph.steps * (ph.step_latency + hop));
      }
      collectives_.push_back(std::move(st));
    }
    for (const auto& rp : prog.ranks) {
      std::vector<std::vector<char>> done;
      for (const auto& s : rp.streams) {
        done.emplace_back(s.tasks.size(), 0);
        total_tasks_ += s.tasks.size();
      }
      done_.push_back(std::move(done));
      memory_.push_back(rp.resident);
      result_.peak_memory.push_back(rp.resident);
      result_.peak_memory_time.push_back(0);
      if (record_) result_.memory.push_back({rp.rank, 0, rp.resident});
      rank_mutex_.push_back(sg4::Mutex::create());
      std::vector<sg4::ConditionVariablePtr> cvs;
      for (std::size_t s = 0; s < rp.streams.size(); ++s) cvs.push_back(sg4::ConditionVariable::create());
      stream_cv_.push_back(std::move(cvs));
      waiting_.emplace_back(rp.streams.size(), -1);
    }
  }

  ExecutionResult run() {
    for (const auto& rp : prog_.ranks)
      for (std::size_t s = 0; s < rp.streams.size(); ++s) {
        const int rank = rp.rank;
        const int stream = static_cast<int>(s);
        sg4::Actor::create("r" + std::to_string(rank) + "." + rp.streams[s].name,
                           platform_.rank_host[rank], [this, rank, stream] { run_stream(rank, stream); });
      }
    sg4::Engine::get_instance()->run();
    result_.completed = finished_tasks_ == total_tasks_;
    return std::move(result_);
  }

private:
  static Seconds now() { return sg4::Engine::get_clock(); }

  [[nodiscard]] bool deps_done(int rank, const program::Task& t) const {
    return std::all_of(t.deps.begin(), t.deps.end(),
                       [&](const program::TaskRef& d) { return done_[rank][d.stream][d.index] != 0; });
  }

  void run_stream(int rank, int stream) {
    const auto& tasks = prog_.ranks[rank].streams[stream].tasks;
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      const auto& t = tasks[i];
      if (!deps_done(rank, t)) {
        // Sleep until a finishing task of another stream finds this one ready (no spurious
        // wake-ups: with several streams per rank they dominated the simulator's time).
        std::unique_lock<sg4::Mutex> lock(*rank_mutex_[rank]);
        waiting_[rank][stream] = static_cast<int>(i);
        while (!deps_done(rank, t)) stream_cv_[rank][stream]->wait(lock);
        waiting_[rank][stream] = -1;
      }
      const Seconds start = now();
      change_memory(rank, t.alloc + t.workspace);
      if (t.kind == TaskKind::compute) {
        if (t.duration > 0) sg4::this_actor::execute(t.duration * platform_.host_speed);
      } else {
        run_collective(t.collective, rank);
      }
      change_memory(rank, -(t.workspace + t.release));
      done_[rank][stream][i] = 1;
      ++finished_tasks_;
      if (record_) result_.records.push_back({rank, stream, static_cast<int>(i), start, now()});
      result_.makespan = std::max(result_.makespan, now());
      const auto& streams = prog_.ranks[rank].streams;
      for (std::size_t other = 0; other < streams.size(); ++other) {
        const int w = waiting_[rank][other];
        if (w >= 0 && deps_done(rank, streams[other].tasks[static_cast<std::size_t>(w)]))
          stream_cv_[rank][other]->notify_one();
      }
    }
  }

  void change_memory(int rank, Bytes delta) {
    if (delta == 0) return;
    Bytes& m = memory_[rank];
    m += delta;
    if (m > result_.peak_memory[rank]) {
      result_.peak_memory[rank] = m;
      result_.peak_memory_time[rank] = now();
    }
    if (record_) result_.memory.push_back({rank, now(), m});
  }

  /// Every member waits for the others, then, phase by phase, sends its own flows, waits for
  /// them, meets the others at the phase's end and pays the phase's step latency. Each actor
  /// starting only its own flows keeps SimGrid's per-actor activity lists short.
  void run_collective(int c, int rank) {
    auto& st = collectives_[c];
    st.arrival->wait();
    const auto& phases = plans_[c].phases;
    for (std::size_t p = 0; p < phases.size(); ++p) {
      std::vector<sg4::CommPtr> flows;
      auto it = st.flows_by_src[p].find(rank);
      if (it != st.flows_by_src[p].end()) {
        for (std::size_t f : it->second) {
          const auto& flow = phases[p].flows[f];
          if (flow.bytes <= 0) continue;
          flows.push_back(sg4::Comm::sendto_async(platform_.rank_host[flow.src],
                                                  platform_.rank_host[flow.dst],
                                                  static_cast<uint64_t>(flow.bytes)));
        }
      }
      for (auto& comm : flows) comm->wait();
      st.phase_end[p]->wait();
      if (st.latency[p] > 0) sg4::this_actor::sleep_for(st.latency[p]);
    }
  }

  struct CollectiveState {
    sg4::BarrierPtr arrival;
    std::vector<sg4::BarrierPtr> phase_end;
    std::vector<std::unordered_map<int, std::vector<std::size_t>>> flows_by_src;
    std::vector<Seconds> latency;
  };

  const program::Program& prog_;
  const Platform& platform_;
  bool record_;
  std::vector<collective::CollectivePlan> plans_;
  std::vector<CollectiveState> collectives_;
  std::vector<std::vector<std::vector<char>>> done_;
  std::vector<sg4::MutexPtr> rank_mutex_;
  std::vector<std::vector<sg4::ConditionVariablePtr>> stream_cv_;  ///< [rank][stream]
  std::vector<std::vector<int>> waiting_;  ///< [rank][stream]: task index it sleeps on, or -1
  std::size_t total_tasks_ = 0;
  std::size_t finished_tasks_ = 0;
  ExecutionResult result_;
  std::vector<Bytes> memory_;  ///< per rank, now
};

}  // namespace

ExecutionResult execute_program(
    const program::Program& prog, const Platform& platform,
    const std::function<collective::CollectivePlan(const program::CollectiveCall&)>& plan,
    bool record) {
  Executor ex(prog, platform, plan, record);
  return ex.run();
}

}  // namespace trainsim::engine

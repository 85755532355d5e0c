#include "engine/program_executor.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <cstdint>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Barrier.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Exec.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>

#include "core/error.hpp"
#include "engine/activity_start.hpp"
#include "memory/caching_allocator.hpp"
#include "model/host_dispatch.hpp"
#include "program/alike_merged_calls.hpp"
#include "program/rank_folding.hpp"

namespace sg4 = simgrid::s4u;

namespace trainsim::engine {

namespace {

using program::TaskKind;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

program::RankFolding timed_folding(const program::Program& prog, bool fold, int ranks_per_node, double& wall_s) {
  const auto start = std::chrono::steady_clock::now();
  fold = fold && program::groups_fill_nodes_alike(prog, ranks_per_node);
  auto f = fold ? program::fold_ranks(prog) : program::identity_folding(prog);
  wall_s = seconds_since(start);
  return f;
}

class Executor {
public:
  Executor(const program::Program& prog, const Platform& platform,
           const std::function<collective::CollectivePlan(const program::CollectiveCall&)>& plan,
           const ExecuteOptions& options, program::RankFolding folding, double fold_wall_s)
      : prog_(prog),
        platform_(platform),
        record_(options.record),
        sm_count_(options.sm_count),
        held_sm_slowdown_(options.held_sm_slowdown),
        options_(options),
        prepare_start_(std::chrono::steady_clock::now()),
        fold_(std::move(folding)) {
    result_.fold_wall_s = fold_wall_s;
    // Allocations follow the host's issue only where the program says how the host issues.
    host_issue_ = options.device_memory > 0 && options.allocate_at_host_issue && prog_.host_per_kernel > 0 &&
                  prog_.host_bounds_modelled;
    result_.allocated_at_host_issue = host_issue_;
    hbm_links_.insert(platform_.hbm_link.begin(), platform_.hbm_link.end());
    if (!platform_.has_cpu())
      for (const auto& rp : prog_.ranks)
        for (const auto& s : rp.streams)
          for (const auto& t : s.tasks)
            TRAINSIM_CHECK(t.kind != TaskKind::host_copy,
                           "task " + t.name + " copies to host memory, but the topology's node has no cpu vertex");
    {
      // Merged calls that make the same calls share the flows planned for the first of them.
      const auto alike = program::alike_merged_calls(prog_, fold_);
      collectives_.reserve(alike.size());
      for (std::size_t m = 0; m < alike.size(); ++m) collectives_.push_back(merge_calls(m, alike[m], plan));
    }
    for (int k = 0; k < fold_.classes(); ++k) {
      const auto& rp = rep_program(k);
      std::vector<std::vector<Seconds>> done;
      for (const auto& s : rp.streams) {
        done.emplace_back(s.tasks.size(), kNotDone);
        total_tasks_ += s.tasks.size();
      }
      done_.push_back(std::move(done));
      memory_.push_back(rp.resident);
      peak_.push_back(rp.resident);
      if (options.device_memory > 0) {
        // Model states and the runtime's buffers: allocated once before the step, on the
        // default (compute) stream.
        allocators_.emplace_back(options.device_memory);
        live_.emplace_back();
        kept_.emplace_back();
        transient_blocks_.emplace_back(rp.streams.size());
        allocator_oom_.push_back(
            allocators_.back().malloc(std::max<Bytes>(0, rp.resident - options.unmanaged_memory), 0).out_of_memory);
      }
      peak_time_.push_back(0);
      if (record_)
        for (int r : fold_.members[static_cast<std::size_t>(k)])
          if (recorded(r)) result_.memory.push_back({r, 0, rp.resident});
      stream_actor_.emplace_back(rp.streams.size());
      waiting_.emplace_back(rp.streams.size(), -1);
      held_sms_.push_back(0);
      held_sm_exec_.emplace_back();
      compute_stream_.push_back(only_compute_stream(rp));
      host_free_.push_back(0);
      if (host_issue_) {
        std::vector<std::vector<Seconds>> unset;
        for (const auto& s : rp.streams) unset.emplace_back(s.tasks.size(), kNotDone);
        started_.push_back(unset);
        issue_end_.push_back(unset);
        issue_.push_back(std::move(unset));
      }
    }
    result_.prepare_wall_s = seconds_since(prepare_start_);
  }

  ExecutionResult run() {
    const auto run_start = std::chrono::steady_clock::now();
    for (int k = 0; k < fold_.classes(); ++k) {
      const auto& rp = rep_program(k);
      for (std::size_t s = 0; s < rp.streams.size(); ++s) {
        const int stream = static_cast<int>(s);
        stream_actor_[static_cast<std::size_t>(k)][s] =
            sg4::Actor::create("r" + std::to_string(rp.rank) + "." + rp.streams[s].name,
                               platform_.rank_host[static_cast<std::size_t>(rp.rank)],
                               [this, k, stream] { run_stream(k, stream); });
      }
    }
    sg4::Engine::get_instance()->run();
    if (host_issue_) {
      Seconds stall = 0;
      alloc_events_.resize(static_cast<std::size_t>(fold_.classes()));
      slots_.assign(static_cast<std::size_t>(fold_.classes()), 0);
      for (int k = 0; k < fold_.classes(); ++k) {
        issue_times(k);
        record_class_allocations(k);
        stall = std::max(stall, replay_allocations(k));
      }
      result_.makespan += stall;
    }
    result_.completed = finished_tasks_ == total_tasks_;
    result_.classes = fold_.classes();
    result_.peak_memory.assign(prog_.ranks.size(), 0);
    result_.peak_memory_time.assign(prog_.ranks.size(), 0);
    for (std::size_t r = 0; r < prog_.ranks.size(); ++r) {
      const auto k = static_cast<std::size_t>(fold_.class_of_rank[r]);
      result_.peak_memory[r] = peak_[k];
      result_.peak_memory_time[r] = peak_time_[k];
      if (allocators_.empty()) continue;
      result_.peak_reserved.push_back(allocators_[k].peak_reserved());
      result_.allocator_retries.push_back(allocators_[k].retries());
      result_.allocator_out_of_memory.push_back(allocator_oom_[k]);
    }
    result_.run_wall_s = seconds_since(run_start);
    return std::move(result_);
  }

private:
  static Seconds now() { return sg4::Engine::get_clock(); }

  /// Whether rank `r`'s spans and memory changes are kept (ExecuteOptions::record_ranks).
  [[nodiscard]] bool recorded(int r) const {
    const auto& keep = options_.record_ranks;
    return keep.empty() || (static_cast<std::size_t>(r) < keep.size() && keep[static_cast<std::size_t>(r)]);
  }

  [[nodiscard]] const program::RankProgram& rep_program(int cls) const {
    return prog_.ranks[static_cast<std::size_t>(fold_.representative[static_cast<std::size_t>(cls)])];
  }

  [[nodiscard]] bool deps_done(int cls, const program::Task& t) const {
    return std::all_of(t.deps.begin(), t.deps.end(),
                       [&](const program::TaskRef& d) { return done_[cls][d.stream][d.index] != kNotDone; });
  }

  /// When the last of a ready task's dependencies finished.
  [[nodiscard]] Seconds deps_finished(int cls, const program::Task& t) const {
    Seconds latest = 0;
    for (const auto& d : t.deps) latest = std::max(latest, done_[cls][d.stream][d.index]);
    return latest;
  }

  /// Runs one stream of a class's representative; the class's members are credited with it.
  void run_stream(int cls, int stream) {
    const auto& streams = rep_program(cls).streams;
    const auto& tasks = streams[static_cast<std::size_t>(stream)].tasks;
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      const auto& t = tasks[i];
      if (!deps_done(cls, t)) {
        // Suspended until a finishing task of another stream finds this one ready (no spurious
        // wake-ups: with several streams per rank they dominated the simulator's time). Actors
        // run one at a time, so no lock guards waiting_; a suspension is one simcall where a
        // condition variable took four (lock, wait with its timeout action, unlock, notify).
        waiting_[cls][stream] = static_cast<int>(i);
        while (!deps_done(cls, t)) sg4::this_actor::suspend();
        waiting_[cls][stream] = -1;
      }
      if (prog_.launch_blocking && t.kind == TaskKind::collective) {
        // CUDA_LAUNCH_BLOCKING: the host calls the collective once it is free, and its call
        // holds the host until the collective completes (below). Tasks of the rank's other
        // streams already issued are not held back while it is in flight: the engine has no
        // single issue order across streams.
        const Seconds launch = std::max(host_free_[cls], now()) + prog_.collective_launch;
        if (launch > now()) sg4::this_actor::sleep_for(launch - now());
      }
      const Seconds start = now();
      change_memory(cls, t.alloc + t.workspace);
      const int workspace_block = allocators_.empty() || host_issue_ ? -1 : allocate(cls, stream, t);
      // When the host issued the task (ExecuteOptions::allocate_at_host_issue), where its clock
      // times it: compute tasks whose kernels it issues, its own Python work; the rest is
      // placed after the run (issue_times).
      Seconds issue = kNotDone, issue_end = kNotDone;
      if (host_issue_) started_[cls][stream][i] = start;
      if (t.kind == TaskKind::compute) {
        // Host dispatch: the task's kernels start once the host has issued them (its issue
        // restarts only after the dependencies where the host synchronises), and its last kernel
        // cannot start before the host issued it.
        const bool issued = prog_.host_per_kernel > 0 && t.kernels > 0;
        Seconds issue_tail = 0;
        if (issued) {
          Seconds host_start = host_free_[cls];
          // Under CUDA_LAUNCH_BLOCKING every launch waited for its kernel, so what the task
          // depends on had ended before the host reached it.
          if (t.host_sync || prog_.launch_blocking) host_start = std::max(host_start, deps_finished(cls, t));
          const Seconds per_kernel = t.host_per_kernel > 0 ? t.host_per_kernel : prog_.host_per_kernel;
          const auto d = prog_.launch_blocking ? model::dispatch_blocking(host_start, now(), t.kernels, per_kernel, t.duration)
                                               : model::dispatch(host_start, now(), t.kernels, per_kernel, t.duration);
          host_free_[cls] = d.host_end;
          issue_tail = prog_.launch_blocking ? d.device_end : d.host_end + t.duration / t.kernels;
          issue = host_start;
          issue_end = d.host_end;
          if (d.device_start > now()) sg4::this_actor::sleep_for(d.device_start - now());
        }
        if (!platform_.hbm_link.empty() && t.memory_bound > 0) {
          run_interleaved(cls, t);
        } else if (t.duration > 0) {
          ++result_.execs;
          start_exec(sg4::this_actor::get_host(), t.duration * platform_.host_speed)->wait();
        }
        if (issued && issue_tail > now()) sg4::this_actor::sleep_for(issue_tail - now());
        // The host returned from the last launch when the kernel ended, HBM sharing included.
        if (issued && prog_.launch_blocking) host_free_[cls] = std::max(host_free_[cls], now());
      } else if (t.kind == TaskKind::host) {
        // Python work of the same host thread that issues the kernels: after what it issued.
        if (prog_.host_per_kernel > 0 && host_free_[cls] > now()) sg4::this_actor::sleep_for(host_free_[cls] - now());
        issue = now();
        if (t.duration > 0) sg4::this_actor::sleep_for(t.duration);
        if (prog_.host_per_kernel > 0) host_free_[cls] = now();
        issue_end = now();
      } else if (t.kind == TaskKind::host_copy) {
        run_host_copy(cls, t);
      } else {
        run_collective(fold_.merged_of_call[static_cast<std::size_t>(t.collective)], cls, stream, i);
        // Under CUDA_LAUNCH_BLOCKING the call returned when the collective had completed.
        if (prog_.launch_blocking) host_free_[cls] = std::max(host_free_[cls], now());
      }
      change_memory(cls, -(t.workspace + t.release + t.release_borrowed));
      if (host_issue_) {
        issue_[cls][stream][i] = issue;
        issue_end_[cls][stream][i] = issue_end;
      } else if (!allocators_.empty()) {
        free_blocks(cls, stream, t, workspace_block);
      }
      done_[cls][stream][i] = now();
      ++finished_tasks_;
      if (record_)
        for (int r : fold_.members[static_cast<std::size_t>(cls)])
          if (recorded(r)) result_.records.push_back({r, stream, static_cast<int>(i), start, now()});
      result_.makespan = std::max(result_.makespan, now());
      for (std::size_t other = 0; other < streams.size(); ++other) {
        const int w = waiting_[cls][other];
        if (w >= 0 && deps_done(cls, streams[other].tasks[static_cast<std::size_t>(w)]))
          stream_actor_[cls][other]->resume();
      }
    }
  }

  /// When the host issued each task of a class, from the times its clock gave during the run
  /// (issue_, issue_end_: compute tasks whose kernels it issues, its Python work; kNotDone for
  /// the rest): no earlier than the task before it on its stream, than the issue of what it
  /// depends on (the host issues in dependency order) or, where it synchronises first, that
  /// task's end, and than the task the host issues before it (Task::host_after); never after the
  /// device started it. Tasks that never started stay kNotDone.
  void issue_times(int cls) {
    const auto& streams = rep_program(cls).streams;
    auto& issue = issue_[cls];
    auto& issue_end = issue_end_[cls];
    std::vector<std::vector<std::uint8_t>> state;  // 0 unseen, 1 waiting for its predecessors, 2 placed
    for (const auto& st : streams) state.emplace_back(st.tasks.size(), 0);
    auto predecessors = [&](program::TaskRef r) {
      std::vector<program::TaskRef> pre;
      const auto& t = streams[r.stream].tasks[r.index];
      if (r.index > 0) pre.push_back({r.stream, r.index - 1});
      for (const auto& d : t.deps) pre.push_back(d);
      if (t.host_after.stream >= 0) pre.push_back(t.host_after);
      return pre;
    };
    std::vector<program::TaskRef> stack;
    for (int s0 = 0; s0 < static_cast<int>(streams.size()); ++s0)
      for (int i0 = 0; i0 < static_cast<int>(streams[s0].tasks.size()); ++i0) {
        if (state[s0][i0] == 2) continue;
        stack.push_back({s0, i0});
        while (!stack.empty()) {
          const auto r = stack.back();
          auto& st = state[r.stream][r.index];
          if (st == 2) {
            stack.pop_back();
            continue;
          }
          const auto pre = predecessors(r);
          bool ready = true;
          if (st == 0) {
            st = 1;
            for (const auto& q : pre)
              if (state[q.stream][q.index] == 0) {
                stack.push_back(q);
                ready = false;
              }
            if (!ready) continue;
          }
          stack.pop_back();
          st = 2;
          const auto& t = streams[r.stream].tasks[r.index];
          const Seconds started = started_[cls][r.stream][r.index];
          if (started == kNotDone) continue;
          Seconds& begin = issue[r.stream][r.index];
          Seconds& end = issue_end[r.stream][r.index];
          if (t.kind == TaskKind::host) continue;  // the host's own work: timed as it ran
          Seconds at = std::max<Seconds>(begin, 0);
          for (const auto& q : pre) {
            // A predecessor still waiting is on a cycle through host_after: left out.
            if (state[q.stream][q.index] != 2 || issue[q.stream][q.index] == kNotDone) continue;
            const bool dependency = std::find(t.deps.begin(), t.deps.end(), q) != t.deps.end();
            at = std::max(at, t.host_sync && dependency ? done_[cls][q.stream][q.index] : issue_end[q.stream][q.index]);
          }
          const Seconds shift = begin == kNotDone ? 0 : std::max<Seconds>(0, std::min(at, started) - begin);
          end = end == kNotDone ? std::min(at, started) : end + shift;
          begin = std::min(at, started);
          end = std::max(end, begin);
        }
      }
  }

  /// The allocator's events of every task of a class, tasks in the order the host issued them.
  void record_class_allocations(int cls) {
    const auto& streams = rep_program(cls).streams;
    std::vector<std::tuple<Seconds, Seconds, int, int>> order;  // issue, device start, stream, task
    for (int s0 = 0; s0 < static_cast<int>(streams.size()); ++s0)
      for (int i0 = 0; i0 < static_cast<int>(streams[s0].tasks.size()); ++i0)
        if (issue_[cls][s0][i0] != kNotDone && done_[cls][s0][i0] != kNotDone)
          order.emplace_back(issue_[cls][s0][i0], started_[cls][s0][i0], s0, i0);
    std::sort(order.begin(), order.end());
    for (const auto& [at, started, s0, i0] : order)
      record_allocations(cls, s0, streams[s0].tasks[i0], at, issue_end_[cls][s0][i0], done_[cls][s0][i0]);
  }

  /// Allocator events of a task under host issue: its workspace and allocation requested when
  /// the host issues it; freed when the host has issued it, into the pool of the stream that
  /// allocated them when that is the task's own stream (stream order makes the reuse safe), or
  /// else held (record_stream) until the device has finished the task, unless the framework
  /// frees another stream's block without record_stream (Task::borrowed_free_at_issue).
  void record_allocations(int cls, int stream, const program::Task& t, Seconds issue, Seconds issue_end,
                          Seconds device_end) {
    auto& ev = alloc_events_[static_cast<std::size_t>(cls)];
    auto& slots = slots_[static_cast<std::size_t>(cls)];
    const int pool = t.alloc_pool >= 0 ? t.alloc_pool : stream;
    if (t.allocations >= 0) {
      // The host makes a sequence's requests one by one while it issues the task's ops: spread
      // evenly from its issue to its end, in order.
      const auto& steps = prog_.allocation_sequences[static_cast<std::size_t>(t.allocations)].steps;
      const long first_slot = slots;
      for (const auto& step : steps)
        if (step.kind == program::AllocationStep::transient) slots = std::max(slots, first_slot + step.slot + 1);
      const double gaps = std::max<double>(1, static_cast<double>(steps.size()) - 1);
      for (std::size_t i = 0; i < steps.size(); ++i) {
        const auto& step = steps[i];
        const Seconds at = issue + (issue_end - issue) * static_cast<double>(i) / gaps;
        switch (step.kind) {
          case program::AllocationStep::transient:
            ev.push_back({at, AllocEvent::malloc, stream, step.bytes, first_slot + step.slot});
            break;
          case program::AllocationStep::free_transient:
            ev.push_back({at, AllocEvent::free_slot, stream, 0, first_slot + step.slot});
            break;
          case program::AllocationStep::keep: ev.push_back({at, AllocEvent::malloc_kept, stream, step.bytes, -1}); break;
          case program::AllocationStep::free_kept: ev.push_back({at, AllocEvent::free_kept, stream, step.bytes, -1}); break;
          case program::AllocationStep::task_alloc:
            if (t.alloc > 0) ev.push_back({at, AllocEvent::malloc, stream, t.alloc, -1});
            break;
        }
      }
    } else if (t.workspace > 0) {
      const long slot = slots++;
      ev.push_back({issue, AllocEvent::malloc, pool, t.workspace, slot});
      if (t.alloc > 0) ev.push_back({issue, AllocEvent::malloc, pool, t.alloc, -1});
      if (pool == stream) {
        ev.push_back({issue_end, AllocEvent::free_slot, pool, t.workspace, slot});
      } else {
        ev.push_back({issue_end, AllocEvent::free_slot_after_use, pool, t.workspace, slot});
        ev.push_back({device_end, AllocEvent::complete, pool, t.workspace, slot});
      }
    } else if (t.alloc > 0) {
      ev.push_back({issue, AllocEvent::malloc, pool, t.alloc, -1});
    }
    if (t.release > 0 && t.allocations < 0) ev.push_back({issue_end, AllocEvent::free_live, stream, t.release, -1});
    if (t.release_borrowed > 0) {
      const int from = t.borrowed_pool >= 0 ? t.borrowed_pool : stream;
      if (t.borrowed_free_at_issue || from == stream) {
        ev.push_back({issue_end, AllocEvent::free_live, from, t.release_borrowed, -1});
      } else {
        const long slot = slots++;
        ev.push_back({issue_end, AllocEvent::free_live_after_use, from, t.release_borrowed, slot});
        ev.push_back({device_end, AllocEvent::complete, from, t.release_borrowed, slot});
      }
    }
  }

  /// Replays a class's allocator events in time order (ties in the order they were made) through
  /// its caching allocator. Returns what the retries stall the step.
  Seconds replay_allocations(int cls) {
    const auto c = static_cast<std::size_t>(cls);
    auto& ev = alloc_events_[c];
    // Ties in the order the events were made: by task in the host's order, then within a task.
    std::stable_sort(ev.begin(), ev.end(), [](const AllocEvent& x, const AllocEvent& y) { return x.time < y.time; });
    auto& a = allocators_[c];
    std::vector<int> slot_block(static_cast<std::size_t>(slots_[c]), -1);
    std::vector<long> slot_use(static_cast<std::size_t>(slots_[c]), 0);
    std::unordered_map<int, long> use_of_block;  // the latest record_stream free of each block
    long uses = 0;
    std::map<std::pair<int, Bytes>, std::deque<int>> live;
    std::map<std::pair<int, Bytes>, std::vector<int>> kept;  // saved tensors, newest last
    Seconds stall = 0;
    auto free_after_use = [&](int block, long slot) {
      a.free_after_use(block);
      slot_block[static_cast<std::size_t>(slot)] = block;
      slot_use[static_cast<std::size_t>(slot)] = use_of_block[block] = ++uses;
    };
    auto pop_live = [&](const AllocEvent& e) {
      const auto it = live.find({e.pool, e.bytes});
      if (it == live.end() || it->second.empty()) return -1;  // its request ran out of memory
      const int block = it->second.front();
      it->second.pop_front();
      return block;
    };
    for (const auto& e : ev) {
      switch (e.kind) {
        case AllocEvent::malloc: {
          const auto out = a.malloc(e.bytes, e.pool);
          if (out.retried)
            stall += options_.retry_fixed + options_.retry_per_byte * (out.block >= 0 ? a.block_size(out.block) : e.bytes);
          if (out.out_of_memory) allocator_oom_[c] = true;
          if (out.block < 0) break;
          if (e.slot >= 0) slot_block[static_cast<std::size_t>(e.slot)] = out.block;
          else live[{e.pool, e.bytes}].push_back(out.block);
          break;
        }
        case AllocEvent::malloc_kept: {
          const auto out = a.malloc(e.bytes, e.pool);
          if (out.retried)
            stall += options_.retry_fixed + options_.retry_per_byte * (out.block >= 0 ? a.block_size(out.block) : e.bytes);
          if (out.out_of_memory) allocator_oom_[c] = true;
          if (out.block >= 0) kept[{e.pool, e.bytes}].push_back(out.block);
          break;
        }
        case AllocEvent::free_kept: {
          auto& held = kept[{e.pool, e.bytes}];
          if (held.empty()) break;  // its request ran out of memory
          a.free(held.back());
          held.pop_back();
          break;
        }
        case AllocEvent::free_slot:
          if (const int b = slot_block[static_cast<std::size_t>(e.slot)]; b >= 0) a.free(b);
          break;
        case AllocEvent::free_slot_after_use:
          if (const int b = slot_block[static_cast<std::size_t>(e.slot)]; b >= 0) free_after_use(b, e.slot);
          break;
        case AllocEvent::free_live:
          if (const int b = pop_live(e); b >= 0) a.free(b);
          break;
        case AllocEvent::free_live_after_use:
          if (const int b = pop_live(e); b >= 0) free_after_use(b, e.slot);
          break;
        case AllocEvent::complete: {
          // A retry's synchronize may have returned the block already, and its id been reused.
          const int b = slot_block[static_cast<std::size_t>(e.slot)];
          if (b >= 0 && use_of_block[b] == slot_use[static_cast<std::size_t>(e.slot)]) a.complete(b);
          break;
        }
      }
    }
    ev.clear();
    ev.shrink_to_fit();
    return stall;
  }

  /// The caching allocator serves the task's allocation and workspace from their pool; a retry
  /// stalls this stream (ExecuteOptions::retry_fixed / retry_per_byte). Returns the workspace's block.
  int allocate(int cls, int stream, const program::Task& t) {
    auto& a = allocators_[static_cast<std::size_t>(cls)];
    const int pool = t.alloc_pool >= 0 ? t.alloc_pool : stream;
    Seconds stall = 0;
    auto request = [&](Bytes bytes) {
      const auto out = a.malloc(bytes, pool);
      if (out.retried) stall += options_.retry_fixed + options_.retry_per_byte * (out.block >= 0 ? a.block_size(out.block) : bytes);
      if (out.out_of_memory) allocator_oom_[static_cast<std::size_t>(cls)] = true;
      return out.block;
    };
    if (t.allocations >= 0) {
      sequence_steps(cls, stream, t, true, request);
      if (stall > 0) sg4::this_actor::sleep_for(stall);
      return -1;
    }
    // The workspace first: a backward's recomputed activations and temporaries exist before the
    // weight gradient it allocates is produced.
    const int workspace = t.workspace > 0 ? request(t.workspace) : -1;
    if (t.alloc > 0) {
      const int block = request(t.alloc);
      if (block >= 0) live_[static_cast<std::size_t>(cls)][{pool, t.alloc}].push_back(block);
    }
    if (stall > 0) sg4::this_actor::sleep_for(stall);
    return workspace;
  }

  /// A task's allocation sequence under device-time allocation: its steps up to its last request
  /// when it starts (`starting`), the frees after it when it ends. Kept tensors go to and come
  /// from the newest of their pool and size; the task's own `alloc` joins the live ones.
  template <class Request>
  void sequence_steps(int cls, int stream, const program::Task& t, bool starting, Request&& request) {
    const auto c = static_cast<std::size_t>(cls);
    auto& a = allocators_[c];
    const auto& seq = prog_.allocation_sequences[static_cast<std::size_t>(t.allocations)];
    const int split = program::last_request(seq);
    auto& slots = transient_blocks_[c][static_cast<std::size_t>(stream)];
    const int begin = starting ? 0 : split + 1;
    const int end = starting ? split + 1 : static_cast<int>(seq.steps.size());
    for (int i = begin; i < end; ++i) {
      const auto& step = seq.steps[static_cast<std::size_t>(i)];
      switch (step.kind) {
        case program::AllocationStep::transient:
          if (slots.size() <= static_cast<std::size_t>(step.slot)) slots.resize(static_cast<std::size_t>(step.slot) + 1, -1);
          slots[static_cast<std::size_t>(step.slot)] = request(step.bytes);
          break;
        case program::AllocationStep::free_transient:
          if (const int b = slots[static_cast<std::size_t>(step.slot)]; b >= 0) a.free(b);
          slots[static_cast<std::size_t>(step.slot)] = -1;
          break;
        case program::AllocationStep::keep:
          if (const int b = request(step.bytes); b >= 0) kept_[c][{stream, step.bytes}].push_back(b);
          break;
        case program::AllocationStep::free_kept: {
          auto& held = kept_[c][{stream, step.bytes}];
          if (held.empty()) break;  // its request ran out of memory
          a.free(held.back());
          held.pop_back();
          break;
        }
        case program::AllocationStep::task_alloc:
          if (t.alloc > 0)
            if (const int b = request(t.alloc); b >= 0) live_[c][{stream, t.alloc}].push_back(b);
          break;
      }
    }
  }

  /// Frees the task's workspace and what it releases: the oldest live allocation of that size
  /// from that pool (a forward's activations, a gather's unit, a gradient).
  void free_blocks(int cls, int stream, const program::Task& t, int workspace_block) {
    auto& a = allocators_[static_cast<std::size_t>(cls)];
    if (t.allocations >= 0)
      sequence_steps(cls, stream, t, false, [](Bytes) { return -1; });
    if (workspace_block >= 0) a.free(workspace_block);
    auto release = [&](int pool, Bytes bytes) {
      if (bytes <= 0) return;
      auto& live = live_[static_cast<std::size_t>(cls)];
      const auto it = live.find({pool, bytes});
      if (it == live.end() || it->second.empty()) return;  // its request ran out of memory
      a.free(it->second.front());
      it->second.pop_front();
    };
    if (t.allocations < 0) release(stream, t.release);
    release(t.borrowed_pool >= 0 ? t.borrowed_pool : stream, t.release_borrowed);
  }

  void change_memory(int cls, Bytes delta) {
    if (delta == 0) return;
    Bytes& m = memory_[cls];
    m += delta;
    if (m > peak_[cls]) {
      peak_[cls] = m;
      peak_time_[cls] = now();
    }
    if (record_)
      for (int r : fold_.members[static_cast<std::size_t>(cls)])
        if (recorded(r)) result_.memory.push_back({r, now(), m});
  }

  /// Every class taking part waits for the others, then, phase by phase, sends the flows of its
  /// members, waits for them, meets the others at the phase's end and pays the phase's step
  /// latency. Each actor starting only its own flows keeps SimGrid's per-actor activity lists
  /// short.
  void run_collective(int merged, int cls, int stream, std::size_t index) {
    const auto& st = collectives_[static_cast<std::size_t>(merged)];
    if (st.arrival) st.arrival->wait();
    // From when every member is there: a real kernel also holds its SMs while it spins waiting
    // for late peers, but the programs issue some calls (pre-posted pipeline receives) long
    // before their kernel would launch, so only the transfer is counted.
    const SmHold hold = compute_waits_for(cls, stream, index) ? SmHold{} : hold_sms(cls, st.flows->channels);
    const auto& phases = st.flows->phases;
    for (std::size_t p = 0; p < phases.size(); ++p) {
      const auto& by_class = phases[p].transfers_by_class;
      const auto flows = static_cast<std::size_t>(cls) < by_class.size() ? start_transfers(by_class[static_cast<std::size_t>(cls)])
                                                                         : std::vector<sg4::CommPtr>{};
      const Seconds phase_start = now();
      result_.flows += flows.size();
      for (const auto& comm : flows) comm->wait();
      const Seconds floor = phases[p].capped_duration;
      if (floor > 0 && now() < phase_start + floor) sg4::this_actor::sleep_until(phase_start + floor);
      if (!st.phase_end.empty()) st.phase_end[p]->wait();
      if (phases[p].latency > 0) sg4::this_actor::sleep_for(phases[p].latency);
    }
    release_sms(cls, hold);
  }

  /// The index of the program's one compute stream; -1 when it has none or several.
  static int only_compute_stream(const program::RankProgram& rp) {
    int found = -1;
    for (std::size_t s = 0; s < rp.streams.size(); ++s)
      if (rp.streams[s].kind == program::StreamKind::compute) {
        if (found >= 0) return -1;
        found = static_cast<int>(s);
      }
    return found;
  }

  /// Whether the class's compute stream is blocked on a task that needs this collective: then no
  /// compute runs beside it (a tensor-parallel all-reduce in the critical path), and holding SMs
  /// would change nothing but the simulator's cost.
  [[nodiscard]] bool compute_waits_for(int cls, int stream, std::size_t index) const {
    const int c = compute_stream_[static_cast<std::size_t>(cls)];
    if (c < 0) return false;
    const int w = waiting_[static_cast<std::size_t>(cls)][static_cast<std::size_t>(c)];
    if (w < 0) return false;
    const auto& t = rep_program(cls).streams[static_cast<std::size_t>(c)].tasks[static_cast<std::size_t>(w)];
    return std::any_of(t.deps.begin(), t.deps.end(), [&](const program::TaskRef& d) {
      return d.stream == stream && static_cast<std::size_t>(d.index) == index;
    });
  }

  struct SmHold {
    int sms = 0;  ///< 0 when nothing is held
  };

  /// Takes `channels` SMs of the class's accelerator (fewer when the collectives already in
  /// flight there hold all but one) until release_sms.
  SmHold hold_sms(int cls, int channels) {
    SmHold h;
    if (sm_count_ <= 0 || channels <= 0) return h;
    int& held = held_sms_[static_cast<std::size_t>(cls)];
    h.sms = std::min(channels, sm_count_ - 1 - held);
    if (h.sms <= 0) return {};
    held += h.sms;
    restart_held_sm_exec(cls);
    return h;
  }

  void release_sms(int cls, const SmHold& h) {
    if (h.sms <= 0) return;
    held_sms_[static_cast<std::size_t>(cls)] -= h.sms;
    restart_held_sm_exec(cls);
  }

  /// All SMs the class's collectives in flight hold are one Exec, bounded to what that many take
  /// of the host's speed and weighted so that it gets its bound before any compute Exec gets a
  /// share; restarted at every change of the count. One Exec for the total, not one per
  /// collective: the measured slowdown is not additive (1 SM costs 7%, 32 SMs 25%), and
  /// collectives end in any order, so per-collective increments f(held + K) - f(held) would leave
  /// the wrong total once an earlier one ended first.
  void restart_held_sm_exec(int cls) {
    const auto c = static_cast<std::size_t>(cls);
    if (now() > cancelled_holds_at_) cancelled_holds_.clear();  // maestro has handled their end
    // Bounded, it would end after 1e15 s: the last collective always ends first and cancels it.
    sg4::ExecPtr cancelled = replace_bounded_exec(
        held_sm_exec_[c], platform_.rank_host[static_cast<std::size_t>(fold_.representative[c])],
        [&] { return platform_.host_speed * model::held_sm_fraction(held_sm_slowdown_, sm_count_, held_sms_[c]); },
        1e15, kHeldSmPriority);
    if (cancelled) {
      cancelled_holds_.push_back(std::move(cancelled));
      cancelled_holds_at_ = now();
    }
    if (held_sm_exec_[c]) ++result_.execs;
  }

  /// Max-min weight of an SM hold against a compute Exec's 1: large enough that the hold
  /// reaches its bound first, whatever the number of compute Execs beside it.
  static constexpr double kHeldSmPriority = 1e6;

  /// A compute task with a memory-bound part under HBM sharing: its arithmetic (an Exec, slowed
  /// by held SMs) and its streaming (stream_memory) alternate in kMemorySlices equal slices, as a
  /// layer's GEMMs and elementwise kernels alternate; the order inside a slice is an
  /// approximation, off by at most one slice of overlap with a collective.
  void run_interleaved(int cls, const program::Task& t) {
    const Seconds arithmetic = (t.duration - t.memory_bound) / kMemorySlices;
    const Seconds streaming = t.memory_bound / kMemorySlices;
    for (int k = 0; k < kMemorySlices; ++k) {
      if (arithmetic > 0) {
        ++result_.execs;
        start_exec(sg4::this_actor::get_host(), arithmetic * platform_.host_speed)->wait();
      }
      stream_memory(cls, streaming);
    }
  }

  /// Slices of a compute task's arithmetic and streaming (run_interleaved): more follow the
  /// kernels' order more closely and cost two SimGrid activities each.
  static constexpr int kMemorySlices = 8;

  /// `seconds` of memory-bound kernels beside the class representative's transfers: they get
  /// what the transfers crossing its HBM link leave of it (Link::get_usage: the flows' max-min
  /// rates, as SimGrid solved them for the interval that ends now, so transfers starting at this
  /// very instant are seen from the next slice on), at the slice's start. NCCL's flows keep
  /// their rates: the HBM link never limits them alone (build_platform checks its capacity), and
  /// not letting compute slow them keeps the flows of the ranks folding does not simulate
  /// exactly as in the job. Every memory-bound kernel counts as saturating HBM (ASSUMPTION: one
  /// streaming below the device's stream-copy rate would lose less). Not slowed by held SMs: a
  /// streaming kernel saturates HBM with a fraction of the SMs.
  void stream_memory(int cls, Seconds seconds) {
    const auto* link = platform_.hbm_link[static_cast<std::size_t>(fold_.representative[static_cast<std::size_t>(cls)])];
    const double capacity = link->get_bandwidth();
    const double left = std::max(capacity - link->get_usage(), kLeastHbmShare * capacity);
    sg4::this_actor::sleep_for(seconds * capacity / left);
  }

  /// What memory-bound compute keeps of HBM however busy the transfers are (they cannot fill
  /// it: build_platform's check), so that a slice always ends.
  static constexpr double kLeastHbmShare = 0.01;

  /// A copy between accelerator and host memory: every member of the class moves its bytes
  /// between its accelerator and its node's CPU at once (so copies of ranks behind one PCIe
  /// switch share it, and share it with NIC traffic), then the route's latency is paid.
  void run_host_copy(int cls, const program::Task& t) {
    std::vector<sg4::CommPtr> flows;
    Seconds latency = 0;
    for (int r : fold_.members[static_cast<std::size_t>(cls)]) {
      auto* gpu = platform_.rank_host[static_cast<std::size_t>(r)];
      auto* cpu = platform_.cpu_host[static_cast<std::size_t>(r / platform_.ranks_per_node)];
      const bool to_host = t.copy_direction == program::CopyDirection::to_host;
      flows.push_back(sg4::Comm::sendto_async(to_host ? gpu : cpu, to_host ? cpu : gpu,
                                              static_cast<uint64_t>(t.copy_bytes)));
      latency = std::max(latency, platform_.cpu_latency[static_cast<std::size_t>(r % platform_.ranks_per_node)]);
    }
    result_.flows += flows.size();
    for (auto& comm : flows) comm->wait();
    if (latency > 0) sg4::this_actor::sleep_for(latency);
  }

  struct MergedPhase {
    /// The flows each class's representative starts ([class]; classes past its end start none),
    /// as the endpoints' hosts, found once when the call is prepared.
    std::vector<std::vector<HostTransfer>> transfers_by_class;
    /// The phase's slowest rate-capped flow's bytes / rate_limit (0: none), over every flow of
    /// the plans, simulated or not. A per-channel software limit (Flow::rate_limit) is a floor
    /// on a phase's duration: its flows start together, so no class's part of it ends before
    /// this. Assumption: SimGrid 3.32 cannot bound a host-to-host Comm (s4u Comm::start builds
    /// its CommImpl without the rate set_rate stores), so on the links a capped flow runs at
    /// its fair share and then waits out its floor; exact uncontended, and under contention
    /// its bytes use the links in a shorter burst than NCCL's.
    Seconds capped_duration = 0;
    Seconds latency = 0;
  };
  struct MergedFlows {
    std::vector<MergedPhase> phases;
    int channels = 0;  ///< thread blocks of the kernel (the most of any instance's plan)
  };
  struct MergedCollective {
    std::shared_ptr<const MergedFlows> flows;                ///< shared by identical calls
    sg4::BarrierPtr arrival;                                 ///< null when one class takes part
    std::vector<sg4::BarrierPtr> phase_end;                  ///< empty when one class takes part
  };
  /// A route's links and what flow_shape needs of them, looked up once per (src, dst).
  struct Route {
    std::vector<sg4::Link*> links;
    double narrowest = 0;  ///< the smallest link bandwidth
    double latency = 0;    ///< the links' latencies summed
  };

  [[nodiscard]] const Route& route(const collective::Flow& f) {
    const auto key = std::make_tuple(f.src, f.dst, f.src_nic, f.dst_nic);
    auto it = routes_.find(key);
    if (it != routes_.end()) return it->second;
    Route r;
    platform_.endpoint(f.src, f.src_nic)->route_to(platform_.endpoint(f.dst, f.dst_nic), r.links, nullptr);
    for (const auto* l : r.links) {
      r.narrowest = r.narrowest == 0 ? l->get_bandwidth() : std::min(r.narrowest, l->get_bandwidth());
      r.latency += l->get_latency();
    }
    return routes_.emplace(key, std::move(r)).first->second;
  }

  /// Where a flow stands in a merged call's plans: instance, phase, flow.
  struct FlowAt {
    std::size_t instance, phase, flow;
  };
  using FlowShape = std::tuple<std::size_t, Bytes, std::size_t, double, double, double>;
  using Shape = std::vector<FlowShape>;

  /// What makes flows interchangeable: phase, bytes, route length, narrowest link, the
  /// route's latency (CM02 weighs a flow's share by it) and the flow's own rate limit.
  [[nodiscard]] FlowShape flow_shape(std::size_t phase, const collective::Flow& f) {
    const auto& r = route(f);
    return {phase, f.bytes, r.links.size(), r.narrowest, r.latency, f.rate_limit};
  }

  /// Which flows of a merged call's instances (one per original call) must be sent, as
  /// keep[instance][phase][flow]. Flows that share a link form a component, across instances
  /// and phases; a component that touches no class representative and whose shape (sorted
  /// flow shapes) equals a kept component's is dropped: it runs on links of its own, in step
  /// with a kept twin, so simulating it would change nothing but the simulator's cost (every
  /// other NVLink pair of a ring, every other node pair of its inter-node hops, another node's
  /// tensor-parallel all-reduce, another replica's stage-to-stage sends). Everything else is
  /// sent and contends on the platform as in the job.
  [[nodiscard]] std::vector<std::vector<std::vector<char>>> flows_to_simulate(
      const std::vector<collective::CollectivePlan>& plans) {
    std::vector<std::vector<std::vector<char>>> keep(plans.size());
    std::vector<FlowAt> at;
    for (std::size_t i = 0; i < plans.size(); ++i) {
      keep[i].resize(plans[i].phases.size());
      for (std::size_t p = 0; p < plans[i].phases.size(); ++p) {
        keep[i][p].assign(plans[i].phases[p].flows.size(), 1);
        for (std::size_t f = 0; f < plans[i].phases[p].flows.size(); ++f) at.push_back({i, p, f});
      }
    }
    const std::size_t n = at.size();
    if (n < 2) return keep;
    auto flow = [&](std::size_t x) -> const collective::Flow& {
      return plans[at[x].instance].phases[at[x].phase].flows[at[x].flow];
    };
    std::vector<std::size_t> parent(n);
    std::iota(parent.begin(), parent.end(), 0);
    auto find = [&](std::size_t x) {
      while (parent[x] != x) x = parent[x] = parent[parent[x]];
      return x;
    };
    std::unordered_map<const sg4::Link*, std::size_t> first_user;
    for (std::size_t x = 0; x < n; ++x)
      for (const auto* l : route(flow(x)).links) {
        // HBM links never limit a collective's flows alone (build_platform checks their capacity
        // against the accelerator's other links), and a dropped twin's compute is not simulated
        // either: joining through them would put every ring in one component.
        if (hbm_links_.count(l) != 0) continue;
        auto [it, fresh] = first_user.emplace(l, x);
        if (!fresh) {
          const auto a = find(it->second), b = find(x);
          if (a != b) parent[std::max(a, b)] = std::min(a, b);
        }
      }
    std::map<std::size_t, std::vector<std::size_t>> components;  // root -> flows, ascending
    for (std::size_t x = 0; x < n; ++x) components[find(x)].push_back(x);
    if (components.size() < 2) return keep;
    auto is_representative = [&](int r) {
      return fold_.representative[static_cast<std::size_t>(fold_.class_of_rank[static_cast<std::size_t>(r)])] == r;
    };
    std::set<Shape> kept_shapes;
    std::vector<std::pair<const std::vector<std::size_t>*, Shape>> candidates;
    for (const auto& [root, members] : components) {
      bool has_representative = false;
      Shape shape;
      for (std::size_t x : members) {
        const auto& f = flow(x);
        has_representative = has_representative || is_representative(f.src) || is_representative(f.dst);
        shape.push_back(flow_shape(at[x].phase, f));
      }
      std::sort(shape.begin(), shape.end());
      if (has_representative)
        kept_shapes.insert(std::move(shape));
      else
        candidates.emplace_back(&members, std::move(shape));
    }
    for (auto& [members, shape] : candidates)
      if (!kept_shapes.insert(std::move(shape)).second)
        for (std::size_t x : *members) keep[at[x].instance][at[x].phase][at[x].flow] = 0;
    return keep;
  }

  /// Which members share a node, as node numbers ranked among the group's nodes: the plan of a
  /// call depends on its group only through this (collective_plan.hpp), so groups with the same
  /// pattern have the same plan up to renaming their members.
  [[nodiscard]] std::vector<int> node_pattern(const std::vector<int>& group) const {
    std::vector<int> nodes;
    for (int r : group) nodes.push_back(r / platform_.ranks_per_node);
    std::vector<int> distinct = nodes;
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    for (int& n : nodes) n = static_cast<int>(std::lower_bound(distinct.begin(), distinct.end(), n) - distinct.begin());
    return nodes;
  }

  [[nodiscard]] static bool names_nics(const collective::CollectivePlan& plan) {
    for (const auto& ph : plan.phases)
      for (const auto& f : ph.flows)
        if (f.src_nic >= 0 || f.dst_nic >= 0) return true;
    return false;
  }

  /// `plan` (made for `from`) with each member of `from` replaced by the member of `to` at the
  /// same place.
  [[nodiscard]] static collective::CollectivePlan relabel(collective::CollectivePlan plan,
                                                          const std::vector<int>& from,
                                                          const std::vector<int>& to) {
    std::unordered_map<int, int> rename;
    for (std::size_t k = 0; k < from.size(); ++k) rename.emplace(from[k], to[k]);
    for (auto& ph : plan.phases)
      for (auto& f : ph.flows) {
        f.src = rename.at(f.src);
        f.dst = rename.at(f.dst);
      }
    return plan;
  }

  /// Plans every call a merged call stands for and keeps the flows that must be simulated
  /// (flows_to_simulate: twins of kept flows on links of their own are not sent).
  /// `alike`: an earlier merged call making the same calls (program/alike_merged_calls.hpp), -1:
  /// none. Calls with the same op, size and groups have the same flows: every layer's
  /// tensor-parallel all-reduce, every micro-batch's send between two stages. They are planned
  /// and pruned once.
  MergedCollective merge_calls(std::size_t merged, int alike,
                               const std::function<collective::CollectivePlan(const program::CollectiveCall&)>& plan) {
    MergedCollective mc;
    if (alike >= 0) {
      mc.flows = collectives_[static_cast<std::size_t>(alike)].flows;
    } else {
      mc.flows = std::make_shared<const MergedFlows>(merged_phases(fold_.calls[merged], plan));
    }
    const auto taking_part = static_cast<unsigned>(fold_.classes_of[merged].size());
    if (taking_part > 1) {
      mc.arrival = sg4::Barrier::create(taking_part);
      for (std::size_t p = 0; p < mc.flows->phases.size(); ++p) mc.phase_end.push_back(sg4::Barrier::create(taking_part));
    }
    return mc;
  }

  [[nodiscard]] MergedFlows merged_phases(
      const std::vector<int>& calls,
      const std::function<collective::CollectivePlan(const program::CollectiveCall&)>& plan) {
    std::vector<collective::CollectivePlan> plans;
    plans.reserve(calls.size());
    std::map<std::vector<int>, std::size_t> planned;  // node pattern -> an instance planned for it
    for (std::size_t i = 0; i < calls.size(); ++i) {
      const auto& call = prog_.collectives[static_cast<std::size_t>(calls[i])];
      auto pattern = node_pattern(call.group);
      // A plan whose flows name NICs (chosen by local rank) is not relabelled to other ranks.
      if (auto it = planned.find(pattern); it != planned.end() && !names_nics(plans[it->second])) {
        plans.push_back(relabel(plans[it->second], prog_.collectives[static_cast<std::size_t>(calls[it->second])].group,
                                call.group));
      } else {
        planned.emplace(std::move(pattern), i);
        plans.push_back(collective::repeated(plan(call), call.repeat));
        for (const auto& ph : plans.back().phases)
          for (const auto& f : ph.flows)
            // Each member starts the flows it sends: a sender outside the group would never run.
            TRAINSIM_CHECK(std::find(call.group.begin(), call.group.end(), f.src) != call.group.end(),
                           "collective " + call.name + " has a flow from a rank outside its group");
      }
    }
    const auto keep = flows_to_simulate(plans);
    MergedFlows merged;
    auto& phases = merged.phases;
    for (const auto& pl : plans) merged.channels = std::max(merged.channels, pl.channels);
    // Every instance's latency counts, sent or not: the merged call ends with its slowest.
    for (std::size_t i = 0; i < calls.size(); ++i) {
      for (std::size_t p = 0; p < plans[i].phases.size(); ++p) {
        const auto& ph = plans[i].phases[p];
        if (phases.size() <= p) phases.emplace_back();
        auto& out = phases[p];
        Seconds hop = 0;
        for (std::size_t f = 0; f < ph.flows.size(); ++f) {
          const auto& fl = ph.flows[f];
          hop = std::max(hop, platform_.route_latency(fl.src, fl.dst, fl.src_nic, fl.dst_nic));
          if (fl.rate_limit > 0) out.capped_duration = std::max(out.capped_duration, fl.bytes / fl.rate_limit);
          if (fl.bytes > 0 && keep[i][p][f]) {
            const auto k = static_cast<std::size_t>(fold_.class_of_rank[static_cast<std::size_t>(fl.src)]);
            if (out.transfers_by_class.size() <= k) out.transfers_by_class.resize(k + 1);
            out.transfers_by_class[k].push_back(
                {platform_.endpoint(fl.src, fl.src_nic), platform_.endpoint(fl.dst, fl.dst_nic), static_cast<std::uint64_t>(fl.bytes)});
          }
        }
        out.latency = std::max(out.latency, ph.fixed_latency + ph.steps * (ph.step_latency + hop));
      }
    }
    return merged;
  }

  const program::Program& prog_;
  const Platform& platform_;
  bool record_;
  int sm_count_;
  model::HeldSmSlowdown held_sm_slowdown_;
  ExecuteOptions options_;
  ExecutionResult result_;
  std::chrono::steady_clock::time_point prepare_start_;
  program::RankFolding fold_;
  std::vector<MergedCollective> collectives_;  ///< per merged call
  std::map<std::tuple<int, int, int, int>, Route> routes_;
  std::unordered_set<const sg4::Link*> hbm_links_;  ///< Platform::hbm_link
  // Per class:
  static constexpr Seconds kNotDone = -1;
  std::vector<std::vector<std::vector<Seconds>>> done_;  ///< [class][stream][task]: when it finished
  std::vector<Seconds> host_free_;  ///< per class: when its host thread has issued all it has reached
  std::vector<std::vector<sg4::ActorPtr>> stream_actor_;  ///< [class][stream]: the actor running it
  std::vector<std::vector<int>> waiting_;  ///< [class][stream]: task index it sleeps on, or -1
  std::vector<Bytes> memory_;              ///< in use now
  std::vector<Bytes> peak_;
  // The caching allocator per class, its live allocations by (pool, size) oldest first, and
  // whether a request failed even after a retry.
  std::vector<memory::CachingAllocator> allocators_;
  std::vector<std::map<std::pair<int, Bytes>, std::deque<int>>> live_;
  // Allocation sequences (program/allocation_sequence.hpp): kept tensors by (pool, size), newest
  // last, per class; the running task's transient blocks by slot, per class and stream.
  std::vector<std::map<std::pair<int, Bytes>, std::vector<int>>> kept_;
  std::vector<std::vector<std::vector<int>>> transient_blocks_;
  std::vector<bool> allocator_oom_;
  std::vector<Seconds> peak_time_;
  // Under ExecuteOptions::allocate_at_host_issue, per class: when the host issued each task
  // ([class][stream][task]: began, and had issued all of it), when the device started it, and
  // the allocator's events, replayed in time order after the run.
  struct AllocEvent {
    Seconds time = 0;
    enum Kind : std::uint8_t {
      malloc, free_slot, free_slot_after_use, free_live, free_live_after_use, complete,
      malloc_kept, free_kept  ///< a saved tensor (program::AllocationStep::keep, free_kept)
    } kind;
    int pool = 0;
    Bytes bytes = 0;
    long slot = -1;  ///< the request a free or completion refers to; -1: the oldest live one of its pool and size
  };
  bool host_issue_ = false;
  std::vector<std::vector<std::vector<Seconds>>> issue_, issue_end_, started_;
  std::vector<std::vector<AllocEvent>> alloc_events_;
  std::vector<long> slots_;
  std::vector<int> held_sms_;  ///< SMs the class's collectives in flight hold
  std::vector<sg4::ExecPtr> held_sm_exec_;  ///< their hold (restart_held_sm_exec); null when none
  /// Holds cancelled at `cancelled_holds_at_`, kept alive until the time moves on (replace_bounded_exec).
  std::vector<sg4::ExecPtr> cancelled_holds_;
  Seconds cancelled_holds_at_ = 0;
  std::vector<int> compute_stream_;  ///< per class: its one compute stream, -1 if not exactly one
  std::size_t total_tasks_ = 0;
  std::size_t finished_tasks_ = 0;
};

}  // namespace

ExecutionResult execute_program(
    const program::Program& prog, const Platform& platform,
    const std::function<collective::CollectivePlan(const program::CollectiveCall&)>& plan,
    const ExecuteOptions& options) {
  double fold_wall_s = 0;
  auto folding = timed_folding(prog, options.fold, platform.ranks_per_node, fold_wall_s);
  // Shared bodies (program::RankProgram::body) run as they are when each class's representative
  // has tasks of its own; unfolded, or when folding fell back, every rank runs its own copy.
  for (const int r : folding.representative)
    if (prog.ranks[static_cast<std::size_t>(r)].body >= 0) {
      const auto full = program::materialise(prog);
      return execute_program(full, platform, plan, options);
    }
  Executor ex(prog, platform, plan, options, std::move(folding), fold_wall_s);
  return ex.run();
}

}  // namespace trainsim::engine

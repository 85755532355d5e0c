#pragma once
// Runs per-rank programs on a SimGrid platform: one actor per (rank, stream) walks its tasks in
// order. Compute tasks are Execs on the rank's host; a collective starts when every member has
// arrived, then runs the plan's phases of flows (host-to-host Comms started together, so they
// contend on the platform's links), each followed by its analytic step latency. (SimGrid 3.32 fires s4u completion signals only for activities
// somebody waits on, so completion callbacks cannot drive the program.)
//
// SM sharing: from the moment every member of a collective has arrived until it ends, an Exec on
// the rank's host, bounded to channels / SMs of the host's speed and weighted to get its bound
// first, stands for the NCCL kernel's resident thread blocks; a compute Exec running meanwhile
// gets the remainder (max-min sharing of the host). The stand-in uses no link, so the
// collective's flows are not slowed by it; concurrent collectives add their channels, capped one
// SM short of the device.
//
// HBM sharing (a platform with Platform::hbm_link): a compute task's memory-bound part
// (program::Task::memory_bound) runs in slices alternating with its arithmetic, each lasting its
// share of that time scaled by the accelerator's HBM link capacity over what the flows crossing
// the link leave of it when the slice starts. The flows themselves are not slowed.
#include <functional>
#include <vector>

#include "collective/collective_plan.hpp"
#include "engine/platform_builder.hpp"
#include "model/held_sm_slowdown.hpp"
#include "program/program.hpp"

namespace trainsim::engine {

/// When one task ran, for traces and breakdowns.
struct TaskRecord {
  int rank = 0;
  int stream = 0;
  int index = 0;
  Seconds start = 0;
  Seconds end = 0;
};

/// A rank's device memory in use from `time` on.
struct MemorySample {
  int rank = 0;
  Seconds time = 0;
  Bytes bytes = 0;
};

struct ExecutionResult {
  Seconds makespan = 0;             ///< simulated time when the last task ended
  bool completed = false;           ///< false when some task never ran (a deadlock)
  std::vector<TaskRecord> records;  ///< every task, when recording was asked for
  /// Per rank: the most device memory held at once (resident + tasks' allocations and
  /// workspaces as they start and end) and when it was first reached.
  std::vector<Bytes> peak_memory;
  std::vector<Seconds> peak_memory_time;
  std::vector<MemorySample> memory;  ///< every change, when recording was asked for
  /// Per rank, when ExecuteOptions::device_memory is given: PyTorch's caching allocator replaying
  /// the same allocations, each from its stream's pool (memory/caching_allocator.hpp): the most
  /// it reserved from the device, how often it freed its cache and retried, and whether a request
  /// failed even then (a real run would stop there with CUDA out of memory).
  std::vector<Bytes> peak_reserved;
  std::vector<long> allocator_retries;
  std::vector<bool> allocator_out_of_memory;
  /// Whether the allocator followed the host's issue (ExecuteOptions::allocate_at_host_issue
  /// with a host model) rather than the device's time.
  bool allocated_at_host_issue = false;
  int classes = 0;  ///< rank classes simulated (program/rank_folding.hpp); the world size unfolded
  // SimGrid activities the run started (deterministic; what the simulator's cost follows):
  std::size_t flows = 0;  ///< Comms: collective flows sent and host copies
  std::size_t execs = 0;  ///< Execs: compute tasks and SM holds
  // Where the simulator's own wall time went (measured, so never part of a byte-identical output):
  double fold_wall_s = 0;     ///< grouping ranks into classes (program/rank_folding.hpp)
  double prepare_wall_s = 0;  ///< planning and merging the collective calls, per-class state
  double run_wall_s = 0;      ///< the SimGrid run itself, actor creation included
};

struct ExecuteOptions {
  bool record = false;  ///< keep every task's span and memory change (traces)
  bool fold = true;     ///< simulate one representative per class of identical ranks
  /// Streaming multiprocessors per accelerator. While a collective runs, its kernel's channels
  /// (CollectivePlan::channels, one thread block each) hold that many of them, so compute on the
  /// same accelerator runs at the rest of its speed. 0 turns this off.
  int sm_count = 0;
  /// What `held` SMs take of the accelerator's speed (model::held_sm_fraction): the device's
  /// measured slowdown of arithmetic kernels beside them; empty: their share held / sm_count.
  model::HeldSmSlowdown held_sm_slowdown{};
  /// Device memory per accelerator for the caching allocator; 0: not followed.
  Bytes device_memory = 0;
  /// Of each program's `resident`, what the caching allocator does not manage (runtime reserve).
  Bytes unmanaged_memory = 0;
  /// What one caching-allocator retry stalls the stream whose request hit it: `retry_fixed` plus
  /// `retry_per_byte` times the segment it then reserves. Both 0: retries are counted, not timed.
  Seconds retry_fixed = 0;
  Seconds retry_per_byte = 0;
  /// Time the caching allocator's requests as PyTorch makes them: when the host issues the task
  /// that makes a buffer, not when the device starts it; a buffer freed into its own stream's
  /// pool is reusable when the host frees it, one another stream used only once the device has
  /// finished that use (record_stream). Needs the program's host model (Program::host_per_kernel
  /// and Program::host_bounds_modelled); without one the allocator follows the device's time. A retry's stall then lengthens the
  /// step (the retry drains the device) instead of one stream.
  bool allocate_at_host_issue = false;
  /// With `record`, per rank (indexed by rank): whether to keep its spans and memory changes;
  /// empty keeps every rank's. A trace of a few ranks then costs no memory for the others.
  std::vector<bool> record_ranks{};
};


/// Executes `prog` on `platform`. Must be called once per process, after build_platform, with
/// the Engine already created. `plan` is asked once per collective call.
[[nodiscard]] ExecutionResult execute_program(const program::Program& prog,
                                              const Platform& platform,
                                              const std::function<collective::CollectivePlan(
                                                  const program::CollectiveCall&)>& plan,
                                              const ExecuteOptions& options);

}  // namespace trainsim::engine

#pragma once
// Per-rank programs: the plain data a schedule emits and the engine executes. Each rank has
// streams (compute, communication) that run their tasks in order; a task also waits for the
// tasks it depends on (on other streams of the same rank). A collective task appears on the
// communication stream of every member of its group and starts when all of them reach it.
#include <cstdint>
#include <string>
#include <vector>

#include "collective/collective_plan.hpp"
#include "program/allocation_sequence.hpp"
#include "core/units.hpp"
#include "program/interned_name.hpp"
#include "program/rank_group.hpp"
#include "program/task_deps.hpp"

namespace trainsim::program {

/// host: time the rank's CPU thread spends in the framework (Python loops, per-call dispatch)
/// while it issues nothing; it holds back what the host issues next but uses no device.
enum class TaskKind : std::uint8_t { compute, collective, host_copy, host };
enum class StreamKind { compute, communication, copy, host };

/// Which way a host-copy task moves its bytes.
enum class CopyDirection : std::uint8_t { to_host, to_device };

/// Coarse category for traces and time breakdowns.
enum class Phase : std::uint8_t { forward, backward, optimizer, gradient_sync, parameter_sync, offload, other };
[[nodiscard]] const char* phase_name(Phase p);

struct Task {
  InternedName name;
  TaskKind kind = TaskKind::compute;
  Phase phase = Phase::other;
  Seconds duration = 0;      ///< compute and host tasks
  int collective = -1;       ///< collective tasks: index into Program::collectives
  TaskDeps deps;             ///< tasks of the same rank that must finish first
  // Device memory, so the engine can follow each rank's use along the timeline:
  Bytes alloc = 0;      ///< allocated when the task starts and kept after it (stored activations)
  Bytes release = 0;    ///< freed when the task ends (activations consumed by a backward pass)
  Bytes workspace = 0;  ///< held only while the task runs (recompute, gradient temporaries)
  /// Freed when the task ends: a block another stream's task allocated and this task used last
  /// (FSDP's gathered parameters after their pass, a gradient after its reduce-scatter), so it
  /// goes back to that stream's cached pool (PyTorch's record_stream; memory/caching_allocator.hpp).
  Bytes release_borrowed = 0;
  /// The stream whose caching-allocator pool serves `alloc` and `workspace`: -1 for the task's
  /// own stream. FSDP's post-backward stream allocates a reduce-scatter's input although the
  /// call runs on the communicator's stream.
  std::int8_t alloc_pool = -1;
  std::int8_t borrowed_pool = -1;  ///< the stream that allocated `release_borrowed`
  /// Index into Program::allocation_sequences, -1 for none. With one, the caching allocator
  /// serves the sequence's requests instead of `workspace`, `release` and `alloc` (its keeps,
  /// or its task_alloc step); `alloc`, `workspace` and `release` stay the totals the allocated
  /// counter follows, and validate() checks they are the sequence's.
  std::int16_t allocations = -1;
  /// `release_borrowed` is freed without record_stream: the allocating stream waits on an event
  /// before it next writes there instead (FSDP2), so the block is back in that stream's pool as
  /// soon as the host frees it, not once the device has finished with it.
  bool borrowed_free_at_issue = false;
  // Host-copy tasks:
  Bytes copy_bytes = 0;  ///< moved between the accelerator and the node's CPU
  CopyDirection copy_direction = CopyDirection::to_host;
  // Host dispatch (Program::host_per_kernel):
  /// Compute tasks: kernels the rank's host thread issues for it (Operation::kernels summed);
  /// with Program::host_per_kernel they gate its start and end (model/host_dispatch.hpp).
  int kernels = 0;
  /// Compute tasks: the host time per kernel where it is not Program::host_per_kernel (0): a
  /// Python loop of bare tensor calls (`.float()`, `copy_`) costs the host less than module code
  /// under autograd (the device profile's eager_copy_call against its eager_kernel_issue).
  Seconds host_per_kernel = 0;
  /// The host waits for every dependency of this task to finish before it issues the task
  /// (torch.cuda.synchronize, .item(), a blocking wait on a collective, FSDP1's rate limiter
  /// before an all-gather): the host's issue restarts then. Without it, dependencies are waits
  /// of the device's streams only. On a task other than compute it times only the task's
  /// allocations (ExecuteOptions::allocate_at_host_issue).
  bool host_sync = false;
  /// The task the host issues just before this one where neither this task's stream nor its
  /// dependencies say so (FSDP issues a unit's all-gather in the hook after the previous unit's
  /// pass): it times the task's allocations under ExecuteOptions::allocate_at_host_issue, not
  /// the device. stream -1: none.
  TaskRef host_after{-1, -1};
  /// Compute tasks: the part of `duration` its memory-bound kernels take (model::ops_memory_bound:
  /// elementwise ops at their streaming rate, launch costs left out), <= duration. With HBM
  /// sharing the engine runs it in slices alternating with the rest, each slowed by what the
  /// flows crossing the accelerator's HBM link take of it (engine/program_executor.hpp). 0: none,
  /// or not given by the schedule.
  Seconds memory_bound = 0;
};

struct Stream {
  std::string name;
  StreamKind kind = StreamKind::compute;
  std::vector<Task> tasks;
};

/// A rank's own call at one place of the calls it otherwise takes from another rank
/// (RankProgram::calls_from).
struct CallPatch {
  int place = 0;  ///< index among the body's collective tasks, streams in order
  int call = 0;   ///< index into Program::collectives
  bool operator==(const CallPatch& o) const { return place == o.place && call == o.call; }
};

struct RankProgram {
  int rank = 0;
  std::vector<Stream> streams;
  Bytes resident = 0;  ///< device memory held for the whole step (model states, buffers, runtime)
  /// A shared task body: -1 when `streams` holds this rank's tasks. Otherwise a lower rank with a
  /// body of its own whose tasks this rank runs (a schedule shares a body only where it would
  /// have pushed the same tasks, the calls aside), `streams` is empty and `calls` holds this
  /// rank's collective index at each collective task of that body, streams in order; validate()
  /// and folding check each call's shape against the body's. A 1,024-GPU job has a handful of
  /// distinct programs: sharing them spares building and comparing a thousand copies.
  int body = -1;
  std::vector<int> calls;
  /// With a body, -1, or a lower rank running the same body (its owner, or a rank sharing it with
  /// its own `calls`) whose calls this rank makes too, but at the places `call_patches` lists
  /// (ascending); `calls` is then empty. A tensor-parallel group's ranks make the same TP calls
  /// and differ only in their point-to-point and data-parallel ones: a few hundred of the 33k
  /// places of a per-step TP-overlap stage (calls_of gives the whole list).
  int calls_from = -1;
  std::vector<CallPatch> call_patches;
};

struct CollectiveCall {
  InternedName name;
  collective::Op op = collective::Op::all_reduce;
  Bytes size = 0;          ///< nccl-tests S (see collective_plan.hpp)
  RankGroup group;         ///< global ranks (interned: program/rank_group.hpp)
  /// The same call made this many times back to back, run as one: its plan's bytes and latency
  /// scaled by it (collective::repeated), so a coarse program can stand one call for a run of
  /// identical steps (tp_comm_overlap's ring steps and chunked reduce-scatters).
  int repeat = 1;
};

struct Program {
  std::vector<RankProgram> ranks;
  std::vector<CollectiveCall> collectives;
  long samples_per_step = 0;  ///< sequences processed by the whole job in one step
  /// Host time per kernel an eager framework's host thread spends issuing (device profile's
  /// eager_kernel_issue); 0: kernels are not issued from the host (compiled graphs, or not
  /// measured), Task::kernels and Task::host_sync change nothing.
  Seconds host_per_kernel = 0;
  /// CUDA_LAUNCH_BLOCKING=1: every launch returns once its kernel has finished, so each compute
  /// task's kernels run one after another with a host issue between them, after all it depends
  /// on (model::dispatch_blocking), and each collective starts once the host is free, after
  /// `collective_launch`, and holds the host until it completes. Needs host_per_kernel.
  bool launch_blocking = false;
  Seconds collective_launch = 0;  ///< host time of one collective call under launch_blocking
  /// The schedule bounds the host's run-ahead as its framework does (the host's waits marked
  /// Task::host_sync, its issue order across streams Task::host_after), so the caching allocator
  /// may follow the host's issue (engine::ExecuteOptions::allocate_at_host_issue); false: only
  /// the kernels' issue is modelled, and the allocator follows the device.
  bool host_bounds_modelled = false;
  /// Tasks' allocation sequences (Task::allocations), shared by every task that makes the same requests.
  std::vector<AllocationSequence> allocation_sequences;
};

/// The rank whose streams `rank` runs: itself, or the rank whose body it shares.
[[nodiscard]] const RankProgram& tasks_of(const Program& p, int rank);

/// The collective index of each collective task `rank` runs, streams in order (a rank's
/// RankProgram::calls_from applied).
[[nodiscard]] std::vector<int> calls_of(const Program& p, int rank);

/// Whether some rank shares another's body (RankProgram::body).
[[nodiscard]] bool shares_bodies(const Program& p);

/// The same program with every rank's tasks its own (for executing every rank: `--no-fold`).
[[nodiscard]] Program materialise(const Program& p);

/// Checks structural invariants: dependency and collective indices in range, each collective's
/// task present exactly once on the communication stream of each group member, collectives
/// appearing in the same relative order on every member (otherwise the job would deadlock), and
/// a shared body's owner holding its own tasks, with one call per collective task of the body,
/// each of the same op, size and group size as the owner's call there, and calls taken from a
/// lower rank of the same body that has a list of its own, patched at ascending places within it.
/// Throws InvariantError with the first problem.
void validate(const Program& p);

}  // namespace trainsim::program

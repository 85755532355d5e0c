#pragma once
// The layouts `trainsim search` tries for one point of a scenario: the schedule (DDP, ZeRO-1/2/3,
// FSDP), tensor-, context- and pipeline-parallel degrees, the pipeline schedule (GPipe, 1F1B,
// interleaved 1F1B's virtual stages), micro-batch, activation checkpointing and offloading,
// sequence parallelism and the sharding group, at the point's global
// batch (so every candidate trains on the same samples per step and their throughputs compare).
// Enumeration and each candidate's scenario document are plain data, testable without SimGrid;
// whether a candidate is valid is the scenario loader's to say (its error is the reason shown).
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace trainsim::search {

/// The values tried on each axis. An empty axis keeps the point's own value.
struct SearchSpace {
  /// The training schedules (training.schedule: ddp, zero1, zero2, zero3, fsdp); empty: the
  /// point's own only
  std::vector<std::string> schedule;
  std::vector<long> tp;
  /// Context-parallel degrees (Megatron-core's ring attention): each rank holds 1/cp of every
  /// sequence; empty: the point's own
  std::vector<long> cp;
  /// How a CP group exchanges under Megatron-core (training.cp_comm_type: p2p, a2a,
  /// all_gather), tried wherever CP > 1; empty: the point's own
  std::vector<std::string> cp_comm_type;
  std::vector<long> pp;
  /// Schedules of a pipeline without virtual stages: "gpipe" (every micro-batch's forward, then
  /// every backward: all their activations held), "1f1b", "zb-h1" (1F1B with weight gradients
  /// deferred into the cool-down) and "zb-v" (two chunks per stage in a V, its own order); empty:
  /// the point's own
  std::vector<std::string> pipeline_schedule;
  /// Model chunks per pipeline stage: 1 runs the point's non-interleaved schedule (1F1B if it
  /// interleaves), more Megatron's interleaved 1F1B; only tried where PP > 1.
  std::vector<long> virtual_stages;
  std::vector<long> micro_batch;  ///< empty: every power of two that divides the replica's batch
  std::vector<bool> checkpointing;
  /// What checkpointed layers keep (training.checkpoint_policy: full, selective_op,
  /// selective_attention), tried wherever checkpointing is on; empty: the point's own
  std::vector<std::string> checkpoint_policy;
  /// Megatron's sequence parallelism (norms and dropout split over TP), only at TP > 1; empty:
  /// the point's own
  std::vector<bool> sequence_parallel;
  /// Activation offloading of the checkpointed layer inputs to host memory, only with
  /// checkpointing; empty: the point's own
  std::vector<bool> offloading;
  std::vector<long> shard;  ///< hybrid_shard_degree; 0 = the point's own sharding
};

/// What the enumeration needs to know about the point being searched.
struct PointShape {
  int nodes = 1;
  long ranks_per_node = 1;
  long context_parallel = 1;
  std::string cp_comm_type = "p2p";  ///< the point's own (p2p where it has no CP)
  long global_batch = 1;  ///< sequences per optimizer step: micro-batch x accumulation x DP
  long tp = 1, pp = 1, micro_batch = 1;
  long virtual_stages = 1;  ///< 1 unless the point runs interleaved 1F1B
  /// The point's pipeline schedule without virtual stages: "1f1b", "gpipe", "zb-h1" or "zb-v"
  std::string pipeline = "1f1b";
  /// Megatron-LM's pipeline (its modules, or already interleaved) on a uniform partition: SMP
  /// v1's and DeepSpeed's have no virtual stages
  bool interleavable = false;
  long shard = 0;  ///< the point's shard group; 0 when it shards over its whole data-parallel group
  bool checkpointing = false;
  std::string checkpoint_policy = "full";  ///< the point's own (full where it does not checkpoint)
  bool sequence_parallel = false;
  bool offloading = false;
  bool fsdp = false;  ///< PyTorch FSDP / SMP v2, whose hybrid_shard_degree is a layout choice
  std::string schedule = "ddp";  ///< the point's training.schedule
};

/// The checkpoint policies --checkpoint-policy names, in the order a search tries them.
[[nodiscard]] const std::vector<std::string>& checkpoint_policy_names();

/// The pipeline schedules --pipeline-schedule names (interleaving is --virtual-stages'), in the
/// order a search tries them.
[[nodiscard]] const std::vector<std::string>& pipeline_schedule_names();

/// The CP exchanges --cp-comm-type names, in the order a search tries them.
[[nodiscard]] const std::vector<std::string>& cp_comm_type_names();

/// training.schedule's values, in the order a search tries them.
[[nodiscard]] const std::vector<std::string>& schedule_names();

/// A schedule as people write it: DDP, ZeRO-1, ZeRO-2, ZeRO-3, FSDP.
[[nodiscard]] const char* schedule_label(const std::string& schedule);

struct Candidate {
  std::string schedule = "ddp";  ///< training.schedule
  /// The search tries other schedules than the point's: the label names each candidate's
  bool schedule_searched = false;
  long tp = 1, cp = 1, pp = 1, dp = 1, micro_batch = 1, accumulation = 1, shard = 0;
  /// How the CP group exchanges (training.cp_comm_type) where CP > 1; the label and the
  /// scenario name it where the search tried several or it is not the ring
  std::string cp_comm = "p2p";
  bool cp_comm_searched = false;
  long virtual_stages = 1;
  /// The schedule of a pipeline without virtual stages ("1f1b", "gpipe", "zb-h1", "zb-v"; others only at
  /// PP > 1 without virtual stages)
  std::string pipeline = "1f1b";
  bool checkpointing = false;
  /// What checkpointed layers keep; the label and the scenario name it only where the search
  /// tried policies (policy_searched), otherwise it is the point's own
  std::string checkpoint_policy = "full";
  bool policy_searched = false;
  bool sequence_parallel = false;
  bool offloading = false;
  bool is_original = false;  ///< the point's own configuration
  [[nodiscard]] std::string label() const;
};

/// A combination the enumeration set aside before loading, with why.
struct Skipped {
  Candidate candidate;
  std::string reason;
};

struct Enumeration {
  std::vector<Candidate> candidates;
  std::vector<Skipped> skipped;
};

/// The axes a user gave, completed with the defaults for `shape`: the point's own schedule, TP over
/// the powers of two up to a node when the point is already tensor- or pipeline-parallel, PP over
/// the divisors of the ranks left when it is pipelined, virtual stages 1 and 2 (and the point's
/// own) when it is pipelined by Megatron-LM, checkpointing on and off, the point's own context
/// parallelism, pipeline schedule, offloading and sequence parallelism, and for FSDP the shard
/// group over full sharding and whole nodes times powers of two (SMP v2's hybrid_shard_degree:
/// source 000 advises the smallest that fits) when FSDP is among the schedules; otherwise the
/// point's own values.
[[nodiscard]] SearchSpace complete_space(SearchSpace given, const PointShape& shape, long layers);

/// Every combination of `space` at the point's global batch, in a fixed order (schedule in
/// schedule_names() order, then TP, CP, PP, virtual stages, pipeline schedule, micro-batch,
/// checkpointing (and its policies), offloading, sequence parallelism, shard, each ascending;
/// virtual stages only at PP > 1, GPipe and ZB-H1 only at PP > 1 without virtual stages, offloading only
/// with full checkpointing,
/// sequence parallelism only at TP > 1, shard groups only for a sharded schedule).
/// Combinations whose degrees do not divide the accelerators, or whose micro-batch does not divide
/// the replica's share of the global batch, are skipped with the reason.
[[nodiscard]] Enumeration enumerate_layouts(const SearchSpace& space, const PointShape& shape);

/// The scenario document with `point_index`'s point replaced by the one candidate: the scenario's
/// and the point's "training" merged and set to the candidate's degrees (options that need a
/// degree or schedule the candidate lacks, such as sequence parallelism at TP 1 or overlapped
/// exchanges without interleaving, dropped), its references
/// removed (they measured another layout). A candidate of another schedule than the point's runs
/// it with the point's precision, except FSDP's MixedPrecision (fsdp_mixed), which becomes amp
/// (bf16/fp16 weights and gradients with fp32 master weights, as ZeRO and DDP keep them), and
/// with Megatron's gradient buffers of that schedule (its DDP's megatron-local-ddp for ddp, its
/// distributed optimizer for zero1).
[[nodiscard]] nlohmann::json candidate_document(const nlohmann::json& doc, std::size_t point_index,
                                                const Candidate& c);

/// The scenario's and the point's "training" merged: what the point runs with.
[[nodiscard]] nlohmann::json point_training(const nlohmann::json& doc, std::size_t point_index);

/// The settings a candidate's training (a candidate_document's "training") runs with other values
/// than the point's, beyond the layout axes its label names: "key: before -> after" (precision
/// or gradient buffers under another schedule), in the point's key order.
[[nodiscard]] std::vector<std::string> changed_settings(const nlohmann::json& point_training,
                                                        const nlohmann::json& candidate_training);

/// For a candidate of another schedule than the point's whose document the loader rejected at
/// `json_path`: the training option to leave out and load again, when the path names one of the
/// point's options that belongs to its implementation of a schedule (Megatron's step syncs,
/// Composer's metrics, FSDP's prefetch arguments, a named gradient buffer...), not one that
/// defines the layout, its precision or its kernels; nullopt otherwise (the candidate is invalid
/// for the loader's reason).
[[nodiscard]] std::optional<std::string> option_of_another_schedule(const nlohmann::json& document,
                                                                    const std::string& json_path);

}  // namespace trainsim::search

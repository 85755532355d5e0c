#pragma once
// Composer's host work after every batch's optimizer step, which grows with the world size.
// Composer's _train_loop, after _train_batch returns (composer/trainer/trainer.py; v0.13.4
// :1982-2014, v0.16.4 :2058-2091, v0.17.2 :2074-2106), all-reduces the loss and reads it with
// .cpu().item(), all-reduces the batch's samples, tokens and time and reads them
// (_accumulate_time_across_ranks, v0.17.2 :1972-1992), then calls _compute_and_log_metrics on the
// train metrics (v0.17.2 :1914-1926), which runs every metric's compute() on a deepcopy; the
// metrics are reset at the start of the next batch (_train_batch, v0.17.2 :2231-2235). So
// compute() runs every batch, not at log intervals.
//
// torchmetrics' compute() syncs the states across the world group first (Metric._wrap_compute ->
// sync_context -> _sync_dist, src/torchmetrics/metric.py v1.0.3 :407-438 and :570-600; the same
// at v0.11.3; Composer pins torchmetrics <0.11.4 at v0.13.4 and <1.1 at v0.16-0.17, setup.py :78),
// with gather_all_tensors per state (utilities/distributed.py v1.0.3 :96-146, v0.11.3 :102-150):
// torch.distributed.barrier (for NCCL an all-reduce the host waits for: a device drain), then,
// for a 0-dim state, _simple_gather_all_tensors: a Python list of world_size torch.zeros_like
// (one fill kernel each) and a list all_gather, which ProcessGroupNCCL runs into one flat buffer
// and copies out with one copy_ per rank (ProcessGroupNCCL::allgather's post-processing: read in
// the stored ProcessGroupNCCL.cpp of the 2.x line, not at a tag). LanguageCrossEntropy and
// LanguagePerplexity hold two 0-dim states each, sum_loss and total_items (composer/metrics/
// nlp.py v0.13.4 :92-93, v0.16.4 and v0.17.2 :101-102); perplexity subclasses cross entropy.
//
// Modelled: the 2 x world_size calls per state, each at the host's per-call time, after a drain,
// while the device waits. Left out: what does not grow with the world (the loss and time
// reads, the barriers' own latency, the stacks, sums and the deepcopy: a few dozen calls).
#include "core/units.hpp"

namespace trainsim::model {

/// Each cross-entropy train metric's states that compute() gathers (sum_loss, total_items).
inline constexpr int kComposerMetricStates = 2;

/// The per-batch host calls of Composer's metric sync on `world_size` ranks.
struct ComposerMetricSync {
  long fills = 0;   ///< torch.zeros_like of gather_all_tensors' output list
  long copies = 0;  ///< ProcessGroupNCCL's copy of each gathered entry out of the flat buffer
  /// Times the host waits for the device: the loss and time reads (2) and one barrier per state.
  long host_syncs = 0;
  [[nodiscard]] long calls() const { return fills + copies; }
};

/// The calls of `metrics` cross-entropy train metrics' compute() on `world_size` ranks.
[[nodiscard]] ComposerMetricSync composer_metric_sync(int metrics, long world_size);

/// Host time of those calls at `per_call` each (the device profile's eager_copy_call: ASSUMPTION,
/// a Python zeros_like and c10d's C++ copy_ each cost the host what a Python Tensor.copy_ does).
[[nodiscard]] Seconds composer_metric_sync_host_time(int metrics, long world_size,
                                                     Seconds per_call);

}  // namespace trainsim::model

#pragma once
// ZB-V, the V-shaped zero-bubble pipeline schedule of Qi et al., "Zero Bubble Pipeline
// Parallelism" (ICLR 2024), computed as the paper's code computes it
// (megatron/core/pipeline_parallel/v_schedule.py, PipelineGraph.get_v_schedule, at commit
// 678c9996 of sail-sg/zero-bubble-pipeline-parallelism). Each stage holds two model chunks that
// form a V: chunk 0 is virtual stage `stage`, chunk 1 virtual stage 2 pp - 1 - stage, so the last
// stage feeds its own second chunk and the first stage computes the loss. Every backward is split
// into B (the input gradient, on the critical path) and W (the weight gradient, deferred to fill
// the bubbles). The generator is a greedy simulation in integer time, so the order it returns
// depends on the exact costs, ties included; it is reproduced here integer for integer. The
// post-validation and rollback nodes of the paper's optimizer post-validation are not produced.
// Plain data, testable without SimGrid.
#include <cstdint>
#include <vector>

namespace trainsim::program {

/// Costs of one model chunk's passes, in integer time units (the paper's code uses ns); equal
/// values tie as in the paper's code.
struct ZeroBubbleVCosts {
  long forward = 1, input_gradient = 1, weight_gradient = 1, communication = 0;
};

/// Activation memory of one chunk's passes in any integer unit (paper: f = 34h + 5as, w = -32h,
/// b = -f - w); limit 0 = the paper's default 2 * pp * forward (1F1B's).
struct ZeroBubbleVMemory {
  long forward = 1, weight_gradient = 0, limit = 0;
};

struct ZeroBubbleVNode {
  enum class Kind : std::uint8_t {
    forward,
    input_gradient,
    weight_gradient,
    send_forward,
    receive_forward,
    send_backward,
    receive_backward
  };
  Kind kind;
  long chunk;
  long micro_batch;
  long start;       ///< compute: when it starts; communication: when its producer completes
  long completion;  ///< compute: when it completes; communication: the same as start
  /// A pass (F, B or W) rather than a transfer.
  [[nodiscard]] bool computes() const {
    return kind == Kind::forward || kind == Kind::input_gradient || kind == Kind::weight_gradient;
  }
  bool operator==(const ZeroBubbleVNode& o) const {
    return kind == o.kind && chunk == o.chunk && micro_batch == o.micro_batch && start == o.start &&
           completion == o.completion;
  }
};

/// Per stage (index = pipeline rank), its nodes in issue order: the compute nodes (chunk = model
/// chunk: 0 the first leg of the V, 1 the second) and the communication nodes, as
/// get_v_schedule's local_order has them: sorted by start time, communication before compute at
/// equal times, then the swap that issues a receive before the compute it overlaps. A send and
/// its receive name the same chunk and micro-batch: the sender's forward output (send_forward)
/// or input gradient (send_backward). Throws std::invalid_argument for pp < 2 or
/// micro_batches < 1, or where the paper's code fails an assertion (a memory limit the schedule
/// cannot keep).
[[nodiscard]] std::vector<std::vector<ZeroBubbleVNode>> zero_bubble_v_schedule(
    long pp, long micro_batches, const ZeroBubbleVCosts& costs, const ZeroBubbleVMemory& memory);

}  // namespace trainsim::program

#pragma once
// When a pipeline stage exchanges tensors with its neighbours, as Megatron-LM issues them
// (megatron/schedules.py and megatron/p2p_communication.py at the SC'21 commit 6985e58):
// every exchange is one `_communicate` call, a batch of up to four point-to-point operations
// (send to the next stage, receive from the previous one, send to the previous one, receive from
// the next one) started together by batch_isend_irecv, all waited for, then
// torch.cuda.synchronize(). The host issues nothing else meanwhile, so the next compute starts
// only when the whole batch is done: in 1F1B's steady state the forward's output goes out
// together with the wait for the backward's incoming gradient (send_forward_recv_backward), the
// backward's input gradient together with the next forward's input (send_backward_recv_forward).
// Plain data, testable without SimGrid.
#include <cstddef>
#include <vector>

#include "plan/training_plan.hpp"
#include "program/pipeline_schedule.hpp"
#include "program/zero_bubble_v.hpp"

namespace trainsim::program {

/// One point-to-point operation. `boundary` is the virtual stage on the lower side of the link
/// crossed (activations go boundary -> boundary + 1, gradients boundary + 1 -> boundary), so an
/// operation and its peer's name the same transfer.
struct PipelineTransfer {
  bool send = true;
  bool gradient = false;  ///< false: a forward activation, true: its gradient
  long boundary = 0;
  long micro_batch = 0;
  bool operator==(const PipelineTransfer& o) const {
    return send == o.send && gradient == o.gradient && boundary == o.boundary && micro_batch == o.micro_batch;
  }
};

/// A step of a stage's host program: the next compute slot of pipeline_order, or one batch of
/// transfers waited for together.
struct PipelineStep {
  bool compute = false;
  std::size_t slot = 0;                     ///< compute: index into pipeline_order(...)
  std::vector<PipelineTransfer> transfers;  ///< exchange: the batch (never empty)
  /// exchange: the compute that follows waits for every transfer of the batch. false (Megatron-
  /// core's overlap_p2p_comm): the batch is left in flight; each receive is waited for by the
  /// slot that reads it, each send by the compute after the next exchange sending the same way.
  bool waited = true;
};

/// Every stage's steps (index = stage), as `engine` issues them. Megatron: the batched exchanges
/// above. DeepSpeed (PipelineEngine with TrainSchedule, deepspeed/runtime/pipe/schedule.py and
/// pipe/p2p.py at v0.6.2, 32d9797, the 2022 code BLOOM ran): the schedule is a sequence of
/// steps, on even (odd) steps even (odd) stages run a forward and the others a backward, and
/// each step first exchanges with the one neighbour of that pass: a forward step receives its
/// input (RecvActivation) then sends the previous backward's input gradient (SendGrad), a
/// backward step sends the previous forward's output (SendActivation) then receives its
/// gradient (RecvGrad). Each instruction is one blocking torch.distributed send or recv
/// (p2p.send/recv with async_op=False: its wait() holds the compute stream until the peer's
/// matching operation is done), so every transfer is its own exchange of one, and a stage's
/// output leaves only when its next step starts. Receives are matched to the peer's sends in order, as
/// NCCL matches point-to-point operations between two ranks, so a receive names the transfer it
/// completes. Throws InvariantError if the stages' sends and receives do not pair up.
///
/// `overlap_p2p` (interleaved schedule, Megatron engine): Megatron-core's overlap_p2p_comm with
/// batch_p2p_comm off (core_r0.10.0 megatron/core/pipeline_parallel/schedules.py
/// forward_backward_pipelining_with_interleaving, overlap_p2p_comm_warmup_flush off, and
/// p2p_communication.py _p2p_ops): every exchange is plain isend/irecv, and a wait on one is a
/// wait of the compute stream (no torch.cuda.synchronize, the host goes on issuing). The warm-up
/// forwards exchange as before but one direction at a time (send_forward_recv_forward, waited),
/// the last one also posting the first backward's receive; in the steady state each forward
/// sends its output and posts the next forward's receive, each backward its input gradient and
/// the next backward's receive, none waited there (PipelineStep::waited false); the cool-down
/// backwards exchange waited (send_backward_recv_backward).
[[nodiscard]] std::vector<std::vector<PipelineStep>> pipeline_exchanges(
    plan::PipelineSchedule schedule, long pp, long micro_batches, long chunks,
    plan::PipelineEngine engine = plan::PipelineEngine::megatron, bool overlap_p2p = false);

/// Each stage's compute slots and steps under ZB-V, from its schedule (zero_bubble_v_schedule), as
/// the paper's runtime issues them (sail-sg/zero-bubble-pipeline-parallelism 678c9996
/// zb_schedules.py, ZeroBubbleVPipeScheduler): consecutive communication nodes go out as one
/// batch_isend_irecv, cut where the next compute reads a receive of the batch or a compute comes
/// next; nothing is waited for there (PipelineStep::waited false), a compute waits for every
/// request of the batch that brought its input (its recorded handles), and sends only at the
/// step's end. Chunk 0's output on the last stage feeds its chunk 1 in place: no transfer.
struct PipelinePrograms {
  std::vector<std::vector<PipelineSlot>> slots;  ///< per stage: its compute slots in order
  std::vector<std::vector<PipelineStep>> steps;  ///< per stage: slots and exchanges in issue order
};
[[nodiscard]] PipelinePrograms zero_bubble_v_programs(const std::vector<std::vector<ZeroBubbleVNode>>& schedule,
                                                      const plan::TrainingPlan& plan);

}  // namespace trainsim::program

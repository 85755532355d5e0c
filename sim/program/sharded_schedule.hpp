#pragma once
// Parameter-sharded data parallelism: PyTorch FSDP (full or hybrid sharding, SMP v2) and
// DeepSpeed ZeRO-3, optionally with Megatron-style tensor parallelism inside each replica.
//
// Units are the embedding, each transformer layer and the head (FSDP's per-layer wrapping).
// Per micro-batch, every rank:
//  - forward: all-gathers each unit's parameters (on a gather stream) before computing it; the
//    gather of unit i+1 may start once unit i-1 is computed (two units in flight: FSDP's
//    limit_all_gathers rate limiter, which blocks the issuing CPU thread on the free event of the
//    unit two back, _FreeEventQueue with _max_num_inflight_all_gathers = 2), so gathers hide
//    behind compute when they can. The host thread is assumed to run ahead of the GPU, so a
//    gather is issued as soon as the limiter lets it go (forward_prefetch makes no difference
//    then);
//  - backward (head, last layer ... embedding): gathers each unit again (resharded after
//    forward), one unit ahead: the gather of unit k-1 may start once the backward of unit k+1 is
//    done. That is BACKWARD_POST under the rate limiter (PyTorch FSDP's post-backward hook
//    reshards unit k, then prefetches k-1, and the limiter waits for k+1's free event) and
//    Composer's default (v0.12-v0.15 dist_strategy.py, backward_prefetch 'BACKWARD_POST'), which
//    llm-foundry's benchmark yamls keep (BACKWARD_PRE, PyTorch's own default, would issue it
//    one unit earlier, at k's pre-backward hook: not modelled); recomputes the unit's forward first
//    under activation checkpointing; reduce-scatters its gradients on a reduce stream as soon as
//    it is done, overlapping the next unit's backward; with hybrid sharding, all-reduces the
//    reduced shard across the replicas;
//  - tensor parallelism: each layer pass ends with an all-reduce of its output over the TP group
//    (Megatron's two all-reduces per layer and pass, merged), in the critical path; with
//    sequence parallelism (Korthikanti et al. 2022) an all-gather of its inputs before it and a
//    reduce-scatter of its outputs after it instead, the same bytes on the wire (Megatron's
//    re-gather of the input for the weight gradient, overlapped with the input-gradient GEMM,
//    is not modelled);
//  - the optimizer steps on the rank's shard once every gradient is reduced.
//
// With plan::FsdpImplementation::torch_fsdp1 (PyTorch's FullyShardedDataParallel, read in the
// 1.13 line's fully_sharded_data_parallel.py and ProcessGroupNCCL.cpp), two things change:
//  - the embedding and head are FSDP's root unit, one flat parameter that forward() does not
//    reshard: gathered once per micro-batch before the embedding (with the head's parameters),
//    never again in backward, and reduce-scattered once after the embedding's backward;
//  - gathers and reduce-scatters go to one process group, whose collectives ProcessGroupNCCL runs
//    on one stream per device in host issue order; FSDP's "all_gather" and "post_backward"
//    streams only say what each waits for. The order is the post-backward hook's: reshard unit k,
//    prefetch k-1's gather, then k's reduce-scatter. A replica all-reduce (hybrid sharding) is on
//    another process group, so on a stream of its own.
// Under FSDP1's SHARD_GRAD_OP (plan::FsdpShardingStrategy) no unit is freed after its forward:
// each is gathered once per micro-batch (Composer reduce-scatters every micro-batch, so the
// post-backward hook frees it each time), held until its backward, which frees it, and no forward
// gather waits for the rate limiter (no forward reshard enqueues a free event). The host's waits
// on the limiter in the backward's pre-backward hooks (_unshard dequeues the event of the unit two
// back even when nothing is gathered) are not modelled: they keep the host at most two units
// ahead of the device, which delays the device only where the host takes longer to issue a unit's
// backward than the device takes to run the unit before.
#include "program/program.hpp"
#include "program/schedule_inputs.hpp"

namespace trainsim::program {

[[nodiscard]] Program build_sharded_data_parallel(const ScheduleInputs& in);

}  // namespace trainsim::program

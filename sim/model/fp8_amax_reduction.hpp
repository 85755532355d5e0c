#pragma once
// Transformer Engine's delayed scaling reduces the amaxes its FP8 modules recorded, as TE 1.13
// runs it under Megatron-core (core_r0.10.0):
//  - Megatron-core wraps each TransformerBlock's forward (one model chunk's layers) in
//    te.pytorch.fp8_autocast with fp8_group = the amax reduction group
//    (megatron/core/transformer/transformer_block.py; parallel_state.get_amax_reduction_group:
//    the stage's tensor- and data-parallel group, or the TP group alone with tp_only_amax_red).
//  - Every FP8 module registers its amax row with FP8GlobalStateManager, one buffer per
//    (direction, recipe, group) for the whole rank, so every chunk's modules share it
//    (transformer_engine/pytorch/fp8.py add_fp8_tensors_to_global_buffer): per layer 21 forward
//    amaxes (three per GEMM: the four linears, 12, and DotProductAttention's three GEMMs, 9, which
//    it registers through prepare_forward(num_gemms=3) even when attention runs in bf16) and 14
//    backward ones (two per GEMM), fp32 each (module/base.py set_meta_tensor).
//  - At the exit of the outermost fp8_autocast (fp8_autocast_exit) and at the end of the backward
//    of the region's first FP8 module (linear.py / layernorm_linear.py:
//    reduce_and_update_bwd_fp8_tensors), reduce_and_update_fp8_tensors concatenates the buffer
//    (torch.cat), all-reduces it with MAX over the group when the group has more than one rank
//    (torch.distributed.all_reduce, async_op=False: the compute stream waits for it), and runs the
//    fused amax-and-scale update (tex.fused_amax_and_scale_update_after_reduction).
// So a chunk's forward and its backward each end with two small kernels and one all-reduce of
// (the rank's layers) x 21 x 4 B, resp. x 14 x 4 B, on the compute stream's critical path.
#include <string>

#include "core/units.hpp"
#include "model/operation.hpp"

namespace trainsim::model {

/// FP8 tensors of one Megatron-core transformer layer whose amaxes TE records (see above).
inline constexpr int kTeForwardAmaxesPerLayer = 21;
inline constexpr int kTeBackwardAmaxesPerLayer = 14;

/// Bytes of the amax buffer all-reduced at a forward (backward) region's end: every FP8 layer of
/// the rank, `rank_layers`, registered in the one buffer.
[[nodiscard]] Bytes te_amax_buffer_bytes(long rank_layers, bool forward);

/// The torch.cat that gathers the modules' amax rows into the buffer before the all-reduce.
[[nodiscard]] Operation te_amax_concat_op(long rank_layers, bool forward);

/// The fused update after it: reads the reduced amaxes and writes each tensor's amax history row,
/// scale and inverse scale. A longer history rolls in the same kernel: left out (1 row in
/// Megatron-core's default and NeMo's launcher configs; NeMo 2's 1,024 rows at 12 layers move
/// about 1 MB each way, under a microsecond at an H100's streaming rate).
[[nodiscard]] Operation te_amax_update_op(long rank_layers, bool forward);

}  // namespace trainsim::model

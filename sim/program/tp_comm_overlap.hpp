#pragma once
// A layer pass's ops cut into pieces around the four linear projections, by the collective each
// linear's sequence parallelism runs and what it overlaps, for two implementations.
//
// Megatron's own sequence parallelism (sequence_parallel without tp_comm_overlap;
// megatron/mpu/layers.py from its first version in 2022, then
// megatron/core/tensor_parallel/layers.py LinearWithGradAccumulationAndAsyncCommunication):
//  - gather (qkv and fc1 forward, proj and fc2 input gradients): the sequence-sharded input (or
//    output gradient) all-gathered, then the whole GEMM, which waits for it;
//  - scatter (proj and fc2 forward): the GEMM, then its output reduce-scattered, which what
//    follows waits for;
//  - bulk (qkv and fc1 backward): the input re-gathered for the weight gradient beside the
//    data-gradient GEMM, then that GEMM's output reduce-scattered beside the weight-gradient GEMM
//    (the backward's two async handles, each waited for before the next step).
//
// Transformer Engine's userbuffers TP communication overlap (tp_comm_overlap in NeMo and
// Megatron-core; transformer_engine/pytorch/module/base.py initialize_ub) as plain data: a layer
// pass's ops cut into pieces around the four linear projections whose sequence-parallel
// collective TE hides. Methods as NeMo's H100 userbuffers configs set them
// (nemo/collections/llm/recipes/tp_overlap_configs/userbuffers.py):
//  - ring_gather (ring_exchange: qkv_fprop, fc1_fprop, proj_dgrad, fc2_dgrad): the GEMM runs in
//    k = TP chunks along the tokens; chunk 0 on the rank's own shard, chunk i on the shard that
//    reached it after i steps around the TP ring (each step one ring_exchange call over the TP
//    group: every rank forwards a shard to the next at once; coarse: the k - 1 steps one call
//    repeated k - 1 times).
//  - pipelined_scatter (pipeline: proj_fprop, fc2_fprop): k GEMM chunks, each chunk's output
//    reduce-scattered as the next chunk computes.
//  - bulk (qkv_dgrad/wgrad, fc1_dgrad/wgrad): the weight gradient's input re-gather runs beside
//    the data-gradient GEMM, and that GEMM's reduce-scatter beside the weight-gradient GEMM.
// What the userbuffers move per element, read in Transformer Engine 1.12/1.13 (module/base.py
// initialize_ub: a buffer is uint8 when use_fp8 and its fp8_buf; fp8_buf is set for every
// all-gather userbuffer, layers_all_gather_overlap, and for a pipeline reduce-scatter, proj_fprop
// or fc2_fprop, only where the config says fp8_buf; NeMo passes use_fp8 = the model's fp8):
//  - the ring all-gathers and the bulk re-gathers in FP8 with FP8 on: layernorm_linear.py writes
//    the norm's FP8 output into the qkv/fc1_fprop buffer and copies its saved FP8 output into the
//    _dgrad buffer for the re-gather; base.py grad_output_preprocess casts the row-parallel
//    linear's gradient into the proj/fc2_dgrad buffer before the ring;
//  - the pipelined reduce-scatters (proj_fprop, fc2_fprop) in FP8 where fp8_buf is configured
//    (linear.py: the GEMM writes its FP8 output chunks into the buffer, reduced into a bf16 shard):
//    NeMo 2's GPT-3 175B performance script sets proj_fprop's; the launcher's yaml configs none;
//  - the bulk reduce-scatters (qkv_wgrad, fc1_wgrad) in bf16: not all-gather buffers, not pipeline.
// The schedule turns pieces into tasks; the overlap itself is SimGrid's, from the dependencies.
#include <optional>
#include <string>
#include <vector>

#include "model/operation.hpp"
#include "plan/training_plan.hpp"

namespace trainsim::program {

struct OverlapPiece {
  enum class Kind { compute, gather, scatter, ring_gather, pipelined_scatter, bulk };
  Kind kind = Kind::compute;
  /// compute: its ops; gather, scatter, ring_gather, pipelined_scatter: the one GEMM; bulk:
  /// {dgrad, wgrad}.
  std::vector<model::Operation> ops;
  /// Bytes per element of what the piece's all-gather (ring steps, bulk re-gather) and its
  /// reduce-scatter (pipelined chunks, bulk) move; compute: unused.
  double gather_bytes = 2;
  double scatter_bytes = 2;
};

/// Which userbuffers hold FP8 (see the header): all-gathers with Transformer Engine's FP8 on,
/// the two pipelined reduce-scatters where their fp8_buf is configured.
struct UserbufferPrecision {
  bool fp8 = false;
  bool proj_fprop_fp8_buf = false;
  bool fc2_fprop_fp8_buf = false;
};

/// A layer pass's ops (layer_forward_ops or layer_backward_ops, in order) as pieces. Throws
/// InvariantError unless the pass has the fused QKV, the output projection and the MLP's two
/// linears (TE's LayerNormLinear/Linear/LayerNormMLP).
/// Each piece's wire bytes per element follow `precision`.
[[nodiscard]] std::vector<OverlapPiece> tp_overlap_pieces(const std::vector<model::Operation>& ops, bool forward,
                                                          const UserbufferPrecision& precision = {});

/// The same pass as Megatron's own sequence parallelism runs it (gather, scatter and bulk pieces,
/// the header's first list). `gather_bytes` per element of the all-gathers (1 where the linears
/// gather FP8, model/fp8_linear.hpp); the reduce-scatters move bf16. nullopt for a layer without
/// a fused QKV, an output projection and two MLP linears (eager q, k, v or gate and up
/// projections, Hugging Face's BERT): the schedule keeps such a pass whole.
[[nodiscard]] std::optional<std::vector<OverlapPiece>> sequence_parallel_pieces(
    const std::vector<model::Operation>& ops, bool forward, double gather_bytes = 2);

/// One of `chunks` equal slices of `gemm` along its rows (tokens), at its own shape's rate.
[[nodiscard]] model::Operation gemm_chunk(const model::Operation& gemm, long chunks);

/// The tasks a piece becomes, in the order the schedule pushes them (for their names). Per step:
/// ring_gather: chunk 0's GEMM, then per chunk i > 0 a ring step and chunk i's GEMM;
/// pipelined_scatter: per chunk its GEMM and its reduce-scatter. Coarse (plan::TpOverlapModel):
/// ring_gather: chunks 0..k-2's GEMMs as one task, steps 1..k-1 as one repeated ring call, the
/// last chunk; pipelined_scatter: chunk 0, the reduce-scatters of chunks 0..k-2 as one repeated
/// call, chunks 1..k-1 as one task, the last chunk's reduce-scatter. With two chunks both read
/// the same. bulk: re-gather, dgrad, reduce-scatter, wgrad. gather: the all-gather, the GEMM;
/// scatter: the GEMM, the reduce-scatter.
[[nodiscard]] std::vector<std::string> piece_task_labels(const OverlapPiece& piece, long chunks,
                                                         plan::TpOverlapModel model = plan::TpOverlapModel::per_step);

}  // namespace trainsim::program

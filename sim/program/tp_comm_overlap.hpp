#pragma once
// Transformer Engine's userbuffers TP communication overlap (tp_comm_overlap in NeMo and
// Megatron-core; transformer_engine/pytorch/module/base.py initialize_ub) as plain data: a layer
// pass's ops cut into pieces around the four linear projections whose sequence-parallel
// collective TE hides. Methods as NeMo's H100 userbuffers configs set them
// (nemo/collections/llm/recipes/tp_overlap_configs/userbuffers.py):
//  - ring_gather (ring_exchange: qkv_fprop, fc1_fprop, proj_dgrad, fc2_dgrad): the GEMM runs in
//    k = TP chunks along the tokens; chunk 0 on the rank's own shard, chunk i on the shard that
//    reached it after i steps around the TP ring (each step one ring_exchange call over the TP
//    group: every rank forwards a shard to the next at once).
//  - pipelined_scatter (pipeline: proj_fprop, fc2_fprop): k GEMM chunks, each chunk's output
//    reduce-scattered as the next chunk computes.
//  - bulk (qkv_dgrad/wgrad, fc1_dgrad/wgrad): the weight gradient's input re-gather runs beside
//    the data-gradient GEMM, and that GEMM's reduce-scatter beside the weight-gradient GEMM.
// The schedule turns pieces into tasks; the overlap itself is SimGrid's, from the dependencies.
#include <string>
#include <vector>

#include "model/operation.hpp"

namespace trainsim::program {

struct OverlapPiece {
  enum class Kind { compute, ring_gather, pipelined_scatter, bulk };
  Kind kind = Kind::compute;
  /// compute: its ops; ring_gather, pipelined_scatter: the one GEMM; bulk: {dgrad, wgrad}.
  std::vector<model::Operation> ops;
};

/// A layer pass's ops (layer_forward_ops or layer_backward_ops, in order) as pieces. Throws
/// InvariantError unless the pass has the fused QKV, the output projection and the MLP's two
/// linears (TE's LayerNormLinear/Linear/LayerNormMLP).
[[nodiscard]] std::vector<OverlapPiece> tp_overlap_pieces(const std::vector<model::Operation>& ops, bool forward);

/// One of `chunks` equal slices of `gemm` along its rows (tokens), at its own shape's rate.
[[nodiscard]] model::Operation gemm_chunk(const model::Operation& gemm, long chunks);

/// The tasks a piece becomes, in the order the schedule pushes them (for their names):
/// ring_gather: per chunk i > 0 a ring step, then chunk i's GEMM; pipelined_scatter:
/// per chunk its GEMM and its reduce-scatter; bulk: re-gather, dgrad, reduce-scatter, wgrad.
[[nodiscard]] std::vector<std::string> piece_task_labels(const OverlapPiece& piece, long chunks);

}  // namespace trainsim::program

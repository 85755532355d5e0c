#include "program/tp_comm_overlap.hpp"

#include <optional>
#include <tuple>
#include <utility>

#include "core/error.hpp"
#include "model/fp8_linear.hpp"

namespace trainsim::program {

namespace {

using Kind = OverlapPiece::Kind;

/// How TE overlaps the collective of the GEMM named `name` (forward names, or backward's
/// "_dgrad"/"_wgrad"); compute when it has none.
Kind kind_of(const std::string& name, bool forward) {
  if (forward) {
    if (name == "qkv" || name == "ffn_in" || name == "ffn_gate_up") return Kind::ring_gather;
    if (name == "attn_out" || name == "ffn_out") return Kind::pipelined_scatter;
    return Kind::compute;
  }
  if (name == "attn_out_dgrad" || name == "ffn_out_dgrad") return Kind::ring_gather;
  if (name == "qkv_dgrad" || name == "ffn_in_dgrad" || name == "ffn_gate_up_dgrad") return Kind::bulk;
  return Kind::compute;
}

/// What the piece of GEMM `name` moves per element over its all-gather and its reduce-scatter.
std::pair<double, double> wire_bytes(const std::string& name, Kind kind, const UserbufferPrecision& u) {
  const double fp8 = 1, bf16 = 2;
  const double gather = u.fp8 ? fp8 : bf16;
  switch (kind) {
    case Kind::ring_gather: return {gather, bf16};
    case Kind::bulk: return {gather, bf16};
    case Kind::pipelined_scatter: {
      const bool fp8_buf = name == "attn_out" ? u.proj_fprop_fp8_buf : u.fc2_fprop_fp8_buf;
      return {gather, u.fp8 && fp8_buf ? fp8 : bf16};
    }
    case Kind::gather:
    case Kind::scatter:
    case Kind::compute: break;
  }
  return {bf16, bf16};
}

/// How Megatron's own sequence parallelism runs the collective of GEMM `name` (the header's first
/// list): TE's ring and pipelined GEMMs as whole GEMMs after or before a blocking collective, the
/// same bulk backward; compute when it has none.
Kind megatron_kind_of(const std::string& name, bool forward) {
  const Kind te = kind_of(name, forward);
  if (te == Kind::ring_gather) return Kind::gather;
  if (te == Kind::pipelined_scatter) return Kind::scatter;
  return te;
}

/// The ops cut at the GEMMs `kind_of_gemm` names, each piece's wire bytes from `bytes`; nullopt
/// unless the pass has the two gathering and the two scattering linears.
template <typename KindOf, typename BytesOf>
std::optional<std::vector<OverlapPiece>> cut_at_linears(const std::vector<model::Operation>& ops, KindOf kind_of_gemm,
                                                        BytesOf bytes, const std::string& what) {
  std::vector<OverlapPiece> pieces;
  int gathers = 0, scatters = 0;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const model::Operation& op = ops[i];
    const Kind kind = op.kind == model::OpKind::gemm ? kind_of_gemm(op.name) : Kind::compute;
    if (kind == Kind::compute) {
      if (pieces.empty() || pieces.back().kind != Kind::compute) pieces.push_back({Kind::compute, {}});
      pieces.back().ops.push_back(op);
      continue;
    }
    OverlapPiece piece{kind, {op}};
    std::tie(piece.gather_bytes, piece.scatter_bytes) = bytes(op.name, kind);
    if (kind == Kind::bulk) {
      // backward_of emits a GEMM's dgrad and then its wgrad.
      TRAINSIM_CHECK(i + 1 < ops.size() && ops[i + 1].name == op.name.substr(0, op.name.size() - 5) + "wgrad",
                     what + ": " + op.name + " is not followed by its weight gradient");
      piece.ops.push_back(ops[++i]);
    }
    (kind == Kind::ring_gather || kind == Kind::gather ? gathers : scatters) += 1;
    pieces.push_back(std::move(piece));
  }
  if (gathers != 2 || scatters != 2) return std::nullopt;
  return pieces;
}

}  // namespace

std::vector<OverlapPiece> tp_overlap_pieces(const std::vector<model::Operation>& ops, bool forward,
                                            const UserbufferPrecision& precision) {
  auto pieces = cut_at_linears(
      ops, [&](const std::string& name) { return kind_of(name, forward); },
      [&](const std::string& name, Kind kind) { return wire_bytes(name, kind, precision); }, "tp_comm_overlap");
  TRAINSIM_CHECK(pieces.has_value(),
                 "tp_comm_overlap needs a layer with a fused QKV, an output projection and two MLP linears");
  return *std::move(pieces);
}

std::optional<std::vector<OverlapPiece>> sequence_parallel_pieces(const std::vector<model::Operation>& ops,
                                                                  bool forward, double gather_bytes) {
  return cut_at_linears(
      ops, [&](const std::string& name) { return megatron_kind_of(name, forward); },
      [&](const std::string&, Kind) { return std::pair<double, double>{gather_bytes, 2}; }, "sequence parallelism");
}

model::Operation gemm_chunk(const model::Operation& gemm, long chunks) {
  const double rows = gemm.m / static_cast<double>(chunks);
  model::Operation chunk = gemm.dtype == model::Dtype::fp8 ? model::make_fp8_gemm(gemm.name, rows, gemm.n, gemm.k, gemm.batch)
                                                           : model::make_gemm(gemm.name, rows, gemm.n, gemm.k, gemm.batch, gemm.dtype);
  chunk.kernels = 1;
  return chunk;
}

namespace {

/// " chunk 3", or " chunks 1-3" for a range.
std::string chunks_label(long first, long last) {
  return first == last ? " chunk " + std::to_string(first)
                       : " chunks " + std::to_string(first) + "-" + std::to_string(last);
}

}  // namespace

std::vector<std::string> piece_task_labels(const OverlapPiece& piece, long chunks, plan::TpOverlapModel model) {
  std::vector<std::string> labels;
  const std::string& gemm = piece.ops.front().name;
  const bool coarse = model == plan::TpOverlapModel::coarse;
  switch (piece.kind) {
    case Kind::compute: labels.push_back(piece.ops.front().name + ".." + piece.ops.back().name); break;
    case Kind::gather:
      labels.push_back("tp all-gather " + gemm);
      labels.push_back(gemm);
      break;
    case Kind::scatter:
      labels.push_back(gemm);
      labels.push_back("tp reduce-scatter " + gemm);
      break;
    case Kind::ring_gather:
      if (coarse) {
        labels.push_back(gemm + chunks_label(0, chunks - 2));
        labels.push_back("tp ring exchange " + gemm + chunks_label(1, chunks - 1));
        labels.push_back(gemm + chunks_label(chunks - 1, chunks - 1));
        break;
      }
      for (long i = 0; i < chunks; ++i) {
        const std::string chunk = " chunk " + std::to_string(i);
        if (i > 0) labels.push_back("tp ring exchange " + gemm + chunk);
        labels.push_back(gemm + chunk);
      }
      break;
    case Kind::pipelined_scatter:
      if (coarse) {
        labels.push_back(gemm + chunks_label(0, 0));
        labels.push_back("tp reduce-scatter " + gemm + chunks_label(0, chunks - 2));
        labels.push_back(gemm + chunks_label(1, chunks - 1));
        labels.push_back("tp reduce-scatter " + gemm + chunks_label(chunks - 1, chunks - 1));
        break;
      }
      for (long i = 0; i < chunks; ++i) {
        const std::string chunk = " chunk " + std::to_string(i);
        labels.push_back(gemm + chunk);
        labels.push_back("tp reduce-scatter " + gemm + chunk);
      }
      break;
    case Kind::bulk:
      labels.push_back("tp re-gather " + gemm);
      labels.push_back(gemm);
      labels.push_back("tp reduce-scatter " + gemm);
      labels.push_back(piece.ops.back().name);
      break;
  }
  return labels;
}

}  // namespace trainsim::program

#pragma once
// What a fused (flash) attention kernel achieves on a device. Its efficiency is not one number:
// short sequences leave the GPU underfilled and a causal mask wastes part of the diagonal blocks,
// so the published kernel benchmarks (FlashAttention-2 paper, figures 4-6) rise from ~0.3 of peak
// at 512 tokens to ~0.6 at 8k. A kernel is therefore a set of curves, one per (masking, head
// dimension) measured, each giving forward and backward efficiency by sequence length.
#include <string>
#include <vector>

namespace trainsim::model {

struct AttentionEfficiencyPoint {
  double seq = 0;       ///< query (= key) length per sequence
  double forward = 0;   ///< achieved / peak, FLOPs counted as model::make_fused_attention does
  double backward = 0;  ///< the same for the backward kernel (2.5x the forward's FLOPs)
};

struct AttentionEfficiencyCurve {
  bool causal = true;
  double head_dim = 0;
  std::vector<AttentionEfficiencyPoint> points;  ///< ascending seq
};

struct AttentionKernel {
  std::string name;  ///< e.g. "flash-attention-2", what training.attention_kernel names
  std::vector<AttentionEfficiencyCurve> curves;
};

/// Efficiency of `kernel` for one call: the curve of the same masking (any masking when the
/// kernel has none of it) whose head dimension is nearest in ratio, linear in log2(seq) between
/// its points and flat beyond its ends (the benchmarks plateau at both ends).
[[nodiscard]] double attention_efficiency(const AttentionKernel& kernel, bool causal, double head_dim,
                                          double seq, bool backward);

}  // namespace trainsim::model

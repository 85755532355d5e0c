#pragma once
// How much a kernel that holds K streaming multiprocessors (a NCCL kernel's channels, one thread
// block each) slows the arithmetic kernels beside it on the same accelerator. Measured on an H100
// it is not K's share of the SMs: a persistent Hopper GEMM (one CTA per SM) loses 3-12% beside a
// single held SM (validate/derive_held_sm_slowdown.py). Devices without a measurement keep the
// proportional share.
#include <vector>

#include "core/json_reader.hpp"

namespace trainsim::model {

struct HeldSmPoint {
  int sms = 0;          ///< SMs held beside the compute
  double slowdown = 1;  ///< arithmetic kernel time beside them / alone (>= 1)
};

/// Measured slowdown of arithmetic (GEMM, attention) kernels beside held SMs, sms ascending;
/// empty: not measured (the held SMs' proportional share).
struct HeldSmSlowdown {
  std::vector<HeldSmPoint> points;
};

/// The fraction of an accelerator of `sm_count` SMs' arithmetic rate that `held` SMs take:
/// held / sm_count without points; with points, 1 - 1 / slowdown(held), the slowdown interpolated
/// linearly between the points (and from 1 at 0 held), and above the last point that point's
/// fraction plus the further SMs' share. Capped at 1 - 1 / sm_count: one SM is always left
/// (the engine holds at most sm_count - 1). 0 for held <= 0.
[[nodiscard]] double held_sm_fraction(const HeldSmSlowdown& s, int sm_count, int held);

/// Reads a device profile's "held_sm_slowdown": {"points": [{"sms", "slowdown"}...], "source"};
/// `sm_count` is the profile's (points must hold fewer SMs than the device has). ConfigError on
/// bad input.
[[nodiscard]] HeldSmSlowdown read_held_sm_slowdown(JsonObject o, int sm_count);

}  // namespace trainsim::model

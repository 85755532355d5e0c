#include "memory/memory_advice.hpp"

#include <algorithm>
#include <cstdio>

namespace trainsim::memory {

namespace {

Bytes worst(const std::vector<RankMemory>& ranks) {
  Bytes w = 0;
  for (const auto& r : ranks) w = std::max(w, r.peak);
  return w;
}

bool fits(const MemoryInputs& in) { return worst(rank_memory(in)) <= in.capacity; }

std::string gib(Bytes b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", b / (1024.0 * 1024 * 1024));
  return buf;
}

}  // namespace

MemoryVerdict judge_memory(const MemoryInputs& in) {
  MemoryVerdict v;
  v.ranks = rank_memory(in);
  for (const auto& r : v.ranks)
    if (r.peak >= v.worst_peak) {
      v.worst_peak = r.peak;
      v.worst_rank = r.kind;
    }
  v.fits = v.worst_peak <= in.capacity;

  const bool sharded = in.plan.sharding != plan::Sharding::none;
  if (sharded) {
    for (long d = 1; d <= in.layout.dp; ++d) {
      if (in.layout.dp % d != 0) continue;
      MemoryInputs t = in;
      t.layout.shard = d;
      if (fits(t)) {
        v.smallest_fitting_shard = d;
        break;
      }
    }
  }
  if (v.fits) return v;

  if (v.smallest_fitting_shard) {
    v.advice = "raise the sharding degree to " + std::to_string(*v.smallest_fitting_shard);
    return v;
  }
  // Unsharded plans: sharded data parallelism first (source 000's starting point).
  if (!sharded && in.layout.dp > 1) {
    MemoryInputs t = in;
    t.plan.sharding = plan::Sharding::zero3;
    t.plan.gradient_buffers = plan::GradientBuffers::generic;  // ZeRO-3 / FSDP: the recipe's copies, sharded
    t.layout.shard = in.layout.dp;
    if (fits(t)) {
      v.advice = "shard the parameters, gradients and optimizer states (ZeRO-3 / FSDP over " +
                 std::to_string(in.layout.dp) + " ranks)";
      return v;
    }
  }
  // Fully sharded (or the plan's sharding as is, when it shards nothing), then the batch.
  MemoryInputs base = in;
  if (sharded) base.layout.shard = in.layout.dp;
  for (long mb = in.plan.micro_batch / 2; mb >= 1; mb /= 2) {
    MemoryInputs t = base;
    t.plan.micro_batch = mb;
    if (fits(t)) {
      v.advice = "lower the micro-batch to " + std::to_string(mb) +
                 (sharded ? " with sharding degree " + std::to_string(base.layout.shard) : "");
      return v;
    }
  }
  // Then tensor parallelism inside a node, at the plan's micro-batch and full sharding.
  for (long tp = in.plan.tp * 2; tp <= in.layout.ranks_per_node; tp *= 2) {
    if (in.layout.world % (tp * in.plan.pp) != 0 || in.model.heads % tp != 0) continue;
    MemoryInputs t = base;
    t.plan.tp = tp;
    t.layout.dp = in.layout.world / (tp * in.plan.pp);
    if (sharded) t.layout.shard = t.layout.dp;
    if (fits(t)) {
      v.advice = "raise the tensor-parallel degree to " + std::to_string(tp) +
                 (sharded ? " (sharding over the remaining " + std::to_string(t.layout.dp) + " ranks)" : "");
      return v;
    }
  }
  v.advice = "none of: more sharding, a smaller micro-batch, tensor parallelism up to " +
             std::to_string(in.layout.ranks_per_node) + " makes " + v.worst_rank + " fit (" +
             gib(v.worst_peak) + " of " + gib(in.capacity) +
             "); add nodes, pipeline stages, or offload";
  return v;
}

}  // namespace trainsim::memory

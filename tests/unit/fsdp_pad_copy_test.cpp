// FSDP1's post-backward copies of each unsharded gradient (plan::FsdpPadCopy): the reduce-dtype
// cast and the F.pad copy that PyTorch 1.13 always makes and PyTorch 2.x only for a unit whose
// size does not divide by the shard count. Checked as the reduce-scatter's workspace in the
// sharded schedule, against the unit's parameter count written out here.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "model/transformer.hpp"
#include "program/build_program.hpp"
#include "support/fixtures.hpp"

namespace trainsim::program {
namespace {

constexpr int kGather = 1;  // FSDP1's one NCCL stream carries the reduce-scatters too

/// PyTorch FSDP1 over `ranks` ranks (one node), two layers of hidden 64, the reduce in
/// `reduce_bytes` (2: mixed_precision PURE, 4: DEFAULT's fp32).
ScheduleInputs fsdp1(long ranks, double reduce_bytes, plan::FsdpPadCopy pad) {
  ScheduleInputs in;
  in.model = {"tiny", 2, 64, 4, 256, 100, 16, false};
  in.plan.sharding = plan::Sharding::fsdp;
  in.plan.fsdp_implementation = plan::FsdpImplementation::torch_fsdp1;
  in.plan.fsdp_pad_copy = pad;
  in.plan.shard_degree = ranks;
  in.plan.micro_batch = 2;
  EXPECT_TRUE(plan::precision_recipe("fsdp_mixed", in.plan.precision));
  in.plan.gradient_wire_bytes = reduce_bytes;
  in.layout = plan::layout_of(in.plan, ranks, ranks);
  in.device = testing_support::round_number_device();
  in.stages = {{1000, 100, 10, 300}};
  return in;
}

double layer_reduce_workspace(const ScheduleInputs& in) {
  const Program prog = build_program(in);
  for (const auto& t : prog.ranks.front().streams[kGather].tasks)
    if (t.name.str() == "reduce-scatter layer 0 mb0") return static_cast<double>(t.workspace);
  ADD_FAILURE() << "no reduce-scatter of layer 0";
  return -1;
}

TEST(FsdpPadCopy, PadsOnlyAnUnevenUnitAfterPyTorch2) {
  // 12 h^2 + 13 h = 49,984 parameters per layer at h 64: a multiple of 4, not of 3.
  const double layer = model::parameters_per_layer(fsdp1(4, 2, plan::FsdpPadCopy::always).model);
  ASSERT_EQ(layer, 49984);
  EXPECT_TRUE(plan::fsdp_pads(plan::FsdpPadCopy::always, layer, 4));
  EXPECT_FALSE(plan::fsdp_pads(plan::FsdpPadCopy::uneven, layer, 4));
  EXPECT_TRUE(plan::fsdp_pads(plan::FsdpPadCopy::uneven, layer, 3));
}

TEST(FsdpPadCopy, ReduceScatterInputIsTheCastAndThePadCopy) {
  using plan::FsdpPadCopy;
  const double layer = 49984;
  // PyTorch 1.13, PURE: the bf16 pad copy; DEFAULT: the fp32 cast and its fp32 pad copy.
  EXPECT_DOUBLE_EQ(layer_reduce_workspace(fsdp1(4, 2, FsdpPadCopy::always)), layer * 2);
  EXPECT_DOUBLE_EQ(layer_reduce_workspace(fsdp1(4, 4, FsdpPadCopy::always)), layer * (4 + 4));
  // PyTorch 2.x with the layer a multiple of 4 ranks: PURE reduce-scatters autograd's gradient
  // itself (no copy), DEFAULT its fp32 cast.
  EXPECT_DOUBLE_EQ(layer_reduce_workspace(fsdp1(4, 2, FsdpPadCopy::uneven)), 0);
  EXPECT_DOUBLE_EQ(layer_reduce_workspace(fsdp1(4, 4, FsdpPadCopy::uneven)), layer * 4);
  // Over 3 ranks the layer does not divide, so F.pad copies it again.
  EXPECT_DOUBLE_EQ(layer_reduce_workspace(fsdp1(3, 4, FsdpPadCopy::uneven)), layer * (4 + 4));
}

}  // namespace
}  // namespace trainsim::program

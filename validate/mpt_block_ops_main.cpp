// trainsim-mpt-block-ops DEVICE.json MPT_BLOCK.json [--attention KERNEL] [--timeline FILE]: the simulator's MPT
// layer (module_kernels "mpt", one GPU, no checkpointing) at each shape the torch profiler
// recorded in validate/measure_mpt_block.py's file, op by op (kernel class, bytes, FLOPs, time
// at the profile's sustained and at its burst GEMM rate), then group by group beside the
// measured kernels (mpt_block_ops.hpp). KERNEL: the profile's fused attention kernel, default
// "cudnn-attention" (the profiles ran SDPA's cuDNN backend). With --timeline FILE
// (validate/probe_mpt_block_timeline.py), its rows with llm-foundry's split of Wqkv's output
// follow, step kernels by group against the simulated forward+backward, each on its own SDPA
// backend's kernel (cuDNN: cudnn-attention, flash: flash-attention-2). No GPU needed.
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>

#include "core/error.hpp"
#include "model/compute_cost.hpp"
#include "mpt_block_ops.hpp"

namespace {

void print_ops(const char* pass, const std::vector<trainsim::model::Operation>& ops,
               const trainsim::model::DeviceProfile& dev, const trainsim::model::DeviceProfile& burst) {
  using namespace trainsim;
  double total = 0, total_burst = 0;
  for (const auto& op : ops) {
    const double us = model::op_duration(op, dev) * 1e6, us_burst = model::op_duration(op, burst) * 1e6;
    total += us;
    total_burst += us_burst;
    std::printf("  %-8s %-28s %-16s %10.1f MB %10.1f GF %9.1f us %9.1f us\n", pass, op.name.c_str(),
                validate::sim_op_group(op).c_str(), op.bytes / 1e6, op.flops / 1e9, us, us_burst);
  }
  std::printf("  %-8s %-28s %-16s %13s %13s %9.1f us %9.1f us\n", pass, "total", "", "", "", total, total_burst);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace trainsim;
  std::string kernel = "cudnn-attention", timeline;
  bool usage = argc < 3 || argc % 2 == 0;
  for (int i = 3; !usage && i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--attention") == 0) kernel = argv[i + 1];
    else if (std::strcmp(argv[i], "--timeline") == 0) timeline = argv[i + 1];
    else usage = true;
  }
  if (usage) {
    std::cerr << "usage: trainsim-mpt-block-ops DEVICE.json MPT_BLOCK.json [--attention KERNEL] [--timeline FILE]\n";
    return 2;
  }
  try {
    auto dev = model::load_device_profile(argv[1]);
    bool found = false;
    for (const auto& k : dev.attention_kernels) found = found || k.name == kernel;
    if (!found) throw ConfigError(argv[1], "attention_kernels", "no kernel named \"" + kernel + "\" (--attention)");
    dev.attention_kernel = kernel;
    auto burst = dev;
    burst.sustained_compute = 1;
    for (const auto& b : validate::read_mpt_block_profiles(argv[2])) {
      const auto spec = validate::mpt_layer_spec(b);
      const auto shape = validate::mpt_layer_shape(b);
      std::printf("\nMPT layer d %ld heads %ld seq %ld micro-batch %ld, attention %s: simulated ops "
                  "(time at sustained_compute %.3f, then at burst)\n",
                  b.hidden, b.heads, b.seq_len, b.micro_batch, kernel.c_str(), dev.sustained_compute);
      print_ops("forward", model::layer_forward_ops(spec, shape), dev, burst);
      print_ops("backward", model::layer_backward_ops(spec, shape), dev, burst);
      std::printf("  by group, us: measured (torch profiler, cuDNN SDPA) vs simulated; backward = step - forward\n");
      std::printf("  %-16s %9s %9s %9s | %9s %9s %9s %9s | %5s %5s\n", "group", "fwd meas", "fwd sim", "sim burst",
                  "bwd meas", "bwd sim", "sim burst", "diff", "k.m", "k.sim");
      const auto groups = validate::block_breakdown(b, dev);
      const auto groups_burst = validate::block_breakdown(b, burst);
      double mf = 0, sf = 0, bf = 0, mb = 0, sb = 0, bb = 0;
      for (std::size_t i = 0; i < groups.size(); ++i) {
        const auto& g = groups[i];
        const auto& gb = groups_burst[i];
        mf += g.measured_forward_us;
        sf += g.simulated_forward_us;
        bf += gb.simulated_forward_us;
        mb += g.measured_backward_us;
        sb += g.simulated_backward_us;
        bb += gb.simulated_backward_us;
        std::printf("  %-16s %9.1f %9.1f %9.1f | %9.1f %9.1f %9.1f %+9.1f | %5d %5d\n", g.group.c_str(),
                    g.measured_forward_us, g.simulated_forward_us, gb.simulated_forward_us, g.measured_backward_us,
                    g.simulated_backward_us, gb.simulated_backward_us, g.simulated_backward_us - g.measured_backward_us,
                    g.measured_backward_kernels, g.simulated_backward_ops);
      }
      std::printf("  %-16s %9.1f %9.1f %9.1f | %9.1f %9.1f %9.1f %+9.1f\n", "total", mf, sf, bf, mb, sb, bb, sb - mb);
    }
    if (!timeline.empty()) {
      std::printf("\nllm-foundry's split (qkv.chunk), step kernels by group (%s), us: measured vs simulated "
                  "forward+backward\n", timeline.c_str());
      for (const auto& t : validate::read_mpt_block_timeline(timeline)) {
        auto on = dev;
        on.attention_kernel = t.attention == "cudnn" ? "cudnn-attention" : "flash-attention-2";
        auto on_burst = on;
        on_burst.sustained_compute = 1;
        std::printf("\n  d %ld heads %ld seq %ld micro-batch %ld, SDPA %s: step %.3f ms timed\n", t.block.hidden,
                    t.block.heads, t.block.seq_len, t.block.micro_batch, t.attention.c_str(), t.step_ms);
        std::printf("  %-16s %9s %9s %9s %9s\n", "group", "measured", "simulated", "sim burst", "diff");
        const auto groups = validate::block_breakdown(t.block, on);
        const auto burst_groups = validate::block_breakdown(t.block, on_burst);
        double m = 0, sim = 0, b = 0;
        for (std::size_t i = 0; i < groups.size(); ++i) {
          const auto& g = groups[i];
          const double ms = g.measured_backward_us, ss = g.simulated_forward_us + g.simulated_backward_us;
          const double bs = burst_groups[i].simulated_forward_us + burst_groups[i].simulated_backward_us;
          m += ms;
          sim += ss;
          b += bs;
          std::printf("  %-16s %9.1f %9.1f %9.1f %+9.1f\n", g.group.c_str(), ms, ss, bs, ss - ms);
        }
        std::printf("  %-16s %9.1f %9.1f %9.1f %+9.1f\n", "total", m, sim, b, sim - m);
      }
    }
  } catch (const ConfigError& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}

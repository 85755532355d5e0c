// Simulator speed: wall time per simulated training step as the accelerator count grows.
// Each simulation runs in a forked child (one SimGrid Engine per process); the child's own
// measurement of its wall time (platform build + program build + simulation) is reported as
// the benchmark's manual time, so process start-up is not counted.
//
//   build/tests/trainsim_bench [--benchmark_filter=...]     (run from the repository root)
#include <benchmark/benchmark.h>

#include "scenario/point_runner.hpp"
#include "scenario/scenario.hpp"

namespace {

const trainsim::scenario::Scenario& bert_large() {
  static const auto s = trainsim::scenario::load_scenario("scenarios/dl1-bert-large-zero1.json");
  return s;
}

void BM_ZeroOneStep(benchmark::State& state) {
  const auto& s = bert_large();
  // The scenario's point (model, plan) on more nodes.
  trainsim::scenario::Point p = s.points.front();
  p.nodes = static_cast<int>(state.range(0)) / 8;
  p.label = "bench";
  p.layout = trainsim::plan::layout_of(p.training, state.range(0), 8);
  double simulated = 0;
  for (auto _ : state) {
    const auto r = trainsim::scenario::simulate_point(s, p, false);
    state.SetIterationTime(r.sim_wall_s);
    simulated = r.step_time;
  }
  state.counters["accelerators"] = static_cast<double>(state.range(0));
  state.counters["simulated_step_s"] = simulated;
}

}  // namespace

BENCHMARK(BM_ZeroOneStep)
    ->ArgName("accelerators")
    ->RangeMultiplier(2)
    ->Range(8, 1024)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();

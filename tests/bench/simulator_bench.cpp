// Simulator speed: wall time per simulated training step as the accelerator count grows.
// Each simulation runs in a forked child (one SimGrid Engine per process); the child's own
// measurement of its wall time (platform build + program build + simulation) is reported as
// the benchmark's manual time, so process start-up is not counted. cpu_s is the child's CPU time
// for the same span (the figure to compare on a busy machine). Counters split the wall time (seconds):
// platform, program (the schedule's per-rank programs), fold (rank folding), prepare (collective
// plans and merged calls), run (the SimGrid simulation). Activity counters: classes (rank classes
// simulated), flows (Comms started: collective flows and host copies) and execs (Execs started:
// compute tasks and SM holds), the work SimGrid's cost follows.
//
//   build/tests/trainsim_bench [--benchmark_filter=...]     (run from the repository root)
#include <benchmark/benchmark.h>

#include <map>
#include <string>

#include "plan/training_plan.hpp"
#include "scenario/point_runner.hpp"
#include "scenario/scenario.hpp"

namespace {

void count_wall_split(benchmark::State& state, const trainsim::scenario::PointResult& r) {
  state.counters["cpu_s"] = r.sim_cpu_s;
  state.counters["platform_s"] = r.wall.platform;
  state.counters["program_s"] = r.wall.program;
  state.counters["fold_s"] = r.wall.fold;
  state.counters["prepare_s"] = r.wall.prepare;
  state.counters["run_s"] = r.wall.run;
  state.counters["classes"] = r.activity.classes;
  state.counters["flows"] = r.activity.flows;
  state.counters["execs"] = r.activity.execs;
}

const trainsim::scenario::Scenario& scenario(const std::string& file) {
  static std::map<std::string, trainsim::scenario::Scenario> loaded;
  auto it = loaded.find(file);
  if (it == loaded.end()) it = loaded.emplace(file, trainsim::scenario::load_scenario(file)).first;
  return it->second;
}

/// Simulates `label`'s point of `file` with its data-parallel degree scaled to `accelerators`.
void step_at_scale(benchmark::State& state, const std::string& file, const std::string& label,
                   bool tp_comm_overlap = false,
                   trainsim::plan::TpOverlapModel overlap_model = trainsim::plan::TpOverlapModel::coarse,
                   long micro_batches = 0) {
  const auto& s = scenario(file);
  trainsim::scenario::Point p;
  for (const auto& q : s.points)
    if (q.label == label) p = q;
  if (tp_comm_overlap) {
    p.training.sequence_parallel = p.training.tp_comm_overlap = true;
    p.training.tp_overlap_model = overlap_model;
  }
  if (micro_batches > 0) p.training.accumulation = micro_batches;
  const long world = state.range(0);
  p.nodes = static_cast<int>(world / p.layout.ranks_per_node);
  p.label = "bench";
  p.layout = trainsim::plan::layout_of(p.training, world, p.layout.ranks_per_node);
  double simulated = 0;
  for (auto _ : state) {
    const auto r = trainsim::scenario::simulate_point(s, p, false);
    state.SetIterationTime(r.sim_wall_s);
    simulated = r.step_time;
    count_wall_split(state, r);
  }
  state.counters["accelerators"] = static_cast<double>(world);
  state.counters["simulated_step_s"] = simulated;
}

/// DL1's BERT-Large ZeRO-1 scenario (its 1-instance point) on more nodes.
void BM_ZeroOneStep(benchmark::State& state) {
  step_at_scale(state, "scenarios/dl1-bert-large-zero1.json", "1 instance");
}

/// Megatron Table 1's 76.1B row (TP 8 x PP 4, interleaved, 28 micro-batches per replica): 1,024
/// GPUs is the paper's DP 32.
void BM_TensorPipelineDataStep(benchmark::State& state) {
  step_at_scale(state, "scenarios/megatron-table1.json", "76.1B");
}

/// The same job with sequence parallelism and Transformer Engine's TP overlap on: every layer
/// pass cut into GEMM chunks, ring steps and chunked reduce-scatters, coarse (the default: a
/// ring's TP - 1 steps one repeated call beside one GEMM task).
void BM_TensorPipelineTpOverlapStep(benchmark::State& state) {
  step_at_scale(state, "scenarios/megatron-table1.json", "76.1B", true);
}

/// The same, each ring step and chunk its own task (tp_comm_overlap_model "per_step").
void BM_TensorPipelineTpOverlapPerStepStep(benchmark::State& state) {
  step_at_scale(state, "scenarios/megatron-table1.json", "76.1B", true, trainsim::plan::TpOverlapModel::per_step);
}

/// SMP v2's Llama 2 70B FSDP reference configuration, shard degree 256 (fully sharded up to 256
/// GPUs, hybrid beyond).
void BM_FsdpStep(benchmark::State& state) {
  step_at_scale(state, "scenarios/p4d-llama2-70b-smp.json", "reference: shard 256");
}

/// The zero-bubble paper's 28.3B ZB-V point (32 stages in a V, 96 micro-batches of 2, the order
/// from its greedy): 1,024 GPUs is DP 32 of it.
void BM_ZeroBubbleVStep(benchmark::State& state) {
  step_at_scale(state, "scenarios/zero-bubble-a100.json", "28.3B 32 GPUs b2 ZB-V 96 micro-batches");
}

/// The long-context what-if's 64k layout TP 2 x CP 4 with full recompute (each layer's backward
/// runs its forward's KV ring again), at 16 micro-batches a step instead of 128: 32 GPUs is DP 1.
void BM_ContextParallelRecomputeStep(benchmark::State& state) {
  step_at_scale(state, "scenarios/p5-llama3-8b-long-context.json", "64k: TP2 CP4 DP4, full recompute, 4 nodes", false,
                trainsim::plan::TpOverlapModel::coarse, 16);
}

}  // namespace

/// One step per run at doubling accelerator counts from `smallest` to 1,024, timed by the
/// benchmark itself (manual time: wall time inside the simulating process).
void per_step(benchmark::internal::Benchmark* b, int smallest) {
  b->ArgName("accelerators")->RangeMultiplier(2)->Range(smallest, 1024)->UseManualTime()->Unit(benchmark::kMillisecond);
}

BENCHMARK(BM_TensorPipelineDataStep)->Apply([](auto* b) { per_step(b, 64); });
BENCHMARK(BM_TensorPipelineTpOverlapStep)->Apply([](auto* b) { per_step(b, 64); });
BENCHMARK(BM_TensorPipelineTpOverlapPerStepStep)->Apply([](auto* b) { per_step(b, 64); });
BENCHMARK(BM_FsdpStep)->Apply([](auto* b) { per_step(b, 256); });
BENCHMARK(BM_ZeroOneStep)->Apply([](auto* b) { per_step(b, 8); });
BENCHMARK(BM_ZeroBubbleVStep)->Apply([](auto* b) { per_step(b, 32); });
BENCHMARK(BM_ContextParallelRecomputeStep)->Apply([](auto* b) { per_step(b, 32); });

BENCHMARK_MAIN();

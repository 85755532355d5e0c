#include "sweep/sweep_runner.hpp"

#include <chrono>

#include "core/text_format.hpp"
#include "sweep/child_pool.hpp"
#include "sweep/mpi_dispatch.hpp"
#include "sweep/svg_plot.hpp"
#include "sweep/sweep_store.hpp"
#include "sweep/sweep_table.hpp"

namespace trainsim::sweep {

namespace {

/// What a child process does for one job: simulate it and return its record as JSON text.
std::function<std::string(std::size_t)> job_work(const SweepPlan& plan) {
  return [&plan](std::size_t j) {
    const Job& job = plan.jobs[j];
    const auto result = scenario::simulate_point(plan.variants[job.combination], plan.point_of(job), false);
    return job_record(plan, job, result).dump();
  };
}

void write_outputs(const SweepPlan& plan, const SweepStore& store) {
  const auto rows = result_rows(plan, [&](const std::string& key) -> const nlohmann::ordered_json* {
    auto it = store.finished().find(key);
    return it == store.finished().end() ? nullptr : &it->second;
  });
  store.write_file("results.csv", rows_csv(rows));
  store.write_file("results.json", rows_json(plan, rows));
  store.write_file("plot.svg", sweep_svg(plan, rows));
}

using text::fmt;

}  // namespace

SweepSummary run_sweep(const SweepPlan& plan, const SweepOptions& options, std::ostream& progress,
                       bool mpi_rank0) {
  SweepStore store(options.out_dir, manifest_of(plan));
  SweepSummary sum;
  sum.total = plan.jobs.size();
  std::vector<std::size_t> todo;
  for (std::size_t j = 0; j < plan.jobs.size(); ++j) {
    if (store.finished().count(plan.jobs[j].key))
      ++sum.resumed;
    else
      todo.push_back(j);
  }
  write_outputs(plan, store);
  progress << "sweep: " << sum.total << " points, " << sum.resumed << " already in "
           << options.out_dir << ", " << todo.size() << " to simulate\n"
           << std::flush;
  const auto start = std::chrono::steady_clock::now();
  auto done = [&](const ChildOutput& out) {
    const Job& job = plan.jobs[out.task];
    const std::size_t finished = sum.resumed + sum.simulated + sum.failed + 1;
    std::string what;
    if (out.ok) {
      const auto rec = nlohmann::ordered_json::parse(out.text);
      store.append(rec);
      write_outputs(plan, store);
      ++sum.simulated;
      if (!rec.at("completed").get<bool>()) ++sum.incomplete;
      what = fmt("%.2f samples/s", rec.at("samples_per_s").get<double>());
    } else {
      ++sum.failed;
      what = "FAILED: " + out.text;
    }
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    progress << "[" << finished << "/" << sum.total << "] " << job.key << ": " << what << " ("
             << (mpi_rank0 ? "rank " + std::to_string(out.rank) + ", " : "")
             << fmt("%.1f", elapsed) << " s elapsed)\n"
             << std::flush;
  };
  if (mpi_rank0)
    mpi::serve_tasks(todo, options.jobs, job_work(plan), done);
  else
    run_in_children(todo, options.jobs, job_work(plan), done);
  return sum;
}

void run_sweep_mpi_worker(const SweepPlan& plan, const SweepOptions& options) {
  mpi::work_for_rank_zero(options.jobs, job_work(plan));
}

}  // namespace trainsim::sweep

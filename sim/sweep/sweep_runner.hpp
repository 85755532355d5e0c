#pragma once
// Runs a planned sweep: skips the points its output folder already has, simulates the others
// (each in its own process, `jobs` at a time, or spread over MPI ranks), records each result as
// it finishes and rewrites results.csv, results.json and plot.svg, with a progress line per
// point on `progress`.
#include <ostream>
#include <string>

#include "sweep/sweep_plan.hpp"

namespace trainsim::sweep {

struct SweepOptions {
  std::string out_dir = "sweep-out";
  int jobs = 1;  ///< simulations at once (per rank under MPI)
};

struct SweepSummary {
  std::size_t total = 0;
  std::size_t resumed = 0;    ///< already in the output folder
  std::size_t simulated = 0;  ///< simulated by this run
  std::size_t failed = 0;     ///< crashed or threw; not recorded, so a rerun tries again
  std::size_t incomplete = 0; ///< simulated but some task never ran (deadlock)
};

/// Runs the sweep on this machine (or, when `mpi_rank0`, as rank 0 of an MPI job whose
/// other ranks call run_sweep_mpi_worker).
[[nodiscard]] SweepSummary run_sweep(const SweepPlan& plan, const SweepOptions& options,
                                     std::ostream& progress, bool mpi_rank0 = false);

/// An MPI rank other than 0: simulates the points rank 0 hands it until told to stop.
void run_sweep_mpi_worker(const SweepPlan& plan, const SweepOptions& options);

}  // namespace trainsim::sweep

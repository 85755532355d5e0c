#pragma once
// Spreading a sweep's points over MPI ranks (`mpirun -n K trainsim sweep ...`). Rank 0 hands out
// point indices one at a time as ranks ask for work (dynamic distribution: a slow point does
// not hold a fixed share back), runs points itself too, and receives every result; each rank
// simulates its points in forked children exactly as a local sweep does. Compiled with MPI only
// where CMake's find_package(MPI) found it (TRAINSIM_HAVE_MPI); elsewhere the session refuses.
#include <functional>
#include <string>
#include <vector>

#include "sweep/child_pool.hpp"

namespace trainsim::sweep::mpi {

/// True when this process was started by an MPI launcher (mpirun, srun with PMI/PMIx).
[[nodiscard]] bool launched_by_mpi();
/// True when this build has the MPI path.
[[nodiscard]] bool compiled_in();

/// MPI_Init in the constructor, MPI_Finalize in the destructor.
class Session {
public:
  Session();
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  [[nodiscard]] int rank() const { return rank_; }
  [[nodiscard]] int size() const { return size_; }

private:
  int rank_ = 0;
  int size_ = 1;
};

/// Rank 0: runs `tasks` over all ranks (`jobs` children per rank); `done` is called on rank 0
/// as each result arrives. Other ranks: call work_for_rank_zero with the same `jobs`.
void serve_tasks(const std::vector<std::size_t>& tasks, int jobs,
                 const std::function<std::string(std::size_t)>& work,
                 const std::function<void(const ChildOutput&)>& done);
void work_for_rank_zero(int jobs, const std::function<std::string(std::size_t)>& work);

/// Ends every rank with `code` (rank 0 found bad input after the others started waiting).
[[noreturn]] void abort_all(int code);

}  // namespace trainsim::sweep::mpi

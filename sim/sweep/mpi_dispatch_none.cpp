// The MPI path in a build without MPI: every entry point refuses, so `mpirun trainsim sweep`
// cannot silently run the whole sweep once per rank.
#include <stdexcept>

#include "sweep/mpi_dispatch.hpp"

namespace trainsim::sweep::mpi {

namespace {
[[noreturn]] void refuse() {
  throw std::runtime_error(
      "started by an MPI launcher, but this trainsim was built without MPI (install "
      "libopenmpi-dev and reconfigure)");
}
}  // namespace

bool compiled_in() { return false; }
Session::Session() { refuse(); }
Session::~Session() = default;
void serve_tasks(const std::vector<std::size_t>&, int, const std::function<std::string(std::size_t)>&,
                 const std::function<void(const ChildOutput&)>&) {
  refuse();
}
void work_for_rank_zero(int, const std::function<std::string(std::size_t)>&) { refuse(); }
void abort_all(int) { refuse(); }

}  // namespace trainsim::sweep::mpi

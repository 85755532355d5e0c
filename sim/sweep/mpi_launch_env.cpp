// Whether an MPI launcher started this process; shared by the MPI and the no-MPI builds.
#include <cstdlib>

#include "sweep/mpi_dispatch.hpp"

namespace trainsim::sweep::mpi {

bool launched_by_mpi() {
  // OpenMPI's mpirun, MPICH/Hydra (PMI), and Slurm's srun --mpi=pmix/pmi2.
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_RANK"})
    if (std::getenv(v) != nullptr) return true;
  return false;
}

}  // namespace trainsim::sweep::mpi

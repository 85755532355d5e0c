#pragma once
// Runs tasks in forked child processes, several at once (SimGrid allows one Engine per
// process, and the s4u API is not thread-safe, so processes are the unit of parallelism).
// Each child runs work(task) and sends the returned text back through a pipe; the parent
// never blocks on one child while another has finished.
#include <functional>
#include <string>
#include <sys/types.h>
#include <utility>
#include <vector>

namespace trainsim::sweep {

struct ChildOutput {
  std::size_t task = 0;
  bool ok = false;    ///< false when work threw or the child died
  std::string text;   ///< work's result, or the error message
  int rank = 0;       ///< the MPI rank that ran it (0 in a local sweep)
};

class ChildPool {
public:
  explicit ChildPool(std::function<std::string(std::size_t)> work) : work_(std::move(work)) {}
  ChildPool(const ChildPool&) = delete;
  ChildPool& operator=(const ChildPool&) = delete;
  ~ChildPool();

  /// Forks a child that runs work(task).
  void start(std::size_t task);
  [[nodiscard]] std::size_t running() const { return children_.size(); }
  /// Waits up to `timeout_ms` (-1: until one finishes) and returns the children that finished.
  [[nodiscard]] std::vector<ChildOutput> wait_some(int timeout_ms);

private:
  struct Child {
    pid_t pid;
    int fd;
    std::size_t task;
    std::string text;
  };
  std::function<std::string(std::size_t)> work_;
  std::vector<Child> children_;
};

/// Runs every task of `tasks`, at most `jobs` at a time; `done` is called in the parent, in
/// completion order, as each finishes.
void run_in_children(const std::vector<std::size_t>& tasks, int jobs,
                     const std::function<std::string(std::size_t)>& work,
                     const std::function<void(const ChildOutput&)>& done);

}  // namespace trainsim::sweep

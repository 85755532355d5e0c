#include "sweep/child_pool.hpp"

#include "scenario/child_process.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdexcept>

namespace trainsim::sweep {

ChildPool::~ChildPool() {
  for (auto& c : children_) {
    kill(c.pid, SIGTERM);
    close(c.fd);
    waitpid(c.pid, nullptr, 0);
  }
}

void ChildPool::start(std::size_t task) {
  std::vector<int> sibling_pipes;  // the siblings' pipes are not the new child's
  for (const auto& c : children_) sibling_pipes.push_back(c.fd);
  const scenario::ForkedChild child = scenario::fork_child(
      [&]() -> scenario::ChildReply {
        try {
          return {"ok\n" + work_(task), 0};
        } catch (const std::exception& e) {
          return {std::string("error\n") + e.what(), 1};
        }
      },
      sibling_pipes);
  children_.push_back({child.pid, child.read_fd, task, {}});
}

std::vector<ChildOutput> ChildPool::wait_some(int timeout_ms) {
  std::vector<ChildOutput> finished;
  if (children_.empty()) return finished;
  std::vector<pollfd> fds;
  for (const auto& c : children_) fds.push_back({c.fd, POLLIN, 0});
  if (poll(fds.data(), fds.size(), timeout_ms) <= 0) return finished;
  std::vector<Child> still;
  for (std::size_t i = 0; i < children_.size(); ++i) {
    Child& c = children_[i];
    bool eof = false;
    if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) {
      char buf[65536];
      const ssize_t n = read(c.fd, buf, sizeof buf);
      if (n > 0)
        c.text.append(buf, static_cast<std::size_t>(n));
      else
        eof = true;
    }
    if (!eof) {
      still.push_back(std::move(c));
      continue;
    }
    close(c.fd);
    int status = 0;
    waitpid(c.pid, &status, 0);
    ChildOutput out;
    out.task = c.task;
    if (c.text.rfind("ok\n", 0) == 0) {
      out.ok = true;
      out.text = c.text.substr(3);
    } else if (c.text.rfind("error\n", 0) == 0) {
      out.text = c.text.substr(6);
    } else {
      out.text = "the simulating process died (wait status " + std::to_string(status) + ")";
    }
    finished.push_back(std::move(out));
  }
  children_ = std::move(still);
  return finished;
}

void run_in_children(const std::vector<std::size_t>& tasks, int jobs,
                     const std::function<std::string(std::size_t)>& work,
                     const std::function<void(const ChildOutput&)>& done) {
  ChildPool pool(work);
  std::size_t next = 0;
  while (next < tasks.size() || pool.running() > 0) {
    while (pool.running() < static_cast<std::size_t>(jobs) && next < tasks.size())
      pool.start(tasks[next++]);
    for (const auto& out : pool.wait_some(-1)) done(out);
  }
}

}  // namespace trainsim::sweep

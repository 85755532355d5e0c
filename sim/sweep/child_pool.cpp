#include "sweep/child_pool.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <stdexcept>

namespace trainsim::sweep {

namespace {

void write_all(int fd, const std::string& text) {
  const char* data = text.data();
  std::size_t left = text.size();
  while (left > 0) {
    const ssize_t n = write(fd, data, left);
    if (n <= 0) return;
    data += n;
    left -= static_cast<std::size_t>(n);
  }
}

}  // namespace

ChildPool::~ChildPool() {
  for (auto& c : children_) {
    kill(c.pid, SIGTERM);
    close(c.fd);
    waitpid(c.pid, nullptr, 0);
  }
}

void ChildPool::start(std::size_t task) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("pipe() failed");
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork() failed");
  if (pid == 0) {
    close(fds[0]);
    for (const auto& c : children_) close(c.fd);  // siblings' pipes are not ours
    int code = 0;
    std::string out;
    try {
      out = "ok\n" + work_(task);
    } catch (const std::exception& e) {
      out = std::string("error\n") + e.what();
      code = 1;
    }
    write_all(fds[1], out);
    close(fds[1]);
    _exit(code);
  }
  close(fds[1]);
  children_.push_back({pid, fds[0], task, {}});
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

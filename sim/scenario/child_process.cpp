#include "scenario/child_process.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <stdexcept>

namespace trainsim::scenario {

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

ForkedChild fork_child(const std::function<ChildReply()>& work, const std::vector<int>& close_in_child) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("pipe() failed");
  // Buffered output would otherwise be written twice, once by each process.
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork() failed");
  if (pid == 0) {
    close(fds[0]);
    for (const int fd : close_in_child) close(fd);
    const ChildReply reply = work();
    write_all(fds[1], reply.text);
    close(fds[1]);
    _exit(reply.exit_code);
  }
  close(fds[1]);
  return {pid, fds[0]};
}

ChildOutput run_in_child_with_tail(const std::function<ChildOutput()>& work, const std::string& what) {
  // The reply is the JSON on one line (a compact dump has no raw newline), then the tail.
  const ForkedChild child = fork_child([&]() -> ChildReply {
    try {
      ChildOutput out = work();
      nlohmann::json reply;
      reply["result"] = std::move(out.result);
      std::string text = reply.dump();
      text += '\n';
      text += out.tail;
      return {std::move(text), 0};
    } catch (const std::exception& e) {
      return {nlohmann::json{{"error", e.what()}}.dump(), 1};
    }
  });
  std::string text;
  char buf[65536];
  ssize_t n;
  while ((n = read(child.read_fd, buf, sizeof buf)) > 0) text.append(buf, static_cast<std::size_t>(n));
  close(child.read_fd);
  int status = 0;
  waitpid(child.pid, &status, 0);
  if (text.empty())
    throw std::runtime_error(what + " crashed (status " + std::to_string(status) + ")");
  const std::size_t end = text.find('\n');
  auto j = nlohmann::json::parse(text.begin(), end == std::string::npos ? text.end() : text.begin() + static_cast<long>(end));
  if (j.contains("error")) throw std::runtime_error(what + " failed: " + j.at("error").get<std::string>());
  ChildOutput out{std::move(j.at("result")), {}};
  if (end != std::string::npos) out.tail = text.substr(end + 1);
  return out;
}

nlohmann::json run_in_child(const std::function<nlohmann::json()>& work, const std::string& what) {
  return run_in_child_with_tail([&] { return ChildOutput{work(), {}}; }, what).result;
}

}  // namespace trainsim::scenario

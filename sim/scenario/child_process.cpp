#include "scenario/child_process.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <stdexcept>

namespace trainsim::scenario {

nlohmann::json run_in_child(const std::function<nlohmann::json()>& work, const std::string& what) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("pipe() failed");
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork() failed");
  if (pid == 0) {
    close(fds[0]);
    int code = 0;
    std::string out;
    try {
      out = nlohmann::json{{"result", work()}}.dump();
    } catch (const std::exception& e) {
      out = nlohmann::json{{"error", e.what()}}.dump();
      code = 1;
    }
    const char* data = out.data();
    std::size_t left = out.size();
    while (left > 0) {
      const ssize_t n = write(fds[1], data, left);
      if (n <= 0) break;
      data += n;
      left -= static_cast<std::size_t>(n);
    }
    close(fds[1]);
    _exit(code);
  }
  close(fds[1]);
  std::string text;
  char buf[65536];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) text.append(buf, static_cast<std::size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (text.empty())
    throw std::runtime_error(what + " crashed (status " + std::to_string(status) + ")");
  auto j = nlohmann::json::parse(text);
  if (j.contains("error")) throw std::runtime_error(what + " failed: " + j.at("error").get<std::string>());
  return j.at("result");
}

}  // namespace trainsim::scenario

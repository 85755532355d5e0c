#pragma once
// SimGrid allows one Engine per process: work that builds one runs in a forked child, which
// sends its result back through a pipe, so the calling process stays SimGrid-free.
#include <functional>
#include <string>
#include <sys/types.h>
#include <vector>

#include <nlohmann/json.hpp>

namespace trainsim::scenario {

/// What a forked child sends back through its pipe, and its exit code.
struct ChildReply {
  std::string text;
  int exit_code = 0;
};

/// A forked child: its process id and the read end of the pipe it writes its reply into.
struct ForkedChild {
  pid_t pid;
  int read_fd;
};

/// Forks a child that closes `close_in_child` (descriptors the parent holds that are not the
/// child's, e.g. its siblings' pipes), runs `work`, writes the reply's text into the pipe and
/// exits with the reply's code. The caller reads `read_fd` to its end, closes it and waits for
/// `pid`.
[[nodiscard]] ForkedChild fork_child(const std::function<ChildReply()>& work,
                                     const std::vector<int>& close_in_child = {});

/// What a child computed: JSON, and bytes sent after it as they are (bulk data such as a trace's
/// spans, which as JSON would cost the child and the parent many times their size).
struct ChildOutput {
  nlohmann::json result;
  std::string tail;
};

/// As run_in_child, with the child's tail of bytes returned beside its JSON.
[[nodiscard]] ChildOutput run_in_child_with_tail(const std::function<ChildOutput()>& work,
                                                 const std::string& what);

/// Runs `work` in a forked child and returns the JSON it produced. An exception in the child
/// comes back as std::runtime_error("<what> failed: <message>"); a crash as "<what> crashed".
[[nodiscard]] nlohmann::json run_in_child(const std::function<nlohmann::json()>& work,
                                          const std::string& what);

}  // namespace trainsim::scenario

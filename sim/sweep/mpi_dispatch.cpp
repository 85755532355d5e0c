#include "sweep/mpi_dispatch.hpp"

#include <mpi.h>
#include <unistd.h>

#include <cstdlib>
#include <deque>

namespace trainsim::sweep::mpi {

namespace {

// Worker -> rank 0: a request for work, carrying the previous result ("" on the first ones).
// Rank 0 -> worker: a task index, or kStop.
constexpr int kTagRequest = 1;
constexpr int kTagTask = 2;
constexpr long kStop = -1;

/// A result travels as "<task> <ok 0/1>\n<text>".
std::string encode(const ChildOutput& out) {
  return std::to_string(out.task) + " " + (out.ok ? "1" : "0") + "\n" + out.text;
}

ChildOutput decode(const std::string& msg) {
  ChildOutput out;
  const auto nl = msg.find('\n');
  out.task = std::stoul(msg.substr(0, msg.find(' ')));
  out.ok = msg[msg.find(' ') + 1] == '1';
  out.text = msg.substr(nl + 1);
  return out;
}

void send_request(const std::string& msg) {
  MPI_Send(msg.data(), static_cast<int>(msg.size()), MPI_CHAR, 0, kTagRequest, MPI_COMM_WORLD);
}

}  // namespace

bool compiled_in() { return true; }

Session::Session() {
  MPI_Init(nullptr, nullptr);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

Session::~Session() { MPI_Finalize(); }

void serve_tasks(const std::vector<std::size_t>& tasks, int jobs,
                 const std::function<std::string(std::size_t)>& work,
                 const std::function<void(const ChildOutput&)>& done) {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::deque<std::size_t> queue(tasks.begin(), tasks.end());
  ChildPool local(work);
  long stops_left = static_cast<long>(size - 1) * jobs;  // each worker slot ends with one stop
  while (!queue.empty() || local.running() > 0 || stops_left > 0) {
    while (local.running() < static_cast<std::size_t>(jobs) && !queue.empty()) {
      local.start(queue.front());
      queue.pop_front();
    }
    int flag = 0;
    MPI_Status st;
    MPI_Iprobe(MPI_ANY_SOURCE, kTagRequest, MPI_COMM_WORLD, &flag, &st);
    while (flag) {
      int count = 0;
      MPI_Get_count(&st, MPI_CHAR, &count);
      std::string msg(static_cast<std::size_t>(count), '\0');
      MPI_Recv(msg.data(), count, MPI_CHAR, st.MPI_SOURCE, kTagRequest, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
      if (!msg.empty()) {
        ChildOutput out = decode(msg);
        out.rank = st.MPI_SOURCE;
        done(out);
      }
      long task = kStop;
      if (!queue.empty()) {
        task = static_cast<long>(queue.front());
        queue.pop_front();
      } else {
        --stops_left;
      }
      MPI_Send(&task, 1, MPI_LONG, st.MPI_SOURCE, kTagTask, MPI_COMM_WORLD);
      MPI_Iprobe(MPI_ANY_SOURCE, kTagRequest, MPI_COMM_WORLD, &flag, &st);
    }
    if (local.running() > 0) {
      for (const auto& out : local.wait_some(5)) done(out);
    } else {
      usleep(2000);  // waiting for other ranks only
    }
  }
}

void work_for_rank_zero(int jobs, const std::function<std::string(std::size_t)>& work) {
  ChildPool pool(work);
  for (int j = 0; j < jobs; ++j) send_request("");
  int stops = 0;
  while (stops < jobs) {
    int flag = 0;
    if (pool.running() == 0) {
      MPI_Probe(0, kTagTask, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      flag = 1;
    } else {
      MPI_Iprobe(0, kTagTask, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    }
    if (flag) {
      long task = kStop;
      MPI_Recv(&task, 1, MPI_LONG, 0, kTagTask, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (task == kStop)
        ++stops;
      else
        pool.start(static_cast<std::size_t>(task));
      continue;
    }
    for (const auto& out : pool.wait_some(5)) send_request(encode(out));
  }
}

void abort_all(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

}  // namespace trainsim::sweep::mpi

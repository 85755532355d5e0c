// `trainsim-validate nccl --out FILE`: nccl-tests-style curves of the four collectives over all
// visible GPUs, written as trainsim.collective_measurements/1 (collective_measurements.hpp).
#include <cstdio>
#include <fstream>
#include <iostream>

#include "arguments.hpp"
#include "collective_measurements.hpp"
#include "commands.hpp"
#include "core/error.hpp"
#include "device_info.hpp"
#include "nccl_runner.hpp"
#include "provenance.hpp"

namespace trainsim::validate {

int nccl_command(const std::vector<std::string>& args) {
  const NcclOptions options = parse_nccl_options(args);
  const int ranks = require_cuda_devices();
  const DeviceInfo info = describe_device(0);
  if (ranks == 1)
    std::cerr << "only one GPU is visible: the curves below have one rank (busbw is 0 by "
                 "definition, algbw is a local copy). A multi-GPU machine is needed for a useful "
                 "curve.\n";

  CollectiveMeasurements m;
  m.provenance.date = today_utc();
  m.provenance.gpu = info.name;
  m.provenance.driver = info.driver;
  m.provenance.cuda = info.cuda;
  m.provenance.nccl = nccl_version();
  m.topology = options.topology;

  NcclRanks world(ranks, options.max_bytes);
  const CollectiveTest* tests[] = {&all_reduce_test(), &all_gather_test(), &reduce_scatter_test(),
                                   &alltoall_test()};
  // Correctness first: a small size and one whose blocks are not a multiple of 7 elements.
  for (const auto* t : tests)
    for (std::size_t check_bytes :
         {std::size_t{4096} * ranks, std::size_t{4 * 1000 * 1001} * ranks})
      if (check_bytes <= options.max_bytes) world.check(*t, check_bytes);

  std::printf("%-15s %6s %14s %12s %12s %12s\n", "op", "ranks", "size (B)", "time (us)",
              "algbw (GB/s)", "busbw (GB/s)");
  for (const auto* t : tests)
    for (std::size_t size = options.min_bytes; size <= options.max_bytes; size *= 2) {
      const auto counts = collective_counts(t->op, size, ranks, sizeof(float));
      if (counts.call_count == 0) continue;  // smaller than one element per rank
      CollectiveRow row;
      row.op = t->op;
      row.ranks = ranks;
      row.size_bytes = collective_size_bytes(t->op, counts, sizeof(float));
      row.time = world.time(*t, row.size_bytes, options.warmup, options.iters);
      m.rows.push_back(row);
      const double algbw = algorithm_bandwidth(static_cast<double>(row.size_bytes), row.time);
      std::printf("%-15s %6d %14zu %12.2f %12.2f %12.2f\n", collective_name(t->op), ranks,
                  row.size_bytes, row.time * 1e6, algbw / 1e9,
                  algbw * bus_bandwidth_factor(t->op, ranks) / 1e9);
    }

  std::ofstream out(options.out);
  if (!out) throw ConfigError(options.out, "", "cannot open the measurement file for writing");
  write_collective_measurements(out, m);
  std::cout << "wrote " << options.out << ": " << m.rows.size() << " rows over " << ranks
            << " GPU(s)\n";
  return 0;
}

}  // namespace trainsim::validate

#include "pipeline/read_plan.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include "core/error.hpp"
#include "pipeline/lru_cache.hpp"

namespace trainsim::pipeline {

namespace {

/// Fisher-Yates with mt19937_64 (whose output the standard fixes), so the order is the same
/// with every standard library.
std::vector<std::int64_t> shuffled(std::int64_t n, std::mt19937_64& rng) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = i;
  for (std::int64_t i = n - 1; i > 0; --i)
    std::swap(v[static_cast<std::size_t>(i)],
              v[static_cast<std::size_t>(rng() % static_cast<std::uint64_t>(i + 1))]);
  return v;
}

}  // namespace

ReadPlan plan_reads(const ReadPlanInput& in) {
  TRAINSIM_CHECK(in.nodes >= 1 && in.samples_per_node_step >= 1 && in.epochs >= 1, "bad read plan input");
  ReadPlan plan;
  plan.nodes = in.nodes;
  plan.servers = in.local_nvme ? 0 : in.servers;
  plan.epochs = in.epochs;
  std::vector<int> sequence = in.node_sequence;
  if (sequence.empty())
    for (int n = 0; n < in.nodes; ++n) sequence.push_back(n);
  TRAINSIM_CHECK(static_cast<int>(sequence.size()) == in.nodes, "a read sequence per node");
  const int sequences = *std::max_element(sequence.begin(), sequence.end()) + 1;
  TRAINSIM_CHECK(sequences >= 1, "no node reads the data");
  const long samples = in.data.samples();
  plan.steps_per_epoch = samples / (in.samples_per_node_step * sequences);  // drop_last
  const Bytes file_size = std::max(in.data.file_size, in.data.bytes_per_sample);
  const auto files = static_cast<std::int64_t>(std::ceil(in.data.size / file_size));
  const Bytes step_bytes = static_cast<double>(in.samples_per_node_step) * in.data.bytes_per_sample;
  const int stripes = file_size >= in.large_file_threshold && in.large_file_threshold > 0
                          ? std::min(in.large_file_stripes, std::max(plan.servers, 1))
                          : 1;

  std::vector<LruCache> page(static_cast<std::size_t>(in.nodes), LruCache(in.page_cache_per_node));
  std::vector<LruCache> server(static_cast<std::size_t>(std::max(plan.servers, 1)),
                               LruCache(in.server_cache / std::max(plan.servers, 1)));
  std::mt19937_64 rng(in.seed);
  plan.reads.resize(static_cast<std::size_t>(in.epochs * plan.steps_per_epoch * in.nodes));
  for (auto& r : plan.reads) {
    r.server_cache.assign(static_cast<std::size_t>(plan.servers), 0);
    r.server_disk.assign(static_cast<std::size_t>(plan.servers), 0);
  }
  for (int e = 0; e < in.epochs; ++e) {
    const auto order = shuffled(files, rng);
    std::vector<std::size_t> next_file(static_cast<std::size_t>(in.nodes));
    std::vector<Bytes> left_in_file(static_cast<std::size_t>(in.nodes), 0);
    for (int n = 0; n < in.nodes; ++n)
      next_file[static_cast<std::size_t>(n)] = static_cast<std::size_t>(std::max(sequence[static_cast<std::size_t>(n)], 0));
    for (long s = 0; s < plan.steps_per_epoch; ++s) {
      for (int n = 0; n < in.nodes; ++n) {
        const auto un = static_cast<std::size_t>(n);
        if (sequence[un] < 0) continue;
        StepRead& r = plan.reads[static_cast<std::size_t>((e * plan.steps_per_epoch + s) * in.nodes + n)];
        Bytes need = step_bytes;
        while (need > 0) {
          if (left_in_file[un] <= 0) {  // open the node's next file and read it whole
            if (next_file[un] >= order.size()) break;
            const std::int64_t f = order[next_file[un]];
            next_file[un] += static_cast<std::size_t>(sequences);
            left_in_file[un] = file_size;
            if (page[un].access(f, file_size)) {
              r.page_cache += file_size;
            } else if (in.local_nvme) {
              r.local_disk += file_size;
            } else {
              for (int k = 0; k < stripes; ++k) {
                const auto sv = static_cast<std::size_t>((f + k) % plan.servers);
                const Bytes part = file_size / stripes;
                if (server[sv].access(f, part))
                  r.server_cache[sv] += part;
                else
                  r.server_disk[sv] += part;
              }
            }
          }
          const Bytes take = std::min(need, left_in_file[un]);
          need -= take;
          left_in_file[un] -= take;
        }
      }
    }
  }
  return plan;
}

}  // namespace trainsim::pipeline

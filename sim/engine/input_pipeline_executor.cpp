#include "engine/input_pipeline_executor.hpp"

#include <algorithm>
#include <cstdio>
#include <memory>

#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Barrier.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/ConditionVariable.hpp>
#include <simgrid/s4u/Disk.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Exec.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Io.hpp>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/Mutex.hpp>
#include <simgrid/s4u/NetZone.hpp>

#include "core/error.hpp"
#include "engine/activity_start.hpp"
#include "engine/io_reserve.hpp"
#include "engine/platform_builder.hpp"

namespace sg4 = simgrid::s4u;

namespace trainsim::engine {

namespace {

constexpr double kCoreSpeed = 1e9;      // FLOP/s per vCPU; CPU work is given in core-seconds
constexpr Seconds kBurstSampling = 1.0; // how often the burst-credit bucket is updated

struct LoaderBatch {
  Seconds claimed = -1, read_done = -1, ready = -1;
};

struct NodeState {
  sg4::Host* host = nullptr;
  sg4::Disk* nvme = nullptr;
  sg4::MutexPtr mutex = sg4::Mutex::create();
  sg4::ConditionVariablePtr slot_freed = sg4::ConditionVariable::create();  ///< workers wait here
  sg4::ConditionVariablePtr batch_ready = sg4::ConditionVariable::create(); ///< the trainer waits here
  int loaders = 0;         ///< ranks reading data here (their DataLoaders' workers share the vCPUs)
  int loader_batches = 0;  ///< per step: loaders x micro-batches
  long next_claim = 0;
  long consumed = 0;  ///< loader batches the trainer has taken
  // Actors switch only at simcalls, so these are read without the mutex to skip simcalls that
  // would do nothing; they change only under it.
  int idle_workers = 0;  ///< waiting on slot_freed and not yet signalled
  long awaited = -1;     ///< the batch the trainer waits for, -1 when it does not wait
  std::vector<LoaderBatch> batches;
  std::vector<Seconds> wait, io_wait, cpu_wait;  ///< per step: the trainer's wait for batches
  Seconds io_busy = 0, cpu_busy = 0;            ///< workers' time, for attributing waits
};

class PipelineSim {
public:
  explicit PipelineSim(const PipelineSetup& s) : s_(s), plan_(*s.plan) {
    const int nodes = plan_.nodes;
    const auto& host = *s.topology->host;
    auto* fabric = sg4::create_star_zone("io_fabric");
    for (int n = 0; n < nodes; ++n) {
      auto* zone = sg4::create_full_zone("io_node" + std::to_string(n));
      zone->set_parent(fabric);
      auto node = std::make_unique<NodeState>();
      node->host = zone->create_host("n" + std::to_string(n) + ".host", kCoreSpeed);
      node->host->set_core_count(host.vcpus);
      if (s.local_nvme)
        node->nvme = node->host->create_disk("nvme", host.local_nvme_read, host.local_nvme_read)->seal();
      zone->seal();
      auto* uplink = fabric->create_split_duplex_link("n" + std::to_string(n) + ".uplink",
                                                      s.topology->fabric.uplink_bandwidth);
      uplink->set_latency(0)->seal();
      fabric->add_route(zone->get_netpoint(), nullptr, node->host->get_netpoint(), nullptr,
                        {sg4::LinkInRoute(uplink, sg4::LinkInRoute::Direction::UP)}, true);
      node->loaders = s.step.node_loaders[static_cast<std::size_t>(n)];
      node->loader_batches = static_cast<int>(node->loaders * s.step.micro_batches);
      node->batches.resize(static_cast<std::size_t>(total_steps() * node->loader_batches));
      node->wait.assign(static_cast<std::size_t>(total_steps()), 0);
      node->io_wait = node->cpu_wait = node->wait;
      nodes_.push_back(std::move(node));
    }
    if (!s.local_nvme) build_file_servers(fabric);
    fabric->seal();
    step_end_.assign(static_cast<std::size_t>(total_steps()), 0);
    barrier_ = sg4::Barrier::create(static_cast<unsigned>(nodes));
  }

  pipeline::PipelineResult run() {
    // First, so that it makes its Ios before any worker reads at time 0.
    ios_.start(nodes_.front()->host, count_reads());
    for (int n = 0; n < plan_.nodes; ++n) {
      const int workers = s_.loader.workers_per_rank * nodes_[n]->loaders;  // per reading rank
      for (int w = 0; w < workers; ++w)
        sg4::Actor::create("n" + std::to_string(n) + ".worker" + std::to_string(w), nodes_[n]->host,
                           [this, n] { worker(n); });
      sg4::Actor::create("n" + std::to_string(n) + ".trainer", nodes_[n]->host, [this, n] { trainer(n); });
    }
    if (!servers_.empty() && s_.fsx.network_burst > s_.fsx.network_baseline)
      sg4::Actor::create("fsx.burst_credits", servers_.front(), [this] { burst_credits(); });
    sg4::Engine::get_instance()->run();
    TRAINSIM_CHECK(steps_done_ == total_steps() * plan_.nodes, "input pipeline simulation deadlocked");
    return summarize();
  }

private:
  [[nodiscard]] long total_steps() const { return plan_.epochs * plan_.steps_per_epoch; }
  [[nodiscard]] long prefetch_depth(const NodeState& node) const {
    return static_cast<long>(s_.loader.prefetch_factor) * s_.loader.workers_per_rank * node.loaders;
  }

  /// Disk reads the workers will start: one per loader batch per server whose disks the
  /// batch's step reads (or per loader batch of a step that reads local NVMe).
  [[nodiscard]] std::size_t count_reads() const {
    std::size_t reads = 0;
    for (long k = 0; k < total_steps(); ++k)
      for (int n = 0; n < plan_.nodes; ++n) {
        const auto& r = plan_.at(static_cast<int>(k / plan_.steps_per_epoch), k % plan_.steps_per_epoch, n);
        std::size_t per_batch = 0;
        if (s_.local_nvme) per_batch = r.local_disk > 0 ? 1 : 0;
        else
          for (const Bytes b : r.server_disk) per_batch += b > 0 ? 1 : 0;
        reads += per_batch * static_cast<std::size_t>(nodes_[static_cast<std::size_t>(n)]->loader_batches);
      }
    return reads;
  }

  void build_file_servers(sg4::NetZone* fabric) {
    auto* zone = sg4::create_full_zone("fsx");
    zone->set_parent(fabric);
    auto* sw = zone->create_router("fsx.switch");
    const int n = s_.fsx.servers;
    const bool burst = s_.fsx.burst_bucket > 0;
    credits_ = s_.fsx.burst_bucket;
    bursting_ = burst;
    for (int i = 0; i < n; ++i) {
      auto* h = zone->create_host("fsx.oss" + std::to_string(i), kCoreSpeed);
      const double disk = (burst ? s_.fsx.disk_burst : s_.fsx.disk_baseline) / n;
      disks_.push_back(h->create_disk("disks", disk, disk)->seal());
      auto* nic = zone->create_split_duplex_link("fsx.oss" + std::to_string(i) + ".net",
                                                 (burst ? s_.fsx.network_burst : s_.fsx.network_baseline) / n);
      nic->set_latency(0)->seal();
      zone->add_route(h->get_netpoint(), sw, nullptr, nullptr,
                      {sg4::LinkInRoute(nic, sg4::LinkInRoute::Direction::UP)}, true);
      servers_.push_back(h);
      nics_.push_back(nic);
      // A split-duplex link has no usage of its own (get_usage crashes): read the outgoing half.
      nic_out_.push_back(sg4::Link::by_name("fsx.oss" + std::to_string(i) + ".net_UP"));
    }
    zone->seal();
    // The file system's attachment to the fabric: never the bottleneck (the servers' links
    // are), but SimGrid's star zone wants a link on every route.
    auto* attach = fabric->create_split_duplex_link("fsx.attach", 2 * s_.fsx.network_burst);
    attach->set_latency(0)->seal();
    fabric->add_route(zone->get_netpoint(), nullptr, sw, nullptr,
                      {sg4::LinkInRoute(attach, sg4::LinkInRoute::Direction::UP)}, true);
  }

  /// Network I/O credits: accrue while the file system serves less than its baseline, drain
  /// while it serves more; bandwidth drops to the baseline when the bucket is empty.
  void burst_credits() {
    sg4::Actor::self()->daemonize();
    const double n = static_cast<double>(servers_.size());
    while (true) {
      sg4::this_actor::sleep_for(kBurstSampling);
      double used = 0;
      for (auto* l : nic_out_) used += l->get_usage();
      credits_ = std::clamp(credits_ + (s_.fsx.network_baseline - used) * kBurstSampling, 0.0,
                            s_.fsx.burst_bucket);
      const bool burst = credits_ > 0;
      if (burst == bursting_) continue;
      bursting_ = burst;
      for (auto* l : nics_) l->set_bandwidth((burst ? s_.fsx.network_burst : s_.fsx.network_baseline) / n);
      for (auto* d : disks_) d->set_read_bandwidth((burst ? s_.fsx.disk_burst : s_.fsx.disk_baseline) / n);
    }
  }

  void worker(int n) {
    NodeState& node = *nodes_[n];
    const long total = static_cast<long>(node.batches.size());
    const double share = 1.0 / node.loader_batches;
    while (true) {
      long b;
      {
        std::unique_lock<sg4::Mutex> lock(*node.mutex);
        while (node.next_claim < total && node.next_claim >= node.consumed + prefetch_depth(node)) {
          ++node.idle_workers;
          node.slot_freed->wait(lock);
        }
        if (node.next_claim >= total) return;
        b = node.next_claim++;
        if (node.next_claim == total && node.idle_workers > 0) {  // the others may stop
          node.idle_workers = 0;
          node.slot_freed->notify_all();
        }
      }
      LoaderBatch& rec = node.batches[static_cast<std::size_t>(b)];
      rec.claimed = sg4::Engine::get_clock();
      const long step = b / node.loader_batches;
      const auto& r = plan_.at(static_cast<int>(step / plan_.steps_per_epoch), step % plan_.steps_per_epoch, n);
      if (s_.local_nvme) {
        if (r.local_disk > 0) ios_.read_async(node.nvme, static_cast<sg_size_t>(r.local_disk * share))->wait();
      } else {
        std::vector<sg4::IoPtr> reads;
        for (std::size_t sv = 0; sv < servers_.size(); ++sv)
          if (r.server_disk[sv] > 0)
            reads.push_back(ios_.read_async(disks_[sv], static_cast<sg_size_t>(r.server_disk[sv] * share)));
        for (auto& io : reads) io->wait();
        std::vector<sg4::CommPtr> transfers;
        for (std::size_t sv = 0; sv < servers_.size(); ++sv) {
          const Bytes bytes = (r.server_disk[sv] + r.server_cache[sv]) * share;
          if (bytes >= 1)
            transfers.push_back(sg4::Comm::sendto_async(servers_[sv], node.host, static_cast<uint64_t>(bytes)));
        }
        for (auto& c : transfers) c->wait();
      }
      rec.read_done = sg4::Engine::get_clock();
      const double work = static_cast<double>(s_.step.samples_per_loader_batch) * s_.loader.preprocess_per_sample;
      if (work > 0) start_exec(node.host, work * kCoreSpeed)->wait();  // this_actor::execute, one simcall
      rec.ready = sg4::Engine::get_clock();
      node.io_busy += rec.read_done - rec.claimed;
      node.cpu_busy += rec.ready - rec.read_done;
      if (node.awaited == b) {
        std::unique_lock<sg4::Mutex> lock(*node.mutex);
        node.batch_ready->notify_all();  // only the trainer waits on it
      }
    }
  }

  void trainer(int n) {
    NodeState& node = *nodes_[n];
    const int next = (n + 1) % plan_.nodes;
    for (long k = 0; k < total_steps(); ++k) {
      const auto step = static_cast<std::size_t>(k);
      for (int j = 0; j < node.loader_batches; ++j) {
        const auto b = static_cast<std::size_t>(k * node.loader_batches + j);
        const Seconds w0 = sg4::Engine::get_clock();
        if (node.batches[b].ready < 0) {
          node.awaited = static_cast<long>(b);  // before the lock: locking may yield to the worker
          std::unique_lock<sg4::Mutex> lock(*node.mutex);
          while (node.batches[b].ready < 0) node.batch_ready->wait(lock);
          node.awaited = -1;
        }
        attribute_wait(node, step, node.batches[b], w0, sg4::Engine::get_clock());
        // Each micro-batch's batches free their prefetch slots once taken (PyTorch's DataLoader
        // gives a worker the next index whenever a batch is taken: dataloader.py _process_data
        // calls _try_put_index). Freeing them only at the
        // step's end deadlocked once micro-batches x loaders exceeded the prefetch depth
        // (prefetch_factor x workers x loaders): the workers stopped short of the step.
        // One worker per freed slot, the longest waiting first (SimGrid's queue is FIFO): the
        // workers a notify_all would have let claim, without waking every idle worker to find
        // the slots gone (the herd cost 8 wake-ups per batch with 64 workers).
        if ((j + 1) % node.loaders == 0) {
          node.consumed = k * node.loader_batches + j + 1;
          if (node.idle_workers > 0) {
            std::unique_lock<sg4::Mutex> lock(*node.mutex);
            for (int slot = 0; slot < node.loaders && node.idle_workers > 0; ++slot, --node.idle_workers)
              node.slot_freed->notify_one();
          }
        }
      }
      barrier_->wait();  // the step's gradient all-reduce waits for every node
      // Started in one simcall each (engine/activity_start): a step's activities are most of the
      // trainer's simcalls at small micro-batches.
      std::vector<sg4::CommPtr> grads;
      if (plan_.nodes > 1 && s_.step.inter_node_bytes >= 1)
        grads = start_transfers({{node.host, nodes_[next]->host, static_cast<uint64_t>(s_.step.inter_node_bytes)}});
      std::vector<sg4::ExecPtr> cpu;
      const double cores = s_.loader.collective_cpu_cores;
      for (int c = 0; c < static_cast<int>(std::ceil(cores)); ++c) {
        const double frac = std::min(1.0, cores - c);
        cpu.push_back(start_exec(node.host, frac * s_.step.communication_time * kCoreSpeed));  // exec_async
      }
      sg4::this_actor::sleep_for(s_.step.step_time);
      for (auto& c : grads) c->wait();
      for (auto& e : cpu) e->wait();
      step_end_[static_cast<std::size_t>(k)] = std::max(step_end_[static_cast<std::size_t>(k)], sg4::Engine::get_clock());
      ++steps_done_;
    }
  }

  /// Splits a wait between reading and pre-processing by what the awaited batch was doing;
  /// the part before it was claimed (every worker busy) by what the workers spend time on. A
  /// wait that begins while its batch is still being read is all the read's: the batch's
  /// pre-processing would have been hidden had the read finished in time.
  void attribute_wait(NodeState& node, std::size_t step, const LoaderBatch& b, Seconds w0, Seconds w1) {
    if (w1 <= w0) return;
    auto overlap = [&](Seconds a, Seconds c) { return std::max(0.0, std::min(w1, c) - std::max(w0, a)); };
    const bool late_read = w0 >= b.claimed && w0 < b.read_done;
    const Seconds io = late_read ? w1 - w0 : overlap(b.claimed, b.read_done);
    const Seconds cpu = late_read ? 0 : overlap(b.read_done, b.ready);
    const Seconds before = overlap(-1e300, b.claimed);
    const double busy = node.io_busy + node.cpu_busy;
    const double io_share = busy > 0 ? node.io_busy / busy : 0.5;
    node.wait[step] += w1 - w0;
    node.io_wait[step] += io + before * io_share;
    node.cpu_wait[step] += cpu + before * (1 - io_share);
  }

  pipeline::PipelineResult summarize() const {
    pipeline::PipelineResult out;
    out.steps_per_epoch = plan_.steps_per_epoch;
    out.compute_bound_samples_per_s = static_cast<double>(s_.step.samples_per_step) / s_.step.step_time;
    const auto& host = *s_.topology->host;
    Seconds prev = 0;
    for (int e = 0; e < plan_.epochs; ++e) {
      pipeline::EpochResult r;
      const Seconds end = step_end_[static_cast<std::size_t>((e + 1) * plan_.steps_per_epoch - 1)];
      r.time = end - prev;
      prev = end;
      const double steps = static_cast<double>(plan_.steps_per_epoch);
      r.samples_per_s = steps * static_cast<double>(s_.step.samples_per_step) / r.time;
      // The step's all-reduce holds every node until the last one has its batches, so the job
      // stalls, step by step, as long as the node that waited longest; its reads vs
      // pre-processing split names the cause. Per node, the whole epoch's wait shows imbalance.
      std::vector<Seconds> node_wait(static_cast<std::size_t>(plan_.nodes), 0);
      Seconds stall = 0, io_stall = 0, cpu_stall = 0;
      for (long k = 0; k < plan_.steps_per_epoch; ++k) {
        const auto step = static_cast<std::size_t>(e * plan_.steps_per_epoch + k);
        int worst = 0;
        for (int n = 0; n < plan_.nodes; ++n) {
          node_wait[static_cast<std::size_t>(n)] += nodes_[n]->wait[step];
          if (nodes_[n]->wait[step] > nodes_[worst]->wait[step]) worst = n;
        }
        stall += nodes_[worst]->wait[step];
        io_stall += nodes_[worst]->io_wait[step];
        cpu_stall += nodes_[worst]->cpu_wait[step];
      }
      r.wait_fraction = stall / r.time;
      r.io_wait_fraction = io_stall / r.time;
      r.cpu_wait_fraction = cpu_stall / r.time;
      r.min_node_wait_fraction = 1;
      for (int n = 0; n < plan_.nodes; ++n) {
        // A node whose ranks read nothing (a pipeline's middle stages) never waits for data:
        // the spread is among the nodes that load batches.
        const double w = node_wait[static_cast<std::size_t>(n)] / r.time;
        if (nodes_[n]->loader_batches > 0) {
          if (w > r.max_node_wait_fraction) {
            r.max_node_wait_fraction = w;
            r.slowest_node = n;
          }
          r.min_node_wait_fraction = std::min(r.min_node_wait_fraction, w);
        }
        for (long k = 0; k < plan_.steps_per_epoch; ++k) {
          const auto& rd = plan_.at(e, k, n);
          r.bytes_page_cache += rd.page_cache;
          r.bytes_disk += rd.local_disk;
          for (std::size_t sv = 0; sv < rd.server_disk.size(); ++sv) {
            r.bytes_disk += rd.server_disk[sv];
            r.bytes_server_cache += rd.server_cache[sv];
          }
        }
      }
      r.accelerator_utilisation = steps * s_.step.accelerator_busy / r.time;
      // The node with the most DataLoaders is the busiest (every node runs the collective work).
      int most_batches = 0;
      for (const auto& node : nodes_) most_batches = std::max(most_batches, node->loader_batches);
      const double samples_per_node = steps * static_cast<double>(s_.step.samples_per_loader_batch * most_batches);
      const double core_seconds = samples_per_node * s_.loader.preprocess_per_sample +
                                  steps * s_.loader.collective_cpu_cores * s_.step.communication_time;
      r.cpu_utilisation = core_seconds / (host.vcpus * r.time);
      out.epochs.push_back(r);
    }
    return out;
  }

  const PipelineSetup& s_;
  const pipeline::ReadPlan& plan_;
  std::vector<std::unique_ptr<NodeState>> nodes_;
  std::vector<sg4::Host*> servers_;
  std::vector<sg4::Disk*> disks_;
  std::vector<sg4::Link*> nics_;
  std::vector<sg4::Link*> nic_out_;
  double credits_ = 0;
  bool bursting_ = false;
  sg4::BarrierPtr barrier_;
  IoReserve ios_;
  std::vector<Seconds> step_end_;
  long steps_done_ = 0;
};

}  // namespace

pipeline::PipelineResult simulate_input_pipeline(const PipelineSetup& setup) {
  TRAINSIM_CHECK(setup.plan && setup.topology && setup.topology->host, "incomplete pipeline setup");
  TRAINSIM_CHECK(static_cast<int>(setup.step.node_loaders.size()) == setup.plan->nodes, "DataLoaders per node");
  const auto simgrid_engine = make_exact_timing_engine();
  PipelineSim sim(setup);
  return sim.run();
}

}  // namespace trainsim::engine

// engine/activity_start: activities started with all their settings in one simcall run exactly as
// the s4u calls they replace (this_actor::execute, a bounded Exec set up setter by setter,
// Comm::sendto_async), on the dl1.24xlarge platform. One SimGrid Engine per process: ctest runs
// each TEST in its own process.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <vector>

#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Exec.hpp>

#include "engine/activity_start.hpp"
#include "engine/platform_builder.hpp"
#include "exact_timing_engine.hpp"
#include "topology/topology.hpp"

namespace trainsim::engine {
namespace {

namespace sg4 = simgrid::s4u;

class ActivityStartTest : public testing::Test {
protected:
  void SetUp() override {
    if (!testing_support::first_engine_of_process())
      GTEST_SKIP() << "one SimGrid Engine per process: run this test on its own (--gtest_filter), as ctest does";
    engine_ = make_exact_timing_engine("activity_start_test");
    topology_ = topology::load_topology("topologies/dl1.24xlarge.json");
    platform_ = build_platform(topology_, 2);
  }

  /// Runs `body` in one actor on rank 0's accelerator until the simulation ends.
  void simulate(const std::function<void()>& body) {
    sg4::Actor::create("test", platform_.rank_host[0], body);
    engine_->run();
  }

  std::unique_ptr<sg4::Engine> engine_;
  topology::Topology topology_;
  Platform platform_;
};

TEST_F(ActivityStartTest, ExecTakesWhatExecuteTakes) {
  const double speed = platform_.host_speed;
  double by_execute = -1, by_start_exec = -1;
  simulate([&] {
    const double t0 = sg4::Engine::get_clock();
    sg4::this_actor::execute(2.5 * speed);
    by_execute = sg4::Engine::get_clock() - t0;
    const double t1 = sg4::Engine::get_clock();
    start_exec(sg4::this_actor::get_host(), 2.5 * speed)->wait();
    by_start_exec = sg4::Engine::get_clock() - t1;
  });
  EXPECT_DOUBLE_EQ(by_execute, 2.5);  // 2.5 s of the host's flops, alone on it
  EXPECT_EQ(by_start_exec, by_execute);
}

TEST_F(ActivityStartTest, BoundedExecTakesItsBoundFirst) {
  // An SM hold as the executor makes one: a quarter of the host's speed at a large weight, so
  // the compute Exec beside it gets the other three quarters: 3 s of flops take 4 s.
  const double speed = platform_.host_speed;
  double hold_setter_by_setter = -1, hold_one_simcall = -1;
  simulate([&] {
    auto time_beside = [&](const sg4::ExecPtr& hold) {
      const double t0 = sg4::Engine::get_clock();
      sg4::this_actor::execute(3.0 * speed);
      hold->cancel();
      return sg4::Engine::get_clock() - t0;
    };
    sg4::ExecPtr by_setters = sg4::Exec::init();
    by_setters->set_flops_amount(speed * 1e15)->set_bound(speed / 4)->set_priority(1e6)->set_host(sg4::this_actor::get_host());
    by_setters->start();
    hold_setter_by_setter = time_beside(by_setters);
    hold_one_simcall = time_beside(start_bounded_exec(sg4::this_actor::get_host(), speed * 1e15, speed / 4, 1e6));
  });
  EXPECT_DOUBLE_EQ(hold_setter_by_setter, 3.0 / 0.75);
  EXPECT_EQ(hold_one_simcall, hold_setter_by_setter);
}

TEST_F(ActivityStartTest, TransfersTakeWhatSendtoAsyncTakes) {
  // Two flows out of rank 0 at once (to a rank of its node and to one of the other node), then
  // the same two started by start_transfers: each flow ends when it did the first time.
  auto* src = platform_.rank_host[0];
  const std::vector<HostTransfer> transfers = {{src, platform_.rank_host[1], 1 << 28},
                                               {src, platform_.rank_host[platform_.ranks_per_node], 1 << 26}};
  std::vector<double> by_sendto, by_start;
  simulate([&] {
    auto ends = [](const std::vector<sg4::CommPtr>& comms) {
      const double t0 = sg4::Engine::get_clock();
      std::vector<double> took;
      for (const auto& c : comms) {
        c->wait();
        took.push_back(sg4::Engine::get_clock() - t0);
      }
      return took;
    };
    std::vector<sg4::CommPtr> comms;
    for (const auto& t : transfers) comms.push_back(sg4::Comm::sendto_async(t.src, t.dst, t.bytes));
    by_sendto = ends(comms);
    by_start = ends(start_transfers(transfers));
  });
  ASSERT_EQ(by_sendto.size(), 2u);
  EXPECT_GT(by_sendto[0], 0);
  EXPECT_GT(by_sendto[1], 0);
  EXPECT_EQ(by_start, by_sendto);
  EXPECT_TRUE(start_transfers({}).empty());
}

}  // namespace
}  // namespace trainsim::engine

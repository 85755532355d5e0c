// engine/io_reserve: reads through the reserve's Ios run exactly as Disk::read_async's (alone
// and sharing the disk), however many reads the reserve serves. One SimGrid Engine per process:
// ctest runs each TEST in its own process.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Disk.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Io.hpp>
#include <simgrid/s4u/NetZone.hpp>

#include "core/error.hpp"
#include "engine/io_reserve.hpp"
#include "engine/platform_builder.hpp"
#include "exact_timing_engine.hpp"

namespace trainsim::engine {
namespace {

namespace sg4 = simgrid::s4u;

constexpr double kDiskRate = 100e6;  // bytes/s, read and write

class IoReserveTest : public testing::Test {
protected:
  void SetUp() override {
    if (!testing_support::first_engine_of_process())
      GTEST_SKIP() << "one SimGrid Engine per process: run this test on its own (--gtest_filter), as ctest does";
    engine_ = make_exact_timing_engine("io_reserve_test");
    auto* zone = sg4::create_full_zone("zone");
    host_ = zone->create_host("host", 1e9);
    disk_ = host_->create_disk("disk", kDiskRate, kDiskRate)->seal();
    zone->seal();
  }

  std::unique_ptr<sg4::Engine> engine_;
  sg4::Host* host_ = nullptr;
  sg4::Disk* disk_ = nullptr;
};

TEST_F(IoReserveTest, ReadsTakeWhatDiskReadAsyncTakes) {
  // Two reads of 50 MB and 100 MB at once share 100 MB/s: the first ends at 1 s (50 MB/s each),
  // the second at 1.5 s (alone for its last 50 MB); first by Disk::read_async, then the same
  // pair through the reserve.
  IoReserve reserve;
  reserve.start(host_, 2);
  std::vector<double> by_disk, by_reserve;
  sg4::Actor::create("reader", host_, [&] {
    auto pair = [&](sg4::IoPtr a, sg4::IoPtr b, std::vector<double>& ends) {
      const double t0 = sg4::Engine::get_clock();
      a->wait();
      ends.push_back(sg4::Engine::get_clock() - t0);
      b->wait();
      ends.push_back(sg4::Engine::get_clock() - t0);
    };
    pair(disk_->read_async(50'000'000), disk_->read_async(100'000'000), by_disk);
    pair(reserve.read_async(disk_, 50'000'000), reserve.read_async(disk_, 100'000'000), by_reserve);
  });
  engine_->run();
  ASSERT_EQ(by_disk.size(), 2U);
  EXPECT_DOUBLE_EQ(by_disk[0], 1.0);
  EXPECT_DOUBLE_EQ(by_disk[1], 1.5);
  EXPECT_EQ(by_reserve, by_disk);
}

TEST_F(IoReserveTest, ServesAsManyReadsAsItHoldsThenThrows) {
  // 1,000 reads of 1 MB one after another take 10 s; a read beyond the reserve is an
  // invariant error, not an Io created by the reading actor.
  IoReserve reserve;
  reserve.start(host_, 1000);
  double elapsed = -1;
  bool threw = false;
  sg4::Actor::create("reader", host_, [&] {
    for (int i = 0; i < 1000; ++i) reserve.read_async(disk_, 1'000'000)->wait();
    elapsed = sg4::Engine::get_clock();
    try {
      (void)reserve.read_async(disk_, 1'000'000);
    } catch (const InvariantError&) {
      threw = true;
    }
  });
  engine_->run();
  EXPECT_NEAR(elapsed, 1000 * 1e6 / kDiskRate, 1e-9);
  EXPECT_TRUE(threw);
}

}  // namespace
}  // namespace trainsim::engine

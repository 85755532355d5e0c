// The ZB-V schedule (program/zero_bubble_v.hpp) against the paper's code: exact orders and times
// for small settings, and the properties any valid V schedule has on large ones.
#include "program/zero_bubble_v.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

namespace trainsim::program {
namespace {

using Kind = ZeroBubbleVNode::Kind;

/// The paper's activation memory per chunk pass (h = 4096, a = 32, s = 1024): f = 34h + 5as,
/// w = -32h (b = -f - w).
constexpr long kH = 4096, kA = 32, kS = 1024;
constexpr long kF = 34 * kH + 5 * kA * kS, kW = -32 * kH;

bool is_compute(Kind k) {
  return k == Kind::forward || k == Kind::input_gradient || k == Kind::weight_gradient;
}
bool is_forward(Kind k) {
  return k == Kind::forward || k == Kind::send_forward || k == Kind::receive_forward;
}

/// One stage's nodes as text: a compute pass as F/B/W (model chunk 0) or f/b/w (chunk 1) and its
/// micro-batch; a transfer as > (send) or < (receive) and the pass whose tensor it carries (F/f a
/// forward's output, B/b an input gradient). `timed` appends @start.
std::string text(const std::vector<ZeroBubbleVNode>& nodes, bool timed = false) {
  std::string s;
  for (const auto& n : nodes) {
    if (!s.empty()) s += ' ';
    if (n.kind == Kind::send_forward || n.kind == Kind::send_backward) s += '>';
    if (n.kind == Kind::receive_forward || n.kind == Kind::receive_backward) s += '<';
    char c = n.kind == Kind::weight_gradient ? 'W' : is_forward(n.kind) ? 'F' : 'B';
    if (n.chunk == 1) c = static_cast<char>(c - 'A' + 'a');
    s += c + std::to_string(n.micro_batch);
    if (timed) s += '@' + std::to_string(n.start);
  }
  return s;
}

/// The paper's code's output, stage by stage, and per stage the sum of its compute passes' start
/// times and its last completion, which pin the times the text leaves out.
struct Expected {
  std::vector<std::string> stages;
  std::vector<long> start_sums, ends;
};

void expect_schedule(long pp, long m, const ZeroBubbleVCosts& costs,
                     const ZeroBubbleVMemory& memory, const Expected& want) {
  const auto got = zero_bubble_v_schedule(pp, m, costs, memory);
  ASSERT_EQ(got.size(), static_cast<std::size_t>(pp));
  for (std::size_t s = 0; s < got.size(); ++s) {
    EXPECT_EQ(text(got[s]), want.stages[s]) << "stage " << s;
    long sum = 0, end = 0;
    for (const auto& n : got[s]) {
      if (is_compute(n.kind)) sum += n.start;
      end = std::max(end, n.completion);
    }
    EXPECT_EQ(sum, want.start_sums[s]) << "stage " << s;
    EXPECT_EQ(end, want.ends[s]) << "stage " << s;
  }
}

// The expected orders below are v_schedule.py's get_v_schedule output at 678c9996 with the
// post-validation nodes left out. Every one of them depends on where those nodes stood: the code
// does not move a receive that follows them before the compute that precedes them.

TEST(ZeroBubbleV, MatchesThePaperCodeWithTimesOnThreeStages) {
  // Costs (6, 4, 4, 1), unit forward memory, the default limit of 2 pp forwards. The receives
  // that arrive while a compute runs are posted before it (e.g. stage 0's <f2@57 before b1@54).
  const auto got = zero_bubble_v_schedule(3, 4, {6, 4, 4, 1}, {1, 0, 0});
  const std::vector<std::string> want{
      "F0@0 >F0@6 F1@6 >F1@12 F2@12 >F2@18 F3@18 >F3@24 <f0@33 f0@34 b0@40 >b0@44 <f1@45 w0@44 "
      "f1@48 <f2@57 b1@54 "
      ">b1@58 f2@58 b2@64 >b2@68 <B0@69 w1@68 B0@72 <f3@77 w2@76 <B1@85 f3@80 b3@86 >b3@90 B1@90 "
      "W0@94 <B2@101 w3@98 "
      "B2@102 W1@106 <B3@113 W2@110 B3@114 W3@118",
      "<F0@6 <F1@12 F0@7 >F0@13 F1@13 <F2@18 >F1@19 <F3@24 F2@19 >F2@25 <f0@26 f0@27 >f0@33 <f1@38 "
      "F3@33 >F3@39 "
      "<b0@44 f1@39 >f1@45 b0@45 >b0@49 <f2@50 f2@51 >f2@57 <b1@58 b1@59 >b1@63 <B0@64 <b2@68 "
      "B0@65 >B0@69 <f3@70 "
      "f3@71 >f3@77 <B1@78 b2@77 >b2@81 B1@81 >B1@85 w0@85 <b3@90 <B2@90 w1@89 b3@93 >b3@97 B2@97 "
      ">B2@101 W0@101 "
      "<B3@106 w2@105 B3@109 >B3@113 W1@113 w3@117 W2@121 W3@125",
      "<F0@13 <F1@19 F0@14 <F2@25 f0@20 >f0@26 F1@26 f1@32 >f1@38 <F3@39 F2@38 <b0@49 f2@44 >f2@50 "
      "b0@50 F3@54 <b1@63 "
      "B0@60 >B0@64 f3@64 >f3@70 b1@70 B1@74 >B1@78 <b2@81 w0@78 b2@82 B2@86 >B2@90 W0@90 <b3@97 "
      "w1@94 b3@98 B3@102 "
      ">B3@106 W1@106 w2@110 W2@114 w3@118 W3@122",
  };
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t s = 0; s < got.size(); ++s)
    EXPECT_EQ(text(got[s], true), want[s]) << "stage " << s;
  // Every node's completion: its start plus its cost for compute, its start for a transfer.
  for (const auto& stage : got)
    for (const auto& n : stage) {
      const long cost = n.kind == Kind::forward ? 6 : is_compute(n.kind) ? 4 : 0;
      EXPECT_EQ(n.completion, n.start + cost);
    }
}

TEST(ZeroBubbleV, MatchesThePaperCodeWithFewerMicroBatchesThanStages) {
  const std::vector<std::string> stages{
      "F0 >F0 F1 >F1 F2 >F2 <f0 f0 b0 >b0 <f1 w0 f1 <f2 b1 >b1 f2 b2 >b2 w1 w2 <B0 B0 W0 <B1 B1 "
      "<B2 W1 B2 W2",
      "<F0 <F1 F0 >F0 <F2 F1 >F1 F2 >F2 <f0 f0 >f0 <f1 <b0 f1 >f1 <f2 b0 >b0 f2 >f2 <b1 w0 b1 >b1 "
      "<b2 w1 b2 >b2 w2 "
      "<B0 B0 >B0 W0 <B1 B1 >B1 <B2 W1 B2 >B2 W2",
      "<F0 <F1 F0 >F0 <F2 F1 >F1 F2 >F2 <f0 f0 >f0 <f1 f1 >f1 <f2 f2 >f2 <b0 b0 >b0 w0 <b1 b1 >b1 "
      "<b2 w1 b2 >b2 <B0 "
      "B0 >B0 w2 <B1 W0 B1 >B1 <B2 W1 B2 >B2 W2",
      "<F0 <F1 F0 >F0 F1 <F2 >F1 F2 >F2 <f0 f0 >f0 <f1 f1 >f1 <f2 f2 >f2 <b0 b0 >b0 w0 <b1 <B0 b1 "
      ">b1 <b2 B0 >B0 b2 "
      ">b2 <B1 B1 >B1 <B2 w1 B2 >B2 W0 w2 W1 W2",
      "<F0 <F1 F0 <F2 f0 >f0 F1 f1 >f1 F2 f2 >f2 <b0 b0 B0 >B0 <b1 w0 b1 <b2 B1 >B1 b2 B2 >B2 W0 "
      "w1 W1 w2 W2",
  };
  expect_schedule(5, 3, {3, 2, 2, 1}, {1, 0, 0},
                  {stages, {842, 837, 839, 878, 889}, {80, 77, 74, 77, 76}});
}

TEST(ZeroBubbleV, MatchesThePaperCodeWhenEveryCostTies) {
  // f = b = w = 1 and free transfers: every choice is decided by the code's tie-breaking.
  const std::vector<std::string> stages{
      "F0 >F0 F1 >F1 F2 >F2 F3 >F3 F4 >F4 F5 >F5 F6 >F6 <f0 f0 b0 >b0 <f1 f1 b1 >b1 <f2 f2 b2 >b2 "
      "<f3 f3 b3 >b3 F7 "
      ">F7 <B0 <f4 B0 f4 b4 >b4 <B1 w0 <f5 B1 f5 b5 >b5 <B2 w1 <f6 B2 f6 b6 >b6 <B3 w2 <f7 B3 f7 "
      "b7 >b7 <B4 B4 <B5 w3 "
      "B5 <B6 W0 B6 <B7 w4 B7 W1 w5 W2 w6 W3 w7 W4 W5 W6 W7",
      "<F0 <F1 F0 >F0 <F2 F1 >F1 <F3 F2 >F2 F3 <F4 >F3 <F5 F4 >F4 <f0 <F6 f0 >f0 F5 >F5 <f1 <b0 f1 "
      ">f1 b0 >b0 <f2 <b1 "
      "f2 >f2 b1 >b1 <f3 <b2 f3 >f3 b2 >b2 <b3 F6 >F6 <B0 <F7 B0 >B0 <f4 f4 >f4 b3 >b3 <b4 F7 >F7 "
      "<B1 B1 >B1 <f5 f5 "
      ">f5 b4 >b4 <b5 <B2 w0 B2 >B2 <f6 f6 >f6 b5 >b5 <b6 <B3 w1 B3 >B3 <f7 f7 >f7 b6 >b6 <B4 <b7 "
      "B4 >B4 b7 >b7 <B5 "
      "B5 >B5 <B6 w2 B6 >B6 <B7 W0 B7 >B7 w3 W1 w4 W2 w5 W3 w6 W4 w7 W5 W6 W7",
      "<F0 <F1 F0 >F0 F1 <F2 >F1 <F3 F2 >F2 <f0 <F4 f0 >f0 F3 >F3 <f1 <F5 f1 >f1 F4 >F4 <f2 <b0 f2 "
      ">f2 b0 >b0 <f3 <b1 "
      "f3 >f3 b1 >b1 <b2 F5 >F5 <B0 <F6 B0 >B0 <f4 f4 >f4 b2 >b2 <b3 F6 >F6 <B1 <F7 B1 >B1 <f5 f5 "
      ">f5 b3 >b3 <b4 F7 "
      ">F7 <B2 B2 >B2 <f6 f6 >f6 b4 >b4 <b5 <B3 w0 B3 >B3 <f7 f7 >f7 b5 >b5 <B4 <b6 B4 >B4 b6 >b6 "
      "<B5 <b7 B5 >B5 b7 "
      ">b7 <B6 B6 >B6 <B7 w1 B7 >B7 W0 w2 W1 w3 W2 w4 W3 w5 W4 w6 W5 w7 W6 W7",
      "<F0 <F1 F0 <F2 f0 >f0 F1 <F3 f1 >f1 F2 <F4 f2 >f2 F3 <b0 f3 >f3 b0 <b1 F4 <F5 B0 >B0 f4 >f4 "
      "b1 <b2 F5 <F6 B1 "
      ">B1 f5 >f5 b2 <b3 F6 <F7 B2 >B2 f6 >f6 b3 <b4 F7 B3 >B3 f7 >f7 b4 <b5 B4 >B4 b5 <b6 B5 >B5 "
      "b6 <b7 B6 >B6 b7 B7 "
      ">B7 w0 W0 w1 W1 w2 W2 w3 W3 w4 W4 w5 W5 w6 W6 w7 W7",
  };
  expect_schedule(4, 8, {1, 1, 1, 0}, {1, 0, 0},
                  {stages, {1128, 1176, 1224, 1272}, {48, 49, 50, 51}});
}

TEST(ZeroBubbleV, MatchesThePaperCodeWithThePapersMemory) {
  const std::vector<std::string> stages{
      "F0 >F0 F1 >F1 F2 >F2 F3 >F3 F4 >F4 F5 >F5 F6 >F6 <f0 f0 b0 >b0 <f1 w0 f1 b1 >b1 <f2 w1 f2 "
      "b2 >b2 <f3 w2 f3 b3 "
      ">b3 w3 <B0 F7 >F7 B0 <f4 W0 f4 b4 >b4 w4 <B1 B1 W1 <f5 f5 b5 >b5 <B2 w5 B2 W2 <f6 f6 b6 >b6 "
      "<B3 w6 B3 W3 <f7 "
      "f7 <B4 b7 >b7 B4 w7 <B5 W4 B5 <B6 W5 B6 W6 <B7 B7 W7",
      "<F0 <F1 F0 >F0 <F2 F1 >F1 <F3 F2 >F2 F3 <F4 >F3 <F5 F4 >F4 <f0 <F6 f0 >f0 <f1 F5 >F5 <b0 f1 "
      ">f1 b0 >b0 <f2 w0 "
      "<b1 f2 >f2 b1 >b1 <f3 w1 <b2 f3 >f3 b2 >b2 w2 <B0 <b3 F6 >F6 B0 >B0 <f4 W0 <F7 f4 >f4 b3 "
      ">b3 w3 <B1 <b4 F7 >F7 "
      "B1 >B1 <f5 W1 f5 >f5 b4 >b4 w4 <B2 <b5 B2 >B2 W2 <f6 f6 >f6 b5 >b5 <B3 w5 <b6 B3 >B3 W3 <f7 "
      "f7 >f7 <B4 b6 >b6 "
      "B4 >B4 <b7 w6 <B5 b7 >b7 B5 >B5 W4 <B6 B6 >B6 w7 <B7 B7 >B7 W5 W6 W7",
      "<F0 <F1 F0 >F0 F1 <F2 >F1 <F3 F2 >F2 <f0 <F4 f0 >f0 <f1 F3 >F3 f1 >f1 <F5 <f2 F4 >F4 <b0 f2 "
      ">f2 b0 >b0 <f3 w0 "
      "<b1 f3 >f3 b1 >b1 w1 <B0 <b2 F5 >F5 B0 >B0 <f4 W0 <F6 f4 >f4 b2 >b2 w2 <B1 <b3 F6 >F6 B1 "
      ">B1 <f5 W1 <F7 f5 >f5 "
      "b3 >b3 w3 <B2 <b4 F7 >F7 B2 >B2 <f6 W2 f6 >f6 b4 >b4 w4 <B3 <b5 B3 >B3 W3 <f7 f7 >f7 <B4 b5 "
      ">b5 B4 >B4 <b6 w5 "
      "<B5 b6 >b6 B5 >B5 <b7 W4 <B6 b7 >b7 B6 >B6 w6 <B7 B7 >B7 W5 w7 W6 W7",
      "<F0 <F1 F0 <F2 f0 >f0 F1 f1 >f1 <F3 F2 f2 >f2 <F4 F3 <b0 f3 >f3 b0 w0 <b1 F4 B0 >B0 W0 <F5 "
      "f4 >f4 b1 w1 <b2 F5 "
      "B1 >B1 W1 <F6 f5 >f5 b2 w2 <b3 F6 B2 >B2 W2 <F7 f6 >f6 b3 w3 <b4 F7 B3 >B3 W3 f7 >f7 b4 B4 "
      ">B4 <b5 w4 b5 B5 "
      ">B5 <b6 W4 b6 B6 >B6 <b7 w5 b7 B7 >B7 W5 w6 W6 w7 W7",
  };
  expect_schedule(4, 8, {6, 4, 4, 1}, {kF, kW, 0},
                  {stages, {6054, 6276, 6464, 6640}, {244, 247, 246, 245}});
}

TEST(ZeroBubbleV, MatchesThePaperCodeWithMeasuredCosts) {
  // The paper's 16-stage costs in ns (v_schedule.py's settings), on 4 stages.
  const std::vector<std::string> stages{
      "F0 >F0 F1 >F1 F2 >F2 F3 >F3 F4 >F4 F5 >F5 F6 >F6 <f0 f0 <f1 b0 >b0 w0 f1 b1 >b1 <f2 w1 f2 "
      "b2 >b2 <f3 w2 f3 b3 "
      ">b3 w3 <B0 F7 >F7 B0 <f4 W0 f4 b4 >b4 w4 <B1 F8 >F8 B1 <f5 W1 f5 b5 >b5 w5 <B2 F9 >F9 B2 "
      "<f6 W2 f6 b6 >b6 w6 "
      "<B3 F10 >F10 B3 <f7 W3 f7 b7 >b7 w7 <B4 F11 >F11 B4 <f8 W4 f8 b8 >b8 w8 <B5 B5 <f9 W5 f9 b9 "
      ">b9 w9 <B6 B6 <f10 "
      "W6 f10 b10 >b10 w10 <B7 B7 <f11 W7 f11 <B8 b11 >b11 B8 w11 <B9 W8 B9 W9 <B10 B10 W10 <B11 "
      "B11 W11",
      "<F0 <F1 F0 >F0 <F2 F1 >F1 <F3 F2 >F2 F3 <F4 >F3 <F5 F4 >F4 <f0 <F6 f0 >f0 <f1 F5 >F5 f1 >f1 "
      "<b0 <f2 b0 >b0 w0 "
      "<b1 f2 >f2 b1 >b1 <f3 w1 <b2 f3 >f3 b2 >b2 w2 <B0 <b3 F6 >F6 B0 >B0 <f4 <F7 W0 f4 >f4 b3 "
      ">b3 w3 <B1 <b4 F7 >F7 "
      "B1 >B1 <f5 <F8 W1 f5 >f5 b4 >b4 w4 <B2 <b5 F8 >F8 B2 >B2 <f6 <F9 W2 f6 >f6 b5 >b5 w5 <B3 "
      "<b6 F9 >F9 B3 >B3 <f7 "
      "<F10 W3 f7 >f7 b6 >b6 w6 <B4 <b7 F10 >F10 B4 >B4 <f8 <F11 W4 f8 >f8 b7 >b7 w7 <B5 <b8 F11 "
      ">F11 B5 >B5 <f9 W5 "
      "f9 >f9 b8 >b8 w8 <B6 <b9 B6 >B6 <f10 W6 f10 >f10 b9 >b9 w9 <B7 <b10 B7 >B7 <f11 W7 f11 >f11 "
      "<B8 b10 >b10 B8 "
      ">B8 <b11 <B9 b11 >b11 B9 >B9 w10 <B10 W8 B10 >B10 w11 <B11 B11 >B11 W9 W10 W11",
      "<F0 <F1 F0 >F0 F1 <F2 >F1 <F3 F2 >F2 <f0 <F4 f0 >f0 <f1 F3 >F3 f1 >f1 <F5 <f2 F4 >F4 f2 >f2 "
      "<b0 <f3 b0 >b0 w0 "
      "<b1 f3 >f3 b1 >b1 w1 <B0 <b2 F5 >F5 B0 >B0 <f4 <F6 W0 f4 >f4 b2 >b2 w2 <B1 <b3 F6 >F6 B1 "
      ">B1 <f5 <F7 W1 f5 >f5 "
      "b3 >b3 w3 <B2 <b4 F7 >F7 B2 >B2 <f6 <F8 W2 f6 >f6 b4 >b4 w4 <B3 <b5 F8 >F8 B3 >B3 <f7 <F9 "
      "W3 f7 >f7 b5 >b5 w5 "
      "<B4 <b6 F9 >F9 B4 >B4 <f8 <F10 W4 f8 >f8 b6 >b6 w6 <B5 <b7 F10 >F10 B5 >B5 <f9 <F11 W5 f9 "
      ">f9 b7 >b7 w7 <B6 "
      "<b8 F11 >F11 B6 >B6 <f10 W6 f10 >f10 b8 >b8 w8 <B7 <b9 B7 >B7 <f11 W7 f11 >f11 <B8 b9 >b9 "
      "B8 >B8 <b10 <B9 b10 "
      ">b10 B9 >B9 <b11 <B10 b11 >b11 B10 >B10 w9 <B11 B11 >B11 W8 w10 W9 w11 W10 W11",
      "<F0 <F1 F0 <F2 f0 >f0 F1 f1 >f1 <F3 F2 f2 >f2 <F4 F3 f3 >f3 <b0 b0 w0 <b1 F4 B0 >B0 <F5 W0 "
      "f4 >f4 b1 w1 <b2 F5 "
      "B1 >B1 <F6 W1 f5 >f5 b2 w2 <b3 F6 B2 >B2 <F7 W2 f6 >f6 b3 w3 <b4 F7 B3 >B3 <F8 W3 f7 >f7 b4 "
      "w4 <b5 F8 B4 >B4 "
      "<F9 W4 f8 >f8 b5 w5 <b6 F9 B5 >B5 <F10 W5 f9 >f9 b6 w6 <b7 F10 B6 >B6 <F11 W6 f10 >f10 b7 "
      "w7 <b8 F11 B7 >B7 W7 "
      "f11 >f11 b8 B8 >B8 <b9 b9 B9 >B9 <b10 b10 B10 >B10 <b11 b11 B11 >B11 w8 W8 w9 W9 w10 W10 "
      "w11 W11",
  };
  expect_schedule(
      4, 12, {14407, 14380, 9676, 1610}, {kF, kW, 0},
      {stages, {34627266, 35707243, 36838809, 37871472}, {970721, 974083, 987121, 990483}});
}

TEST(ZeroBubbleV, MatchesThePaperCodeWithALargerMemoryLimit) {
  // 2 pp + 2 forwards: the W's that the default limit forces early are placed elsewhere.
  const std::vector<std::string> stages{
      "F0 >F0 F1 >F1 F2 >F2 F3 >F3 F4 >F4 F5 >F5 F6 >F6 <f0 f0 <f1 b0 >b0 w0 f1 <f2 b1 >b1 f2 b2 "
      ">b2 <f3 w1 f3 b3 >b3 "
      "F7 >F7 <B0 w2 <f4 B0 f4 b4 >b4 <B1 F8 >F8 <f5 B1 f5 b5 >b5 w3 <B2 F9 >F9 B2 <f6 W0 f6 b6 "
      ">b6 w4 <B3 F10 >F10 "
      "B3 <f7 W1 f7 b7 >b7 w5 <B4 F11 >F11 B4 <f8 W2 f8 b8 >b8 w6 <B5 W3 B5 <f9 w7 f9 b9 >b9 W4 "
      "<B6 w8 B6 <f10 W5 f10 "
      "b10 >b10 w9 <B7 W6 B7 <f11 w10 f11 <B8 b11 >b11 B8 W7 w11 <B9 W8 B9 W9 <B10 B10 <B11 W10 "
      "B11 W11",
      "<F0 <F1 F0 >F0 <F2 F1 >F1 <F3 F2 >F2 F3 <F4 >F3 <F5 F4 >F4 <f0 <F6 f0 >f0 <f1 F5 >F5 f1 >f1 "
      "<b0 <f2 b0 >b0 f2 "
      ">f2 <b1 w0 <f3 b1 >b1 <b2 f3 >f3 b2 >b2 F6 >F6 <B0 <b3 w1 <f4 <F7 B0 >B0 f4 >f4 b3 >b3 <B1 "
      "F7 >F7 <f5 <b4 B1 "
      ">B1 <F8 f5 >f5 b4 >b4 w2 <B2 <b5 F8 >F8 B2 >B2 <f6 <F9 W0 f6 >f6 b5 >b5 w3 <B3 <b6 F9 >F9 "
      "B3 >B3 <f7 <F10 W1 "
      "f7 >f7 b6 >b6 w4 <B4 <b7 F10 >F10 B4 >B4 <f8 <F11 W2 f8 >f8 b7 >b7 w5 <B5 <b8 F11 >F11 B5 "
      ">B5 <f9 W3 f9 >f9 b8 "
      ">b8 w6 <B6 <b9 W4 B6 >B6 <f10 w7 f10 >f10 b9 >b9 W5 <B7 <b10 w8 B7 >B7 <f11 W6 f11 >f11 <B8 "
      "b10 >b10 B8 >B8 "
      "<b11 w9 <B9 b11 >b11 B9 >B9 W7 w10 <B10 W8 B10 >B10 <B11 w11 B11 >B11 W9 W10 W11",
      "<F0 <F1 F0 >F0 F1 <F2 >F1 <F3 F2 >F2 <f0 <F4 f0 >f0 <f1 F3 >F3 f1 >f1 <F5 <f2 F4 >F4 f2 >f2 "
      "<b0 <f3 b0 >b0 f3 "
      ">f3 <b1 w0 b1 >b1 <B0 <b2 F5 >F5 <f4 <F6 B0 >B0 f4 >f4 b2 >b2 <B1 F6 >F6 <f5 <b3 B1 >B1 <F7 "
      "f5 >f5 b3 >b3 w1 "
      "<B2 <b4 F7 >F7 B2 >B2 <f6 <F8 W0 f6 >f6 b4 >b4 w2 <B3 <b5 F8 >F8 B3 >B3 <f7 <F9 W1 f7 >f7 "
      "b5 >b5 w3 <B4 <b6 F9 "
      ">F9 B4 >B4 <f8 <F10 W2 f8 >f8 b6 >b6 w4 <B5 <b7 F10 >F10 B5 >B5 <f9 <F11 W3 f9 >f9 b7 >b7 "
      "w5 <B6 <b8 F11 >F11 "
      "B6 >B6 <f10 W4 f10 >f10 b8 >b8 w6 <B7 <b9 W5 B7 >B7 <f11 w7 f11 >f11 <B8 b9 >b9 B8 >B8 <b10 "
      "W6 <B9 b10 >b10 B9 "
      ">B9 <b11 w8 <B10 b11 >b11 B10 >B10 W7 <B11 B11 >B11 w9 W8 w10 W9 w11 W10 W11",
      "<F0 <F1 F0 <F2 f0 >f0 F1 f1 >f1 <F3 F2 f2 >f2 <F4 F3 f3 >f3 <b0 b0 F4 <b1 B0 >B0 <F5 f4 >f4 "
      "b1 F5 <b2 B1 >B1 "
      "<F6 f5 >f5 b2 w0 <b3 F6 B2 >B2 <F7 W0 f6 >f6 b3 w1 <b4 F7 B3 >B3 <F8 W1 f7 >f7 b4 w2 <b5 F8 "
      "B4 >B4 <F9 W2 f8 "
      ">f8 b5 w3 <b6 F9 B5 >B5 <F10 W3 f9 >f9 b6 w4 <b7 F10 B6 >B6 <F11 W4 f10 >f10 b7 w5 <b8 F11 "
      "B7 >B7 W5 f11 >f11 "
      "b8 B8 >B8 <b9 w6 b9 B9 >B9 <b10 W6 b10 B10 >B10 <b11 b11 B11 >B11 w7 W7 w8 W8 w9 W9 w10 W10 "
      "w11 W11",
  };
  expect_schedule(
      4, 12, {14407, 14380, 9676, 1610}, {kF, kW, 10 * kF},
      {stages, {34641037, 35881440, 37206124, 38446146}, {946600, 949962, 972676, 985714}});
}

TEST(ZeroBubbleV, MatchesThePaperCodeOnEightStages) {
  const std::vector<std::string> stages{
      "F0 >F0 F1 >F1 F2 >F2 F3 >F3 F4 >F4 F5 >F5 F6 >F6 F7 >F7 F8 >F8 F9 >F9 F10 >F10 F11 >F11 F12 "
      ">F12 F13 >F13 F14 "
      ">F14 <f0 f0 <f1 b0 >b0 w0 f1 b1 >b1 <f2 w1 f2 b2 >b2 <f3 w2 f3 b3 >b3 <f4 w3 f4 b4 >b4 <f5 "
      "w4 f5 b5 >b5 <f6 w5 "
      "f6 b6 >b6 <f7 w6 f7 b7 >b7 w7 <B0 F15 >F15 B0 <f8 W0 f8 b8 >b8 w8 <B1 F16 >F16 B1 <f9 W1 f9 "
      "b9 >b9 w9 <B2 F17 "
      ">F17 B2 <f10 W2 f10 b10 >b10 w10 <B3 F18 >F18 B3 <f11 W3 f11 b11 >b11 w11 <B4 F19 >F19 B4 "
      "<f12 W4 f12 b12 >b12 "
      "w12 <B5 F20 >F20 B5 <f13 W5 f13 b13 >b13 w13 <B6 F21 >F21 B6 <f14 W6 f14 b14 >b14 w14 <B7 "
      "F22 >F22 B7 <f15 W7 "
      "f15 b15 >b15 w15 <B8 F23 >F23 B8 <f16 W8 f16 b16 >b16 w16 <B9 B9 <f17 W9 f17 b17 >b17 w17 "
      "<B10 B10 W10 <f18 "
      "f18 b18 >b18 w18 <B11 B11 W11 <f19 f19 b19 >b19 w19 <B12 B12 W12 <f20 f20 b20 >b20 w20 <B13 "
      "B13 W13 <f21 f21 "
      "b21 >b21 w21 <B14 B14 W14 <f22 f22 b22 >b22 w22 <B15 B15 W15 <f23 f23 <B16 b23 >b23 B16 w23 "
      "W16 <B17 B17 W17 "
      "<B18 B18 W18 <B19 B19 W19 <B20 B20 W20 <B21 B21 W21 <B22 B22 W22 <B23 B23 W23",
      "<F0 <F1 F0 >F0 <F2 F1 >F1 <F3 F2 >F2 <F4 F3 >F3 <F5 F4 >F4 <F6 F5 >F5 <F7 F6 >F6 <F8 F7 >F7 "
      "<F9 F8 >F8 <F10 F9 "
      ">F9 <F11 F10 >F10 F11 <F12 >F11 <F13 F12 >F12 <f0 <F14 f0 >f0 <f1 F13 >F13 f1 >f1 <b0 <f2 "
      "b0 >b0 w0 <b1 f2 >f2 "
      "b1 >b1 <f3 w1 <b2 f3 >f3 b2 >b2 <f4 w2 <b3 f4 >f4 b3 >b3 <f5 w3 <b4 f5 >f5 b4 >b4 <f6 w4 "
      "<b5 f6 >f6 b5 >b5 <f7 "
      "w5 <b6 f7 >f7 b6 >b6 w6 <B0 <b7 F14 >F14 B0 >B0 <f8 <F15 W0 f8 >f8 b7 >b7 w7 <B1 <b8 F15 "
      ">F15 B1 >B1 <f9 <F16 "
      "W1 f9 >f9 b8 >b8 w8 <B2 <b9 F16 >F16 B2 >B2 <f10 <F17 W2 f10 >f10 b9 >b9 w9 <B3 <b10 F17 "
      ">F17 B3 >B3 <f11 <F18 "
      "W3 f11 >f11 b10 >b10 w10 <B4 <b11 F18 >F18 B4 >B4 <f12 <F19 W4 f12 >f12 b11 >b11 w11 <B5 "
      "<b12 F19 >F19 B5 >B5 "
      "<f13 <F20 W5 f13 >f13 b12 >b12 w12 <B6 <b13 F20 >F20 B6 >B6 <f14 <F21 W6 f14 >f14 b13 >b13 "
      "w13 <B7 <b14 F21 "
      ">F21 B7 >B7 <f15 <F22 W7 f15 >f15 b14 >b14 w14 <B8 <b15 F22 >F22 B8 >B8 <f16 <F23 W8 f16 "
      ">f16 b15 >b15 w15 <B9 "
      "<b16 F23 >F23 B9 >B9 <f17 W9 f17 >f17 b16 >b16 w16 <B10 <b17 B10 >B10 <f18 W10 f18 >f18 b17 "
      ">b17 w17 <B11 <b18 "
      "B11 >B11 W11 <f19 f19 >f19 b18 >b18 w18 <B12 <b19 B12 >B12 W12 <f20 f20 >f20 b19 >b19 w19 "
      "<B13 <b20 B13 >B13 "
      "W13 <f21 f21 >f21 b20 >b20 w20 <B14 <b21 B14 >B14 W14 <f22 f22 >f22 b21 >b21 w21 <B15 <b22 "
      "B15 >B15 W15 <f23 "
      "f23 >f23 <B16 b22 >b22 B16 >B16 <b23 <B17 b23 >b23 B17 >B17 w22 W16 <B18 B18 >B18 w23 W17 "
      "<B19 B19 >B19 W18 "
      "W19 <B20 B20 >B20 W20 <B21 B21 >B21 W21 <B22 B22 >B22 W22 <B23 B23 >B23 W23",
      "<F0 <F1 F0 >F0 <F2 F1 >F1 <F3 F2 >F2 <F4 F3 >F3 <F5 F4 >F4 <F6 F5 >F5 <F7 F6 >F6 <F8 F7 >F7 "
      "<F9 F8 >F8 F9 <F10 "
      ">F9 <F11 F10 >F10 <f0 <F12 f0 >f0 <f1 F11 >F11 f1 >f1 <F13 <f2 F12 >F12 f2 >f2 <b0 <f3 b0 "
      ">b0 w0 <b1 f3 >f3 b1 "
      ">b1 <f4 w1 <b2 f4 >f4 b2 >b2 <f5 w2 <b3 f5 >f5 b3 >b3 <f6 w3 <b4 f6 >f6 b4 >b4 <f7 w4 <b5 "
      "f7 >f7 b5 >b5 w5 <B0 "
      "<b6 F13 >F13 B0 >B0 <f8 <F14 W0 f8 >f8 b6 >b6 w6 <B1 <b7 F14 >F14 B1 >B1 <f9 <F15 W1 f9 >f9 "
      "b7 >b7 w7 <B2 <b8 "
      "F15 >F15 B2 >B2 <f10 <F16 W2 f10 >f10 b8 >b8 w8 <B3 <b9 F16 >F16 B3 >B3 <f11 <F17 W3 f11 "
      ">f11 b9 >b9 w9 <B4 "
      "<b10 F17 >F17 B4 >B4 <f12 <F18 W4 f12 >f12 b10 >b10 w10 <B5 <b11 F18 >F18 B5 >B5 <f13 <F19 "
      "W5 f13 >f13 b11 "
      ">b11 w11 <B6 <b12 F19 >F19 B6 >B6 <f14 <F20 W6 f14 >f14 b12 >b12 w12 <B7 <b13 F20 >F20 B7 "
      ">B7 <f15 <F21 W7 f15 "
      ">f15 b13 >b13 w13 <B8 <b14 F21 >F21 B8 >B8 <f16 <F22 W8 f16 >f16 b14 >b14 w14 <B9 <b15 F22 "
      ">F22 B9 >B9 <f17 "
      "<F23 W9 f17 >f17 b15 >b15 w15 <B10 <b16 F23 >F23 B10 >B10 <f18 W10 f18 >f18 b16 >b16 w16 "
      "<B11 <b17 B11 >B11 "
      "<f19 W11 f19 >f19 b17 >b17 w17 <B12 <b18 B12 >B12 W12 <f20 f20 >f20 b18 >b18 w18 <B13 <b19 "
      "B13 >B13 W13 <f21 "
      "f21 >f21 b19 >b19 w19 <B14 <b20 B14 >B14 W14 <f22 f22 >f22 b20 >b20 w20 <B15 <b21 B15 >B15 "
      "W15 <f23 f23 >f23 "
      "<B16 b21 >b21 B16 >B16 <b22 <B17 b22 >b22 B17 >B17 <b23 <B18 b23 >b23 B18 >B18 w21 W16 <B19 "
      "B19 >B19 w22 W17 "
      "<B20 B20 >B20 w23 W18 <B21 B21 >B21 W19 W20 <B22 B22 >B22 W21 W22 <B23 B23 >B23 W23",
      "<F0 <F1 F0 >F0 <F2 F1 >F1 <F3 F2 >F2 <F4 F3 >F3 <F5 F4 >F4 <F6 F5 >F5 <F7 F6 >F6 F7 <F8 >F7 "
      "<F9 F8 >F8 <f0 "
      "<F10 f0 >f0 <f1 F9 >F9 f1 >f1 <F11 <f2 F10 >F10 f2 >f2 <F12 <f3 F11 >F11 f3 >f3 <b0 <f4 b0 "
      ">b0 w0 <b1 f4 >f4 "
      "b1 >b1 <f5 w1 <b2 f5 >f5 b2 >b2 <f6 w2 <b3 f6 >f6 b3 >b3 <f7 w3 <b4 f7 >f7 b4 >b4 w4 <B0 "
      "<b5 F12 >F12 B0 >B0 "
      "<f8 <F13 W0 f8 >f8 b5 >b5 w5 <B1 <b6 F13 >F13 B1 >B1 <f9 <F14 W1 f9 >f9 b6 >b6 w6 <B2 <b7 "
      "F14 >F14 B2 >B2 <f10 "
      "<F15 W2 f10 >f10 b7 >b7 w7 <B3 <b8 F15 >F15 B3 >B3 <f11 <F16 W3 f11 >f11 b8 >b8 w8 <B4 <b9 "
      "F16 >F16 B4 >B4 "
      "<f12 <F17 W4 f12 >f12 b9 >b9 w9 <B5 <b10 F17 >F17 B5 >B5 <f13 <F18 W5 f13 >f13 b10 >b10 w10 "
      "<B6 <b11 F18 >F18 "
      "B6 >B6 <f14 <F19 W6 f14 >f14 b11 >b11 w11 <B7 <b12 F19 >F19 B7 >B7 <f15 <F20 W7 f15 >f15 "
      "b12 >b12 w12 <B8 <b13 "
      "F20 >F20 B8 >B8 <f16 <F21 W8 f16 >f16 b13 >b13 w13 <B9 <b14 F21 >F21 B9 >B9 <f17 <F22 W9 "
      "f17 >f17 b14 >b14 w14 "
      "<B10 <b15 F22 >F22 B10 >B10 <f18 <F23 W10 f18 >f18 b15 >b15 w15 <B11 <b16 F23 >F23 B11 >B11 "
      "<f19 W11 f19 >f19 "
      "b16 >b16 w16 <B12 <b17 B12 >B12 <f20 W12 f20 >f20 b17 >b17 w17 <B13 <b18 B13 >B13 W13 <f21 "
      "f21 >f21 b18 >b18 "
      "w18 <B14 <b19 B14 >B14 W14 <f22 f22 >f22 b19 >b19 w19 <B15 <b20 B15 >B15 W15 <f23 f23 >f23 "
      "<B16 b20 >b20 B16 "
      ">B16 <b21 <B17 b21 >b21 B17 >B17 <b22 <B18 b22 >b22 B18 >B18 <b23 <B19 b23 >b23 B19 >B19 "
      "w20 W16 <B20 B20 >B20 "
      "w21 W17 <B21 B21 >B21 w22 W18 <B22 B22 >B22 w23 W19 <B23 B23 >B23 W20 W21 W22 W23",
      "<F0 <F1 F0 >F0 <F2 F1 >F1 <F3 F2 >F2 <F4 F3 >F3 <F5 F4 >F4 F5 <F6 >F5 <F7 F6 >F6 <f0 <F8 f0 "
      ">f0 <f1 F7 >F7 f1 "
      ">f1 <F9 <f2 F8 >F8 f2 >f2 <F10 <f3 F9 >F9 f3 >f3 <F11 <f4 F10 >F10 f4 >f4 <b0 <f5 b0 >b0 w0 "
      "<b1 f5 >f5 b1 >b1 "
      "<f6 w1 <b2 f6 >f6 b2 >b2 <f7 w2 <b3 f7 >f7 b3 >b3 w3 <B0 <b4 F11 >F11 B0 >B0 <f8 <F12 W0 f8 "
      ">f8 b4 >b4 w4 <B1 "
      "<b5 F12 >F12 B1 >B1 <f9 <F13 W1 f9 >f9 b5 >b5 w5 <B2 <b6 F13 >F13 B2 >B2 <f10 <F14 W2 f10 "
      ">f10 b6 >b6 w6 <B3 "
      "<b7 F14 >F14 B3 >B3 <f11 <F15 W3 f11 >f11 b7 >b7 w7 <B4 <b8 F15 >F15 B4 >B4 <f12 <F16 W4 "
      "f12 >f12 b8 >b8 w8 "
      "<B5 <b9 F16 >F16 B5 >B5 <f13 <F17 W5 f13 >f13 b9 >b9 w9 <B6 <b10 F17 >F17 B6 >B6 <f14 <F18 "
      "W6 f14 >f14 b10 "
      ">b10 w10 <B7 <b11 F18 >F18 B7 >B7 <f15 <F19 W7 f15 >f15 b11 >b11 w11 <B8 <b12 F19 >F19 B8 "
      ">B8 <f16 <F20 W8 f16 "
      ">f16 b12 >b12 w12 <B9 <b13 F20 >F20 B9 >B9 <f17 <F21 W9 f17 >f17 b13 >b13 w13 <B10 <b14 F21 "
      ">F21 B10 >B10 <f18 "
      "<F22 W10 f18 >f18 b14 >b14 w14 <B11 <b15 F22 >F22 B11 >B11 <f19 <F23 W11 f19 >f19 b15 >b15 "
      "w15 <B12 <b16 F23 "
      ">F23 B12 >B12 <f20 W12 f20 >f20 b16 >b16 w16 <B13 <b17 B13 >B13 <f21 W13 f21 >f21 b17 >b17 "
      "w17 <B14 <b18 B14 "
      ">B14 W14 <f22 f22 >f22 b18 >b18 w18 <B15 <b19 B15 >B15 W15 <f23 f23 >f23 <B16 b19 >b19 B16 "
      ">B16 <b20 <B17 b20 "
      ">b20 B17 >B17 <b21 <B18 b21 >b21 B18 >B18 <b22 <B19 b22 >b22 B19 >B19 <b23 <B20 b23 >b23 "
      "B20 >B20 w19 W16 <B21 "
      "B21 >B21 w20 W17 <B22 B22 >B22 w21 W18 <B23 B23 >B23 w22 W19 w23 W20 W21 W22 W23",
      "<F0 <F1 F0 >F0 <F2 F1 >F1 <F3 F2 >F2 F3 <F4 >F3 <F5 F4 >F4 <f0 <F6 f0 >f0 <f1 F5 >F5 f1 >f1 "
      "<F7 <f2 F6 >F6 f2 "
      ">f2 <F8 <f3 F7 >F7 f3 >f3 <F9 <f4 F8 >F8 f4 >f4 <F10 <f5 F9 >F9 f5 >f5 <b0 <f6 b0 >b0 w0 "
      "<b1 f6 >f6 b1 >b1 <f7 "
      "w1 <b2 f7 >f7 b2 >b2 w2 <B0 <b3 F10 >F10 B0 >B0 <f8 <F11 W0 f8 >f8 b3 >b3 w3 <B1 <b4 F11 "
      ">F11 B1 >B1 <f9 <F12 "
      "W1 f9 >f9 b4 >b4 w4 <B2 <b5 F12 >F12 B2 >B2 <f10 <F13 W2 f10 >f10 b5 >b5 w5 <B3 <b6 F13 "
      ">F13 B3 >B3 <f11 <F14 "
      "W3 f11 >f11 b6 >b6 w6 <B4 <b7 F14 >F14 B4 >B4 <f12 <F15 W4 f12 >f12 b7 >b7 w7 <B5 <b8 F15 "
      ">F15 B5 >B5 <f13 "
      "<F16 W5 f13 >f13 b8 >b8 w8 <B6 <b9 F16 >F16 B6 >B6 <f14 <F17 W6 f14 >f14 b9 >b9 w9 <B7 <b10 "
      "F17 >F17 B7 >B7 "
      "<f15 <F18 W7 f15 >f15 b10 >b10 w10 <B8 <b11 F18 >F18 B8 >B8 <f16 <F19 W8 f16 >f16 b11 >b11 "
      "w11 <B9 <b12 F19 "
      ">F19 B9 >B9 <f17 <F20 W9 f17 >f17 b12 >b12 w12 <B10 <b13 F20 >F20 B10 >B10 <f18 <F21 W10 "
      "f18 >f18 b13 >b13 w13 "
      "<B11 <b14 F21 >F21 B11 >B11 <f19 <F22 W11 f19 >f19 b14 >b14 w14 <B12 <b15 F22 >F22 B12 >B12 "
      "<f20 <F23 W12 f20 "
      ">f20 b15 >b15 w15 <B13 <b16 F23 >F23 B13 >B13 <f21 W13 f21 >f21 b16 >b16 w16 <B14 <b17 B14 "
      ">B14 <f22 W14 f22 "
      ">f22 b17 >b17 w17 <B15 <b18 B15 >B15 W15 <f23 f23 >f23 <B16 b18 >b18 B16 >B16 <b19 <B17 b19 "
      ">b19 B17 >B17 <b20 "
      "<B18 b20 >b20 B18 >B18 <b21 <B19 b21 >b21 B19 >B19 <b22 <B20 b22 >b22 B20 >B20 <b23 <B21 "
      "b23 >b23 B21 >B21 w18 "
      "W16 <B22 B22 >B22 w19 W17 <B23 B23 >B23 w20 W18 w21 W19 w22 W20 w23 W21 W22 W23",
      "<F0 <F1 F0 >F0 F1 <F2 >F1 <F3 F2 >F2 <f0 <F4 f0 >f0 <f1 F3 >F3 f1 >f1 <F5 <f2 F4 >F4 f2 >f2 "
      "<F6 <f3 F5 >F5 f3 "
      ">f3 <F7 <f4 F6 >F6 f4 >f4 <F8 <f5 F7 >F7 f5 >f5 <F9 <f6 F8 >F8 f6 >f6 <b0 <f7 b0 >b0 w0 <b1 "
      "f7 >f7 b1 >b1 w1 "
      "<B0 <b2 F9 >F9 B0 >B0 <f8 <F10 W0 f8 >f8 b2 >b2 w2 <B1 <b3 F10 >F10 B1 >B1 <f9 <F11 W1 f9 "
      ">f9 b3 >b3 w3 <B2 "
      "<b4 F11 >F11 B2 >B2 <f10 <F12 W2 f10 >f10 b4 >b4 w4 <B3 <b5 F12 >F12 B3 >B3 <f11 <F13 W3 "
      "f11 >f11 b5 >b5 w5 "
      "<B4 <b6 F13 >F13 B4 >B4 <f12 <F14 W4 f12 >f12 b6 >b6 w6 <B5 <b7 F14 >F14 B5 >B5 <f13 <F15 "
      "W5 f13 >f13 b7 >b7 "
      "w7 <B6 <b8 F15 >F15 B6 >B6 <f14 <F16 W6 f14 >f14 b8 >b8 w8 <B7 <b9 F16 >F16 B7 >B7 <f15 "
      "<F17 W7 f15 >f15 b9 "
      ">b9 w9 <B8 <b10 F17 >F17 B8 >B8 <f16 <F18 W8 f16 >f16 b10 >b10 w10 <B9 <b11 F18 >F18 B9 >B9 "
      "<f17 <F19 W9 f17 "
      ">f17 b11 >b11 w11 <B10 <b12 F19 >F19 B10 >B10 <f18 <F20 W10 f18 >f18 b12 >b12 w12 <B11 <b13 "
      "F20 >F20 B11 >B11 "
      "<f19 <F21 W11 f19 >f19 b13 >b13 w13 <B12 <b14 F21 >F21 B12 >B12 <f20 <F22 W12 f20 >f20 b14 "
      ">b14 w14 <B13 <b15 "
      "F22 >F22 B13 >B13 <f21 <F23 W13 f21 >f21 b15 >b15 w15 <B14 <b16 F23 >F23 B14 >B14 <f22 W14 "
      "f22 >f22 b16 >b16 "
      "w16 <B15 <b17 B15 >B15 <f23 W15 f23 >f23 <B16 b17 >b17 B16 >B16 <b18 <B17 b18 >b18 B17 >B17 "
      "<b19 <B18 b19 >b19 "
      "B18 >B18 <b20 <B19 b20 >b20 B19 >B19 <b21 <B20 b21 >b21 B20 >B20 <b22 <B21 b22 >b22 B21 "
      ">B21 <b23 <B22 b23 "
      ">b23 B22 >B22 w17 W16 <B23 B23 >B23 w18 W17 w19 W18 w20 W19 w21 W20 w22 W21 w23 W22 W23",
      "<F0 <F1 F0 <F2 f0 >f0 F1 f1 >f1 <F3 F2 f2 >f2 <F4 F3 f3 >f3 <F5 F4 f4 >f4 <F6 F5 f5 >f5 <F7 "
      "F6 f6 >f6 <F8 F7 "
      "f7 >f7 <b0 b0 w0 <b1 F8 B0 >B0 <F9 W0 f8 >f8 b1 w1 <b2 F9 B1 >B1 <F10 W1 f9 >f9 b2 w2 <b3 "
      "F10 B2 >B2 <F11 W2 "
      "f10 >f10 b3 w3 <b4 F11 B3 >B3 <F12 W3 f11 >f11 b4 w4 <b5 F12 B4 >B4 <F13 W4 f12 >f12 b5 w5 "
      "<b6 F13 B5 >B5 <F14 "
      "W5 f13 >f13 b6 w6 <b7 F14 B6 >B6 <F15 W6 f14 >f14 b7 w7 <b8 F15 B7 >B7 <F16 W7 f15 >f15 b8 "
      "w8 <b9 F16 B8 >B8 "
      "<F17 W8 f16 >f16 b9 w9 <b10 F17 B9 >B9 <F18 W9 f17 >f17 b10 w10 <b11 F18 B10 >B10 <F19 W10 "
      "f18 >f18 b11 w11 "
      "<b12 F19 B11 >B11 <F20 W11 f19 >f19 b12 w12 <b13 F20 B12 >B12 <F21 W12 f20 >f20 b13 w13 "
      "<b14 F21 B13 >B13 <F22 "
      "W13 f21 >f21 b14 w14 <b15 F22 B14 >B14 <F23 W14 f22 >f22 b15 w15 <b16 F23 B15 >B15 W15 f23 "
      ">f23 b16 B16 >B16 "
      "<b17 b17 B17 >B17 <b18 b18 B18 >B18 <b19 b19 B19 >B19 <b20 b20 B20 >B20 <b21 b21 B21 >B21 "
      "<b22 b22 B22 >B22 "
      "<b23 b23 B23 >B23 w16 W16 w17 W17 w18 W18 w19 W19 w20 W20 w21 W21 w22 W22 w23 W23",
  };
  expect_schedule(
      8, 24, {18522, 18086, 9337, 601}, {kF, kW, 0},
      {stages,
       {167741133, 169933229, 172365429, 174953622, 177529586, 180093321, 182644827, 185184104},
       {2346803, 2328116, 2309429, 2318753, 2328077, 2337401, 2346725, 2356049}});
}

TEST(ZeroBubbleV, MatchesThePaperCodeWhereARetryWithTheBubblesAllowedImproves) {
  // try_v_schedule's second attempt, allowing each stage the slack it had in the first, lowers
  // the largest bubble here, so that attempt is the one kept; the first-leg B's fill rule
  // (a W may precede it whatever fill_b says) also decides this order.
  const std::vector<std::string> stages{
      "F0 >F0 F1 >F1 F2 >F2 F3 >F3 F4 >F4 F5 >F5 F6 >F6 F7 >F7 F8 >F8 F9 >F9 F10 >F10 <f0 f0 <f1 "
      "b0 >b0 f1 b1 >b1 <f2 "
      "w0 f2 b2 >b2 <f3 w1 f3 b3 >b3 <f4 w2 f4 b4 >b4 <f5 w3 f5 b5 >b5 w4 <B0 w5 <f6 B0 f6 b6 >b6 "
      "<B1 W0 w6 <f7 B1 f7 "
      "b7 >b7 <B2 W1 w7 <f8 B2 f8 b8 >b8 <B3 W2 w8 <f9 B3 f9 b9 >b9 <B4 W3 <f10 B4 f10 <B5 b10 "
      ">b10 B5 w9 <B6 W4 w10 "
      "B6 W5 W6 <B7 B7 W7 <B8 B8 W8 <B9 B9 <B10 W9 B10 W10",
      "<F0 <F1 F0 >F0 <F2 F1 >F1 <F3 F2 >F2 <F4 F3 >F3 <F5 F4 >F4 <F6 F5 >F5 <F7 F6 >F6 F7 <F8 >F7 "
      "<F9 F8 >F8 <F10 "
      "<f0 f0 >f0 <f1 F9 >F9 f1 >f1 <b0 <f2 b0 >b0 <b1 f2 >f2 b1 >b1 <f3 w0 <b2 f3 >f3 b2 >b2 <f4 "
      "w1 <b3 f4 >f4 b3 "
      ">b3 <f5 w2 <b4 f5 >f5 b4 >b4 F10 >F10 <b5 <B0 w3 <f6 B0 >B0 f6 >f6 b5 >b5 <B1 w4 <b6 <f7 B1 "
      ">B1 f7 >f7 b6 >b6 "
      "<B2 W0 w5 <b7 <f8 B2 >B2 f8 >f8 b7 >b7 <B3 W1 w6 <b8 <f9 B3 >B3 f9 >f9 b8 >b8 <B4 W2 w7 <b9 "
      "<f10 B4 >B4 f10 "
      ">f10 <B5 b9 >b9 B5 >B5 <b10 W3 <B6 b10 >b10 B6 >B6 w8 W4 <B7 w9 B7 >B7 W5 <B8 w10 B8 >B8 W6 "
      "<B9 W7 B9 >B9 <B10 "
      "W8 B10 >B10 W9 W10",
      "<F0 <F1 F0 >F0 <F2 F1 >F1 <F3 F2 >F2 <F4 F3 >F3 <F5 F4 >F4 F5 <F6 >F5 <F7 F6 >F6 <F8 <f0 f0 "
      ">f0 <f1 F7 >F7 f1 "
      ">f1 <F9 <f2 F8 >F8 f2 >f2 <f3 <b0 b0 >b0 <b1 f3 >f3 b1 >b1 <f4 w0 <b2 f4 >f4 b2 >b2 <f5 w1 "
      "<b3 f5 >f5 b3 >b3 "
      "F9 >F9 <b4 <B0 w2 <F10 <f6 B0 >B0 f6 >f6 b4 >b4 <B1 F10 >F10 <b5 <f7 B1 >B1 f7 >f7 b5 >b5 "
      "<B2 w3 <b6 <f8 B2 "
      ">B2 f8 >f8 b6 >b6 <B3 W0 w4 <b7 <f9 B3 >B3 f9 >f9 b7 >b7 <B4 W1 w5 <b8 <f10 B4 >B4 f10 >f10 "
      "<B5 b8 >b8 B5 >B5 "
      "<b9 W2 <B6 b9 >b9 B6 >B6 <b10 w6 b10 >b10 <B7 W3 B7 >B7 w7 <B8 W4 B8 >B8 w8 <B9 W5 B9 >B9 "
      "<B10 w9 B10 >B10 W6 "
      "w10 W7 W8 W9 W10",
      "<F0 <F1 F0 >F0 <F2 F1 >F1 <F3 F2 >F2 F3 <F4 >F3 <F5 F4 >F4 <F6 <f0 f0 >f0 <f1 F5 >F5 f1 >f1 "
      "<F7 <f2 F6 >F6 f2 "
      ">f2 <F8 <f3 F7 >F7 f3 >f3 <f4 <b0 b0 >b0 <b1 f4 >f4 b1 >b1 <f5 w0 <b2 f5 >f5 b2 >b2 F8 >F8 "
      "<b3 <B0 w1 <F9 <f6 "
      "B0 >B0 f6 >f6 b3 >b3 <B1 F9 >F9 <b4 <f7 B1 >B1 <F10 f7 >f7 b4 >b4 <B2 F10 >F10 <b5 <f8 B2 "
      ">B2 f8 >f8 b5 >b5 "
      "<B3 w2 <b6 <f9 B3 >B3 f9 >f9 b6 >b6 <B4 W0 w3 <b7 <f10 B4 >B4 f10 >f10 <B5 b7 >b7 B5 >B5 "
      "<b8 W1 <B6 b8 >b8 B6 "
      ">B6 <b9 w4 W2 <B7 b9 >b9 <b10 B7 >B7 b10 >b10 <B8 w5 B8 >B8 W3 <B9 w6 B9 >B9 <B10 W4 B10 "
      ">B10 w7 W5 w8 W6 w9 "
      "W7 w10 W8 W9 W10",
      "<F0 <F1 F0 >F0 F1 <F2 >F1 <F3 F2 >F2 <f0 <F4 f0 >f0 <f1 F3 >F3 f1 >f1 <F5 <f2 F4 >F4 f2 >f2 "
      "<F6 <f3 F5 >F5 f3 "
      ">f3 <F7 <f4 F6 >F6 f4 >f4 <f5 <b0 b0 >b0 <b1 f5 >f5 b1 >b1 F7 >F7 <b2 <B0 w0 <F8 <f6 B0 >B0 "
      "f6 >f6 b2 >b2 <B1 "
      "F8 >F8 <b3 <f7 B1 >B1 <F9 f7 >f7 b3 >b3 <B2 F9 >F9 <b4 <f8 B2 >B2 <F10 f8 >f8 b4 >b4 <B3 "
      "F10 >F10 <b5 <f9 B3 "
      ">B3 f9 >f9 b5 >b5 <B4 w1 <b6 <f10 B4 >B4 f10 >f10 <B5 b6 >b6 B5 >B5 <b7 W0 <B6 b7 >b7 B6 "
      ">B6 <b8 w2 <B7 W1 b8 "
      ">b8 B7 >B7 <b9 w3 <B8 W2 b9 >b9 <b10 B8 >B8 b10 >b10 <B9 w4 B9 >B9 <B10 W3 B10 >B10 w5 W4 "
      "w6 W5 w7 W6 w8 W7 w9 "
      "W8 w10 W9 W10",
      "<F0 <F1 F0 <F2 f0 >f0 F1 f1 >f1 <F3 F2 f2 >f2 <F4 F3 f3 >f3 <F5 F4 f4 >f4 <F6 F5 f5 >f5 <b0 "
      "b0 <b1 F6 <F7 B0 "
      ">B0 f6 >f6 b1 F7 <b2 B1 >B1 <F8 f7 >f7 b2 F8 <b3 B2 >B2 <F9 f8 >f8 b3 F9 <b4 B3 >B3 <F10 f9 "
      ">f9 b4 F10 <b5 B4 "
      ">B4 f10 >f10 b5 B5 >B5 <b6 w0 b6 B6 >B6 <b7 W0 b7 B7 >B7 w1 <b8 W1 b8 B8 >B8 w2 <b9 W2 b9 "
      "<b10 B9 >B9 b10 B10 "
      ">B10 w3 W3 w4 W4 w5 W5 w6 W6 w7 W7 w8 W8 w9 W9 w10 W10",
  };
  expect_schedule(6, 11, {3, 3, 2, 1}, {1, 0, 0},
                  {stages, {6583, 6866, 7211, 7542, 7816, 8054}, {197, 195, 199, 203, 205, 207}});
}

/// Whether a pass's tensors travel towards the last stage: chunk 0's forward (0 -> pp - 1, then
/// feeding chunk 1 locally at the last stage) and chunk 1's backward (from stage 0, where the loss
/// is, to pp - 1, then feeding chunk 0's locally); chunk 1's forward and chunk 0's backward travel
/// back.
bool flows_up(bool forward, long chunk) { return (chunk == 0) == forward; }

/// The properties every ZB-V schedule has: each pass once, dependencies in order and in time,
/// transfers paired, compute never overlapping on a stage, memory within the limit.
void expect_valid(long pp, long m, const ZeroBubbleVCosts& costs, const ZeroBubbleVMemory& memory) {
  const auto got = zero_bubble_v_schedule(pp, m, costs, memory);
  ASSERT_EQ(got.size(), static_cast<std::size_t>(pp));
  const long limit = memory.limit != 0 ? memory.limit : 2 * pp * memory.forward;
  const long b_memory = -memory.forward - memory.weight_gradient;
  // Per stage: (kind, chunk, micro-batch) -> (position in the stage's order, node).
  using Key = std::tuple<Kind, long, long>;
  std::vector<std::map<Key, std::pair<std::size_t, ZeroBubbleVNode>>> at(got.size());
  for (std::size_t s = 0; s < got.size(); ++s) {
    long used = 0, peak = 0, free_at = 0;
    for (std::size_t i = 0; i < got[s].size(); ++i) {
      const auto& n = got[s][i];
      ASSERT_TRUE(n.chunk == 0 || n.chunk == 1);
      ASSERT_TRUE(n.micro_batch >= 0 && n.micro_batch < m);
      EXPECT_TRUE(at[s].emplace(Key{n.kind, n.chunk, n.micro_batch}, std::pair{i, n}).second)
          << "stage " << s << " repeats " << text({n});
      if (!is_compute(n.kind)) {
        EXPECT_EQ(n.start, n.completion);
        continue;
      }
      const long cost = n.kind == Kind::forward          ? costs.forward
                        : n.kind == Kind::input_gradient ? costs.input_gradient
                                                         : costs.weight_gradient;
      EXPECT_EQ(n.completion, n.start + cost);
      EXPECT_GE(n.start, free_at) << "stage " << s << " overlaps at " << text({n});
      free_at = n.completion;
      used += n.kind == Kind::forward          ? memory.forward
              : n.kind == Kind::input_gradient ? b_memory
                                               : memory.weight_gradient;
      peak = std::max(peak, used);
    }
    EXPECT_LE(peak, limit) << "stage " << s;
    EXPECT_EQ(used, 0) << "stage " << s;
  }
  auto find = [&](long stage, Kind kind, long chunk, long micro) {
    const auto& map = at[static_cast<std::size_t>(stage)];
    const auto it = map.find(Key{kind, chunk, micro});
    return it == map.end() ? nullptr : &it->second;
  };
  for (long s = 0; s < pp; ++s) {
    std::size_t sends = 0, receives = 0;
    for (long c = 0; c < 2; ++c)
      for (long mb = 0; mb < m; ++mb) {
        const auto* f = find(s, Kind::forward, c, mb);
        const auto* b = find(s, Kind::input_gradient, c, mb);
        const auto* w = find(s, Kind::weight_gradient, c, mb);
        ASSERT_TRUE(f && b && w) << "stage " << s << " chunk " << c << " micro-batch " << mb;
        EXPECT_LT(f->first, b->first);
        EXPECT_LT(b->first, w->first);
        for (const bool forward : {true, false}) {
          const auto* pass = forward ? f : b;
          const long from = flows_up(forward, c) ? s - 1 : s + 1,
                     to = flows_up(forward, c) ? s + 1 : s - 1;
          if (to >= 0 && to < pp) ++sends;
          if (from >= 0 && from < pp) {
            receives += 1;
            const Kind send = forward ? Kind::send_forward : Kind::send_backward;
            const Kind receive = forward ? Kind::receive_forward : Kind::receive_backward;
            const auto* producer =
                find(from, forward ? Kind::forward : Kind::input_gradient, c, mb);
            const auto* sent = find(from, send, c, mb);
            const auto* received = find(s, receive, c, mb);
            ASSERT_TRUE(producer && sent && received)
                << "stage " << s << " " << text({pass->second});
            EXPECT_LT(producer->first, sent->first);
            EXPECT_LT(received->first, pass->first);
            EXPECT_EQ(sent->second.start, producer->second.completion);
            EXPECT_EQ(received->second.start, producer->second.completion);
            EXPECT_GE(pass->second.start, producer->second.completion + costs.communication);
            continue;
          }
          // At the V's turns the input is the local pass before: the last stage's chunk-1 forward
          // follows its chunk-0 forward, stage 0's chunk-1 backward its chunk-1 forward (the loss),
          // the last stage's chunk-0 backward its chunk-1 backward; stage 0's chunk-0 forward reads
          // the data.
          const auto* local = forward
                                  ? (c == 1 ? find(s, Kind::forward, 0, mb) : nullptr)
                                  : find(s, c == 1 ? Kind::forward : Kind::input_gradient, 1, mb);
          if (local) {
            EXPECT_LT(local->first, pass->first);
            EXPECT_GE(pass->second.start, local->second.completion);
          } else {
            EXPECT_TRUE(forward && c == 0 && s == 0);
          }
        }
      }
    // Nothing but the 6m passes, their sends and their inputs' receives: in particular nothing
    // sent past either end of the pipeline.
    EXPECT_EQ(got[static_cast<std::size_t>(s)].size(),
              static_cast<std::size_t>(6 * m) + sends + receives);
  }
}

TEST(ZeroBubbleV, SixteenStagesAreAValidSchedule) {
  expect_valid(16, 48, {14407, 14380, 9676, 1610}, {kF, kW, 0});
  expect_valid(16, 48, {1, 1, 1, 0}, {1, 0, 0});
  expect_valid(16, 48, {14407, 14380, 9676, 1610}, {kF, kW, 36 * kF});
}

TEST(ZeroBubbleV, ThirtyTwoStagesAreAValidSchedule) {
  expect_valid(32, 96, {9458, 9748, 7288, 879}, {kF, kW, 0});
  expect_valid(32, 96, {6, 4, 4, 1}, {kF, kW, 0});
}

TEST(ZeroBubbleV, RejectsWhatThePaperCodeCannotSchedule) {
  EXPECT_THROW((void)zero_bubble_v_schedule(1, 4, {}, {}), std::invalid_argument);
  EXPECT_THROW((void)zero_bubble_v_schedule(4, 0, {}, {}), std::invalid_argument);
  // One forward's memory under 1F1B's: the paper's code fails its memory assertion.
  EXPECT_THROW((void)zero_bubble_v_schedule(4, 12, {14407, 14380, 9676, 1610}, {kF, kW, 7 * kF}),
               std::invalid_argument);
}

// The paper's own check of its schedule (arXiv 2401.10241 Table 8, ZB-V column): the bubble rate
// its greedy reaches from the F, B, W and communication times profiled in the ZB-V runs (the
// settings listed in 678c9996 v_schedule.py's __main__), with the memory of 34h + 5as per chunk
// forward, 32h of it kept for W, under 1F1B's limit. A stage's bubble is its idle time from its
// first pass to its last; the rate is the worst stage's over the step (2m (F + B + W) + bubble).
TEST(ZeroBubbleV, ReachesThePapersPublishedBubbleRatesFromItsProfiledTimes) {
  struct Setting {
    long pp, m, f, b, w, c, h, a;
    double published;
  };
  const std::vector<Setting> table8 = {{16, 48, 14407, 14380, 9676, 1610, 4096, 32, 0.0697},
                                       {16, 64, 14412, 14393, 9688, 1621, 4096, 32, 0.0533},
                                       {16, 128, 14316, 14306, 9639, 1619, 4096, 32, 0.0274},
                                       {24, 72, 6763, 6969, 5251, 755, 5120, 40, 0.0638},
                                       {24, 96, 6783, 6984, 5259, 758, 5120, 40, 0.0483},
                                       {24, 192, 6785, 6990, 5260, 770, 5120, 40, 0.0250},
                                       {32, 96, 9458, 9748, 7288, 879, 6144, 48, 0.0593},
                                       {32, 128, 9469, 9744, 7306, 892, 6144, 48, 0.0451},
                                       {32, 256, 9447, 9644, 7193, 887, 6144, 48, 0.0236}};
  for (const auto& t : table8) {
    const auto schedule = zero_bubble_v_schedule(t.pp, t.m, {t.f, t.b, t.w, t.c},
                                                 {34 * t.h + 5 * t.a * 1024, -32 * t.h, 0});
    long worst = 0;
    for (const auto& stage : schedule) {
      long idle = 0, previous = -1;
      for (const auto& n : stage) {
        if (n.kind != Kind::forward && n.kind != Kind::input_gradient &&
            n.kind != Kind::weight_gradient)
          continue;
        if (previous >= 0) idle += n.start - previous;
        previous = n.completion;
      }
      worst = std::max(worst, idle);
    }
    const double busy = static_cast<double>(2 * t.m * (t.f + t.b + t.w));
    EXPECT_NEAR(static_cast<double>(worst) / (busy + static_cast<double>(worst)), t.published,
                0.00005)
        << "pp " << t.pp << " m " << t.m;
  }
}

}  // namespace
}  // namespace trainsim::program

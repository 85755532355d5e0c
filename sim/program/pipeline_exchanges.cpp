#include "program/pipeline_exchanges.hpp"

#include <algorithm>
#include <set>
#include <tuple>

#include "core/error.hpp"

namespace trainsim::program {

namespace {

/// Python's %, which Megatron's get_model_chunk_id relies on for negative ids.
long floor_mod(long a, long b) { return ((a % b) + b) % b; }

/// One stage's steps, written as Megatron's loops issue them. Receives are placeholders (boundary
/// -1) until pipeline_exchanges pairs them with the peer's sends.
class StageSteps {
public:
  StageSteps(const std::vector<PipelineSlot>& order, long pp, long stage)
      : order_(order), pp_(pp), stage_(stage) {}

  /// The next slot of pipeline_order, which must be a forward (backward) where Megatron's loop
  /// runs one: the two descriptions of the schedule are checked against each other.
  void compute(bool forward) {
    TRAINSIM_CHECK(next_ < order_.size() && order_[next_].forward == forward &&
                       order_[next_].part != PipelineSlot::Part::weight,
                   "pipeline_order disagrees with Megatron's loop at stage " + std::to_string(stage_));
    (forward ? last_forward_ : last_backward_) = next_;
    steps_.push_back({true, next_++, {}});
  }
  /// The next slot, a deferred weight gradient (ZB-H1's WeightGradStore.pop): no exchange.
  void weight() {
    TRAINSIM_CHECK(next_ < order_.size() && order_[next_].part == PipelineSlot::Part::weight,
                   "pipeline_order disagrees with the zero-bubble loop at stage " + std::to_string(stage_));
    steps_.push_back({true, next_++, {}});
  }
  /// Whether the next slot is a deferred weight gradient.
  [[nodiscard]] bool weight_next() const {
    return next_ < order_.size() && order_[next_].part == PipelineSlot::Part::weight;
  }
  /// The output of the last forward (to the next virtual stage) or the input gradient of the
  /// last backward (to the previous one).
  [[nodiscard]] PipelineTransfer sent_forward() const {
    const auto& s = order_[last_forward_];
    return {true, false, s.chunk * pp_ + stage_, s.micro_batch};
  }
  [[nodiscard]] PipelineTransfer sent_backward() const {
    const auto& s = order_[last_backward_];
    return {true, true, s.chunk * pp_ + stage_ - 1, s.micro_batch};
  }
  static PipelineTransfer received(bool gradient) { return {false, gradient, -1, -1}; }
  /// One _communicate call; one with nothing to send or receive exchanges nothing.
  void exchange(std::vector<PipelineTransfer> batch, bool waited = true) {
    if (!batch.empty()) steps_.push_back({false, 0, std::move(batch), waited});
  }
  std::vector<PipelineStep> finish() {
    TRAINSIM_CHECK(next_ == order_.size(), "Megatron's loop ran fewer slots than pipeline_order at stage " +
                                               std::to_string(stage_));
    return std::move(steps_);
  }

private:
  const std::vector<PipelineSlot>& order_;
  long pp_, stage_;
  std::size_t next_ = 0, last_forward_ = 0, last_backward_ = 0;
  std::vector<PipelineStep> steps_;
};

/// GPipe (not in Megatron 2021; written with the same blocking calls) and
/// forward_backward_pipelining_without_interleaving.
std::vector<PipelineStep> non_interleaved(plan::PipelineSchedule schedule, long pp, long stage, long m) {
  const auto order = pipeline_order(schedule, pp, stage, m, 1);
  StageSteps st(order, pp, stage);
  const bool first = stage == 0, last = stage == pp - 1;
  const auto recv_prev = StageSteps::received(false), recv_next = StageSteps::received(true);
  // recv_forward, forward, send_forward: the warm-up (all of GPipe's forwards).
  auto warm_up_forward = [&] {
    if (!first) st.exchange({recv_prev});
    st.compute(true);
    if (!last) st.exchange({st.sent_forward()});
  };
  // recv_backward, backward, send_backward: the cool-down (all of GPipe's backwards).
  auto cool_down_backward = [&] {
    if (!last) st.exchange({recv_next});
    st.compute(false);
    if (!first) st.exchange({st.sent_backward()});
  };
  if (schedule == plan::PipelineSchedule::gpipe) {
    for (long b = 0; b < m; ++b) warm_up_forward();
    for (long b = 0; b < m; ++b) cool_down_backward();
    return st.finish();
  }
  // ZB-H1 (pipeline_order): 1F1B's exchanges, a queued weight gradient run after a send where
  // the order has one (WeightGradStore.pop), the rest after the last backward (pop_all).
  const bool zero_bubble = schedule == plan::PipelineSchedule::zero_bubble_h1;
  auto pop_weight = [&] {
    if (zero_bubble && st.weight_next()) st.weight();
  };
  const long warmup = std::min(pp - stage - 1, m), remaining = m - warmup;
  for (long i = 0; i < warmup; ++i) warm_up_forward();
  if (remaining > 0 && !first) st.exchange({recv_prev});
  for (long i = 0; i < remaining; ++i) {
    st.compute(true);
    if (!last) st.exchange({st.sent_forward(), recv_next});  // send_forward_recv_backward
    st.compute(false);
    if (!first) {
      if (i == remaining - 1)
        st.exchange({st.sent_backward()});  // send_backward
      else
        st.exchange({st.sent_backward(), recv_prev});  // send_backward_recv_forward
    }
    if (i == remaining - 1) pop_weight();
  }
  for (long i = 0; i < warmup; ++i) {
    cool_down_backward();
    pop_weight();
  }
  while (zero_bubble && st.weight_next()) st.weight();
  return st.finish();
}

/// forward_backward_pipelining_with_interleaving, condition for condition; `overlap`: its
/// overlap_p2p_comm branches (megatron-core r0.10, pipeline_exchanges.hpp).
std::vector<PipelineStep> interleaved(long pp, long stage, long m, long v, bool overlap) {
  const auto order = pipeline_order(plan::PipelineSchedule::interleaved, pp, stage, m, v);
  StageSteps st(order, pp, stage);
  const bool first = stage == 0, last = stage == pp - 1;
  const auto recv_prev = StageSteps::received(false), recv_next = StageSteps::received(true);
  const long total = m * v;
  const bool all_warmup = m == pp;
  const long warmup = all_warmup ? total : std::min(total, (pp - stage - 1) * 2 + (v - 1) * pp);
  const long remaining = total - warmup;
  auto chunk_forward = [&](long k) { return floor_mod(k, pp * v) / pp; };
  auto chunk_backward = [&](long k) { return v - 1 - chunk_forward(k); };
  // The first virtual stage sends no input gradient, the last one no output.
  auto sends_forward = [&](long k) { return !(last && chunk_forward(k) == v - 1); };
  auto sends_backward = [&](long k) { return !(first && chunk_backward(k) == 0); };

  if (!first) st.exchange({recv_prev});  // recv_forward for chunk 0
  for (long k = 0; k < warmup; ++k) {
    st.compute(true);
    std::vector<PipelineTransfer> batch;
    if (sends_forward(k)) batch.push_back(st.sent_forward());
    // The first stage's chunk 0 reads data, not a neighbour's output; nothing after the last.
    if (!(first && chunk_forward(k + 1) == 0) && k != total - 1) batch.push_back(recv_prev);
    // The last warm-up forward also waits for the first backward's gradient; with overlap it
    // only posts that receive, after its own exchange (send_backward_recv_backward, not waited).
    const bool first_gradient = k == warmup - 1 && !all_warmup && !last;
    if (first_gradient && !overlap) batch.push_back(recv_next);
    st.exchange(std::move(batch));  // send_forward_recv_forward or send_forward_backward_recv_forward_backward
    if (first_gradient && overlap) st.exchange({recv_next}, false);
  }
  for (long k = 0; k < remaining; ++k) {
    const long forward_k = k + warmup;
    // The first stage runs pp - 1 forwards ahead of the last: nothing comes back to it for the
    // last chunk; the last stage runs pp - 1 backwards ahead of the first, symmetrically.
    const bool receives_forward = !(first && chunk_forward(forward_k - (pp - 1)) == v - 1) && k != remaining - 1;
    const bool receives_backward = !(last && chunk_backward(k - (pp - 1)) == 0);
    st.compute(true);
    if (overlap) {
      // send_forward_recv_forward, then send_backward_recv_backward, each left in flight.
      std::vector<PipelineTransfer> forward_batch, backward_batch;
      if (sends_forward(forward_k)) forward_batch.push_back(st.sent_forward());
      if (receives_forward) forward_batch.push_back(recv_prev);
      st.exchange(std::move(forward_batch), false);
      st.compute(false);
      if (sends_backward(k)) backward_batch.push_back(st.sent_backward());
      if (receives_backward) backward_batch.push_back(recv_next);
      st.exchange(std::move(backward_batch), false);
      continue;
    }
    st.compute(false);
    std::vector<PipelineTransfer> batch;
    if (sends_forward(forward_k)) batch.push_back(st.sent_forward());
    if (sends_backward(k)) batch.push_back(st.sent_backward());
    if (receives_forward) batch.push_back(recv_prev);
    if (receives_backward) batch.push_back(recv_next);
    st.exchange(std::move(batch));  // send_forward_backward_recv_forward_backward
  }
  if (all_warmup && !last) st.exchange({recv_next});  // recv_backward
  for (long k = remaining; k < total; ++k) {
    st.compute(false);
    std::vector<PipelineTransfer> batch;
    if (sends_backward(k)) batch.push_back(st.sent_backward());
    if (!(last && chunk_backward(k + 1) == v - 1) && k != total - 1) batch.push_back(recv_next);
    st.exchange(std::move(batch));  // send_backward_recv_backward
  }
  return st.finish();
}

/// DeepSpeed's TrainSchedule.steps() for one stage, instruction for instruction (v0.6.2,
/// deepspeed/runtime/pipe/schedule.py); its forwards and backwards come in 1F1B's order, which
/// StageSteps checks.
std::vector<PipelineStep> deepspeed_train_schedule(long pp, long stage, long m) {
  const auto order = pipeline_order(plan::PipelineSchedule::one_f_one_b, pp, stage, m, 1);
  StageSteps st(order, pp, stage);
  const bool first = stage == 0, last = stage == pp - 1;
  auto even = [](long x) { return x % 2 == 0; };
  auto valid = [m](long b) { return b >= 0 && b < m; };
  long previous = -1;  // prev_micro_batch_id
  for (long step = 0; step < 2 * (m + pp - 1); ++step) {
    // _step_to_micro_batch: a stage runs forwards on the steps of its own parity.
    const bool forward = even(step) == even(stage);
    const long b = forward ? (even(step) ? step / 2 : (step - 1) / 2) - stage / 2
                           : (even(step) ? step / 2 - pp + (stage + 1) / 2 : (step - 1) / 2 - pp + 1 + stage / 2);
    if (forward) {
      if (valid(b) && !first) st.exchange({StageSteps::received(false)});  // RecvActivation
      if (valid(previous) && !first) st.exchange({st.sent_backward()});     // SendGrad
    } else {
      if (valid(previous) && !last) st.exchange({st.sent_forward()});       // SendActivation
      if (valid(b) && !last) st.exchange({StageSteps::received(true)});    // RecvGrad
    }
    if (valid(b)) st.compute(forward);  // ForwardPass / BackwardPass
    previous = b;
  }
  return st.finish();
}

}  // namespace

std::vector<std::vector<PipelineStep>> pipeline_exchanges(plan::PipelineSchedule schedule, long pp, long m,
                                                          long chunks, plan::PipelineEngine engine, bool overlap_p2p) {
  std::vector<std::vector<PipelineStep>> stages;
  const bool interleave = schedule == plan::PipelineSchedule::interleaved && chunks > 1;
  const bool deepspeed = engine == plan::PipelineEngine::deepspeed;
  TRAINSIM_CHECK(!deepspeed || (schedule == plan::PipelineSchedule::one_f_one_b && chunks == 1),
                 "DeepSpeed's pipeline engine runs 1F1B only");
  TRAINSIM_CHECK(!overlap_p2p || (interleave && !deepspeed),
                 "overlap_p2p_comm is Megatron-core's interleaved schedule's");
  for (long s = 0; s < pp; ++s)
    stages.push_back(deepspeed    ? deepspeed_train_schedule(pp, s, m)
                     : interleave ? interleaved(pp, s, m, chunks, overlap_p2p)
                                  : non_interleaved(schedule, pp, s, m));
  // NCCL pairs a rank's sends to a peer with the peer's receives from it in issue order: the
  // n-th receive from the previous stage completes the n-th send of that stage to its next.
  std::vector<std::vector<PipelineTransfer>> to_next(static_cast<std::size_t>(pp)), to_prev(static_cast<std::size_t>(pp));
  for (long s = 0; s < pp; ++s)
    for (const auto& step : stages[static_cast<std::size_t>(s)])
      for (const auto& t : step.transfers)
        if (t.send) (t.gradient ? to_prev : to_next)[static_cast<std::size_t>(s)].push_back(t);
  std::vector<std::size_t> from_prev(static_cast<std::size_t>(pp), 0), from_next(static_cast<std::size_t>(pp), 0);
  for (long s = 0; s < pp; ++s)
    for (auto& step : stages[static_cast<std::size_t>(s)])
      for (auto& t : step.transfers) {
        if (t.send) continue;
        const long peer = t.gradient ? (s + 1) % pp : (s + pp - 1) % pp;
        const auto& sent = (t.gradient ? to_prev : to_next)[static_cast<std::size_t>(peer)];
        std::size_t& n = (t.gradient ? from_next : from_prev)[static_cast<std::size_t>(s)];
        TRAINSIM_CHECK(n < sent.size(), "stage " + std::to_string(s) + " receives more than stage " +
                                            std::to_string(peer) + " sends");
        const PipelineTransfer& match = sent[n++];
        t.boundary = match.boundary;
        t.micro_batch = match.micro_batch;
        // An activation crossing boundary b lands on virtual stage b + 1, a gradient on b.
        TRAINSIM_CHECK((t.gradient ? t.boundary : t.boundary + 1) % pp == s,
                       "a transfer reaches the wrong stage");
      }
  // Each slot's input has arrived before it runs: an activation before a forward of any virtual
  // stage but the first, a gradient before a backward of any but the last.
  for (long s = 0; s < pp; ++s) {
    const auto order = pipeline_order(schedule, pp, s, m, chunks);
    std::set<std::tuple<bool, long, long>> arrived;
    for (const auto& step : stages[static_cast<std::size_t>(s)]) {
      for (const auto& t : step.transfers)
        if (!t.send) arrived.insert({t.gradient, t.boundary, t.micro_batch});
      if (!step.compute) continue;
      const auto& slot = order[step.slot];
      const long vs = slot.chunk * pp + s;
      if (slot.forward && vs > 0)
        TRAINSIM_CHECK(arrived.count({false, vs - 1, slot.micro_batch}) == 1, "a forward runs before its input arrives");
      if (!slot.forward && vs < pp * chunks - 1)
        TRAINSIM_CHECK(arrived.count({true, vs, slot.micro_batch}) == 1, "a backward runs before its gradient arrives");
    }
  }
  for (long s = 0; s < pp; ++s) {
    const long next = (s + 1) % pp;
    TRAINSIM_CHECK(from_prev[static_cast<std::size_t>(next)] == to_next[static_cast<std::size_t>(s)].size() &&
                       from_next[static_cast<std::size_t>(s)] == to_prev[static_cast<std::size_t>(next)].size(),
                   "a send between stages " + std::to_string(s) + " and " + std::to_string(next) + " has no receive");
  }
  return stages;
}

PipelinePrograms zero_bubble_v_programs(const std::vector<std::vector<ZeroBubbleVNode>>& schedule,
                                        const plan::TrainingPlan& plan) {
  using Kind = ZeroBubbleVNode::Kind;
  const long pp = plan.pp;
  TRAINSIM_CHECK(static_cast<long>(schedule.size()) == pp, "a ZB-V schedule has one node list per stage");
  PipelinePrograms out;
  out.slots.resize(static_cast<std::size_t>(pp));
  out.steps.resize(static_cast<std::size_t>(pp));
  for (long s = 0; s < pp; ++s) {
    const auto& nodes = schedule[static_cast<std::size_t>(s)];
    auto& slots = out.slots[static_cast<std::size_t>(s)];
    auto& steps = out.steps[static_cast<std::size_t>(s)];
    std::vector<PipelineTransfer> batch;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const ZeroBubbleVNode& n = nodes[i];
      if (n.computes()) {
        const auto part = n.kind == Kind::forward          ? PipelineSlot::Part::whole
                          : n.kind == Kind::input_gradient ? PipelineSlot::Part::input
                                                           : PipelineSlot::Part::weight;
        slots.push_back({n.micro_batch, n.chunk, n.kind == Kind::forward, part});
        steps.push_back({true, slots.size() - 1, {}});
        continue;
      }
      const long vs = plan::virtual_stage_of(plan, s, n.chunk);
      switch (n.kind) {
        case Kind::send_forward: batch.push_back({true, false, vs, n.micro_batch}); break;
        case Kind::receive_forward: batch.push_back({false, false, vs - 1, n.micro_batch}); break;
        case Kind::send_backward: batch.push_back({true, true, vs - 1, n.micro_batch}); break;
        default: batch.push_back({false, true, vs, n.micro_batch}); break;
      }
      // The runtime's add_communication: the batch goes out when a compute comes next or when the
      // next compute reads this receive.
      std::size_t next = i + 1;
      while (next < nodes.size() && !nodes[next].computes()) ++next;
      const bool read_next = next < nodes.size() && nodes[next].chunk == n.chunk &&
                             nodes[next].micro_batch == n.micro_batch &&
                             ((n.kind == Kind::receive_forward && nodes[next].kind == Kind::forward) ||
                              (n.kind == Kind::receive_backward && nodes[next].kind == Kind::input_gradient));
      if (read_next || next == i + 1) {
        steps.push_back({false, 0, std::move(batch), false});
        batch.clear();
      }
    }
    TRAINSIM_CHECK(batch.empty(), "a ZB-V schedule ends with an unsent batch");
  }
  // Every transfer has its peer, and every input has arrived when its slot runs.
  std::set<std::tuple<bool, long, long>> sent, received;
  for (long s = 0; s < pp; ++s) {
    std::set<std::tuple<bool, long, long>> arrived;
    for (const auto& step : out.steps[static_cast<std::size_t>(s)]) {
      for (const auto& t : step.transfers) {
        const long from = plan::stage_of_virtual(plan, t.gradient ? t.boundary + 1 : t.boundary);
        const long to = plan::stage_of_virtual(plan, t.gradient ? t.boundary : t.boundary + 1);
        TRAINSIM_CHECK((t.send ? from : to) == s && from != to, "a ZB-V transfer is on the wrong stage");
        (t.send ? sent : received).insert({t.gradient, t.boundary, t.micro_batch});
        if (!t.send) arrived.insert({t.gradient, t.boundary, t.micro_batch});
      }
      if (!step.compute) continue;
      const auto& slot = out.slots[static_cast<std::size_t>(s)][step.slot];
      const long vs = plan::virtual_stage_of(plan, s, slot.chunk);
      const bool local = vs == pp;  // its input comes from the same stage's chunk 0
      if (slot.forward && vs > 0 && !local)
        TRAINSIM_CHECK(arrived.count({false, vs - 1, slot.micro_batch}) == 1,
                       "a ZB-V forward runs before its input arrives");
      if (slot.part == PipelineSlot::Part::input && vs < 2 * pp - 1 && vs != pp - 1)
        TRAINSIM_CHECK(arrived.count({true, vs, slot.micro_batch}) == 1,
                       "a ZB-V backward runs before its gradient arrives");
    }
  }
  TRAINSIM_CHECK(sent == received, "a ZB-V send has no receive, or a receive no send");
  return out;
}

}  // namespace trainsim::program

#include "arguments.hpp"

#include <cerrno>
#include <cstdlib>

#include "named_models.hpp"

namespace trainsim::validate {

const char* const kUsage =
    "usage: trainsim-validate COMMAND [ARGS]   (needs an NVIDIA GPU; see validate/README.md)\n"
    "\n"
    "trainsim-validate kernels --out FILE [--quick] [--device N]\n"
    "  verify, then time GEMMs (bf16, fp16, tf32, fp32 over a shape sweep), memory bandwidth,\n"
    "  launch overhead and the memory-bound kernels; write a trainsim.kernel_calibration/1 file\n"
    "\n"
    "trainsim-validate nccl --out FILE [--min-bytes B] [--max-bytes B] [--iters N] [--warmup N]\n"
    "                       [--topology STEM]\n"
    "  nccl-tests-style all_reduce, all_gather, reduce_scatter, alltoall over all visible GPUs;\n"
    "  write a trainsim.collective_measurements/1 file (algbw, busbw as nccl-tests define them)\n"
    "\n"
    "trainsim-validate layer (--model NAME | --hidden H --heads A --seq S) [--micro-batch B]\n"
    "                        [--calibration FILE] [--device N] [--iters N]\n"
    "  run one transformer layer forward and backward on the GPU and compare each kernel and the\n"
    "  total with the simulator's prediction from the same calibration (run first when not given)\n"
    "  models: bert-large, gpt-1.7b, gpt-7.5b, gpt-18b\n";

namespace {

class Cursor {
 public:
  explicit Cursor(const std::vector<std::string>& args) : args_(args) {}
  bool done() const { return i_ >= args_.size(); }
  const std::string& next() { return args_[i_++]; }
  const std::string& value(const std::string& flag) {
    if (done()) throw UsageError(flag + " needs a value");
    return next();
  }
  long positive(const std::string& flag) {
    const std::string& v = value(flag);
    errno = 0;
    char* end = nullptr;
    const long n = std::strtol(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || errno != 0 || n <= 0)
      throw UsageError(flag + " expects a positive integer, not \"" + v + "\"");
    return n;
  }
  long non_negative(const std::string& flag) {
    const std::string& v = value(flag);
    char* end = nullptr;
    const long n = std::strtol(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || n < 0)
      throw UsageError(flag + " expects a non-negative integer, not \"" + v + "\"");
    return n;
  }

 private:
  const std::vector<std::string>& args_;
  std::size_t i_ = 0;
};

[[noreturn]] void unknown(const std::string& a) { throw UsageError("unknown argument " + a); }

}  // namespace

KernelsOptions parse_kernels_options(const std::vector<std::string>& args) {
  KernelsOptions o;
  Cursor c(args);
  while (!c.done()) {
    const std::string& a = c.next();
    if (a == "--out")
      o.out = c.value(a);
    else if (a == "--quick")
      o.quick = true;
    else if (a == "--device")
      o.device = static_cast<int>(c.non_negative(a));
    else
      unknown(a);
  }
  if (o.out.empty()) throw UsageError("kernels needs --out FILE");
  return o;
}

NcclOptions parse_nccl_options(const std::vector<std::string>& args) {
  NcclOptions o;
  Cursor c(args);
  while (!c.done()) {
    const std::string& a = c.next();
    if (a == "--out")
      o.out = c.value(a);
    else if (a == "--min-bytes")
      o.min_bytes = static_cast<std::size_t>(c.positive(a));
    else if (a == "--max-bytes")
      o.max_bytes = static_cast<std::size_t>(c.positive(a));
    else if (a == "--iters")
      o.iters = static_cast<int>(c.positive(a));
    else if (a == "--warmup")
      o.warmup = static_cast<int>(c.non_negative(a));
    else if (a == "--topology")
      o.topology = c.value(a);
    else
      unknown(a);
  }
  if (o.out.empty()) throw UsageError("nccl needs --out FILE");
  if (o.min_bytes > o.max_bytes) throw UsageError("--min-bytes is larger than --max-bytes");
  return o;
}

LayerOptions parse_layer_options(const std::vector<std::string>& args) {
  LayerOptions o;
  std::string model;
  long hidden = 0, heads = 0, seq = 0;
  Cursor c(args);
  while (!c.done()) {
    const std::string& a = c.next();
    if (a == "--model")
      model = c.value(a);
    else if (a == "--hidden")
      hidden = c.positive(a);
    else if (a == "--heads")
      heads = c.positive(a);
    else if (a == "--seq")
      seq = c.positive(a);
    else if (a == "--micro-batch")
      o.micro_batch = c.positive(a);
    else if (a == "--calibration")
      o.calibration = c.value(a);
    else if (a == "--device")
      o.device = static_cast<int>(c.non_negative(a));
    else if (a == "--iters")
      o.iters = static_cast<int>(c.positive(a));
    else
      unknown(a);
  }
  const bool by_shape = hidden || heads || seq;
  if (!model.empty() && by_shape)
    throw UsageError("give --model or --hidden/--heads/--seq, not both");
  if (!model.empty()) {
    const auto m = find_named_model(model);
    if (!m)
      throw UsageError("unknown model \"" + model + "\" (bert-large, gpt-1.7b, gpt-7.5b, gpt-18b)");
    o.spec = m->spec;
    if (o.micro_batch == 0) o.micro_batch = m->micro_batch;
  } else {
    if (!hidden || !heads || !seq)
      throw UsageError("layer needs --model NAME or all of --hidden, --heads, --seq");
    if (hidden % heads != 0) throw UsageError("--hidden must be a multiple of --heads");
    o.spec.name = "custom";
    o.spec.layers = 1;
    o.spec.hidden = hidden;
    o.spec.heads = heads;
    o.spec.ffn_hidden = 4 * hidden;
    o.spec.seq_len = seq;
    if (o.micro_batch == 0) o.micro_batch = 1;
  }
  return o;
}

}  // namespace trainsim::validate

#include "model/dtype.hpp"

namespace trainsim::model {

const char* dtype_name(Dtype d) {
  switch (d) {
    case Dtype::fp32: return "fp32";
    case Dtype::tf32: return "tf32";
    case Dtype::fp16: return "fp16";
    case Dtype::bf16: return "bf16";
    case Dtype::fp8: return "fp8";
  }
  return "fp32";
}

std::optional<Dtype> parse_dtype(const std::string& name) {
  for (Dtype d : {Dtype::fp32, Dtype::tf32, Dtype::fp16, Dtype::bf16, Dtype::fp8})
    if (name == dtype_name(d)) return d;
  return std::nullopt;
}

const char* accumulation_name(Accumulation a) { return a == Accumulation::fast ? "fast" : "full"; }

}  // namespace trainsim::model

#include "model/module_kernels.hpp"

namespace trainsim::model {

namespace {
constexpr double kBf16 = 2.0;
}  // namespace

Operation bias_grad_reduction(const std::string& name, double rows, double cols) {
  return make_elementwise(name, kBf16 * (rows * cols + cols), rows * cols, "bias_grad");
}

Operation chunk_grad_cat(const std::string& name, double elements) {
  return make_elementwise(name, 2 * kBf16 * elements, 0, "chunk_grad_cat");
}

Operation permute_copy(const std::string& name, double elements) {
  return make_elementwise(name, 2 * kBf16 * elements, 0, "permute_copy");
}

Operation scalar_multiply(const std::string& name, double elements) {
  return make_elementwise(name, 2 * kBf16 * elements, elements, "scalar_multiply");
}

}  // namespace trainsim::model

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

Operation unpad_gather(const std::string& name, double elements) {
  return make_elementwise(name, 2 * kBf16 * elements, 0, "index_gather");
}

std::vector<Operation> unpad_gather_grad(const std::string& name, double elements) {
  return {make_elementwise(name + "_zeros", kBf16 * elements, 0, "zeros_fill"),
          make_elementwise(name + "_scatter", 2 * kBf16 * elements, 0, "index_scatter")};
}

std::vector<Operation> pad_index_put(const std::string& name, double elements) {
  return {make_elementwise(name + "_zeros", kBf16 * elements, 0, "zeros_fill"),
          make_elementwise(name + "_index_put", 2 * kBf16 * elements, 0, "index_scatter")};
}

Operation pad_index_put_grad(const std::string& name, double elements) {
  return make_elementwise(name, 2 * kBf16 * elements, 0, "index_gather");
}

}  // namespace trainsim::model

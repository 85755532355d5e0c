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

namespace {
// A zero-filled tensor, then `elements` values written into it at indices (scatter_ or
// index_put_): both flash-attn padding directions.
std::vector<Operation> index_write_into_zeros(const std::string& name, const std::string& write, double elements) {
  return {make_elementwise(name + "_zeros", kBf16 * elements, 0, "zeros_fill"),
          make_elementwise(name + write, 2 * kBf16 * elements, 0, "index_scatter")};
}
}  // namespace

std::vector<Operation> unpad_gather_grad(const std::string& name, double elements) {
  return index_write_into_zeros(name, "_scatter", elements);
}

std::vector<Operation> pad_index_put(const std::string& name, double elements) {
  return index_write_into_zeros(name, "_index_put", elements);
}

Operation pad_index_put_grad(const std::string& name, double elements) { return unpad_gather(name, elements); }

}  // namespace trainsim::model

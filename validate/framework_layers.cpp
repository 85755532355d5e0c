#include "framework_layers.hpp"

#include "core/json_reader.hpp"
#include "model/compute_cost.hpp"
#include "model/host_dispatch.hpp"
#include "model/published_models.hpp"
#include "named_models.hpp"

namespace trainsim::validate {

namespace {

/// measure_sustained.py llama_layer: Llama-3 8B's decoder layer (torchtitan llama3_configs['8B']).
model::TransformerSpec llama3_8b_layer(long seq) {
  model::TransformerSpec s = model::llama3_8b(seq);
  s.name = "llama3-8b layer";
  s.layers = 1;
  return s;
}

}  // namespace

std::vector<FrameworkLayer> read_framework_layers(const std::string& sustained_file,
                                                  const std::string& torch_ops_file) {
  std::vector<FrameworkLayer> out;
  {
    const auto doc = read_json_file(sustained_file);
    auto root = root_object(doc, sustained_file);
    for (auto& row : root.object_array("layers")) {
      const std::string model = row.string("model");
      if (model != "llama3-8b layer") row.fail("model", "\"llama3-8b layer\"");
      FrameworkLayer l;
      const long seq = row.positive_integer("seq");
      l.spec = llama3_8b_layer(seq);
      l.shape.micro_batch = row.positive_integer("batch");
      l.shape.flash_attention = true;
      l.shape.eager = true;  // torchtitan's module code, run without torch.compile
      l.label = model + " seq " + std::to_string(seq) + " x " + std::to_string(l.shape.micro_batch);
      l.measured_forward = row.number("forward_us") * 1e-6;
      l.measured_backward = row.number("backward_us") * 1e-6;
      out.push_back(l);
    }
  }
  {
    const auto doc = read_json_file(torch_ops_file);
    auto root = root_object(doc, torch_ops_file);
    for (auto& row : root.object_array("layers")) {
      const std::string model = row.string("model");
      const auto named = find_named_model(model);
      if (!named) row.fail("model", "a named model of validate/named_models.cpp (bert-large, gpt-1.7b, ...)");
      const std::string attention = row.choice("attention", {"unfused", "sdpa-flash"});
      FrameworkLayer l;
      l.spec = named->spec;
      l.shape.micro_batch = named->micro_batch;
      l.shape.flash_attention = attention == "sdpa-flash";
      l.shape.module_kernels = model::ModuleKernels::torch_layer;  // measure_torch_ops.py's Layer
      l.label = model + " " + attention;
      l.measured_forward = row.number("forward_us") * 1e-6;
      l.measured_backward = row.number("backward_us") * 1e-6;
      out.push_back(l);
    }
  }
  return out;
}

std::vector<FrameworkLayer> read_fp8_layer_rows(const std::string& fp8_layer_file) {
  std::vector<FrameworkLayer> out;
  const auto doc = read_json_file(fp8_layer_file);
  auto root = root_object(doc, fp8_layer_file);
  for (auto& row : root.object_array("rows")) {
    if (row.has("error")) continue;
    const std::string linears = row.choice("linears", {"bf16", "fp8"});
    if (!row.has("compiled")) row.fail("compiled", "true or false (was the layer run under torch.compile?)");
    const bool compiled = row.boolean_or("compiled", false);
    const long seq = row.positive_integer("seq");
    FrameworkLayer l;
    l.spec = llama3_8b_layer(seq);
    l.shape.micro_batch = row.positive_integer("batch");
    l.shape.flash_attention = true;
    l.shape.eager = !compiled;
    if (linears == "fp8") {  // torchao's tensorwise recipe, as measure_fp8_layer.py runs it
      l.shape.fp8.enabled = true;
      l.shape.fp8.dynamic_scaling = true;
      l.shape.fp8.fused_transpose = compiled;
      l.shape.fp8.weight_casts_per_micro_batch = 1;
      // measure_fp8_layer.py's autograd function saves the FP8 input and casts the gradient once:
      // not torchao's backward re-casts (model/fp8_linear.hpp), so the check leaves them out.
      l.shape.fp8.backward_recasts = false;
    }
    l.label = "llama3-8b layer seq " + std::to_string(seq) + " " + linears + (compiled ? " compiled" : " eager");
    l.measured_forward = row.number("forward_us") * 1e-6;
    l.measured_backward = row.number("backward_us") * 1e-6;
    out.push_back(l);
  }
  return out;
}

namespace {

/// Seconds per iteration of `ops` run back to back in a loop the host never waits in (the
/// measurement's timed loop), once the loop is in its steady state.
Seconds steady_period(const std::vector<model::Operation>& ops, const model::DeviceProfile& dev,
                      Seconds host_per_kernel) {
  constexpr int kIterations = 8;
  Seconds host = 0, device = 0, after_first = 0;
  for (int i = 0; i < kIterations; ++i) {
    for (const auto& op : ops) {
      const auto t = model::dispatch(host, device, op.kernels, host_per_kernel, model::op_duration(op, dev));
      host = t.host_end;
      device = t.device_end;
    }
    if (i == 0) after_first = device;
  }
  return (device - after_first) / (kIterations - 1);
}

}  // namespace

LayerPrediction predict_layer(const FrameworkLayer& layer, const model::DeviceProfile& dev, Seconds host_per_kernel) {
  const auto forward = model::layer_forward_ops(layer.spec, layer.shape);
  auto both = forward;
  const auto backward = model::layer_backward_ops(layer.spec, layer.shape);
  both.insert(both.end(), backward.begin(), backward.end());
  const Seconds f = steady_period(forward, dev, host_per_kernel);
  return {f, steady_period(both, dev, host_per_kernel) - f};
}

}  // namespace trainsim::validate

#include "model/device_profile.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/error.hpp"
#include "core/json_reader.hpp"
#include "core/paths.hpp"

namespace trainsim::model {

namespace {

/// {"value": "...", "source": "..."}: a number and where it comes from.
double sourced(JsonObject& parent, const std::string& key, Dimension d) {
  JsonObject o = parent.object(key);
  const double v = d == Dimension::dimensionless ? o.number("value") : o.non_negative_quantity("value", d);
  o.require_source();
  o.allow("note");
  o.finish();
  return v;
}

double efficiency(JsonObject& o, const std::string& key) {
  const double v = o.number(key);
  if (v <= 0 || v > 1) o.fail(key, "expected a value in (0, 1]");
  return v;
}

AttentionEfficiencyCurve read_attention_curve(JsonObject c) {
  AttentionEfficiencyCurve curve;
  const std::string mask = c.choice("mask", {"causal", "none"});
  curve.causal = mask == "causal";
  curve.head_dim = static_cast<double>(c.positive_integer("head_dim"));
  for (auto& p : c.object_array("points")) {
    AttentionEfficiencyPoint q;
    q.seq = static_cast<double>(p.positive_integer("seq"));
    if (!curve.points.empty() && q.seq <= curve.points.back().seq)
      p.fail("seq", "expected sequence lengths in ascending order");
    q.forward = efficiency(p, "forward");
    q.backward = efficiency(p, "backward");
    p.finish();
    curve.points.push_back(q);
  }
  if (curve.points.empty()) c.fail("points", "expected at least one point");
  c.require_source();
  c.allow("note");
  c.finish();
  return curve;
}

/// "fused_attention": {"default_kernel": NAME, "kernels": [{"name", "source", "curves": [...]}]}
void read_fused_attention(JsonObject o, DeviceProfile& d) {
  for (auto& k : o.object_array("kernels")) {
    AttentionKernel kernel;
    kernel.name = k.string("name");
    for (const auto& other : d.attention_kernels)
      if (other.name == kernel.name) k.fail("name", "expected a name not used by another kernel");
    for (auto& c : k.object_array("curves")) kernel.curves.push_back(read_attention_curve(std::move(c)));
    if (kernel.curves.empty()) k.fail("curves", "expected at least one curve");
    k.require_source();
    k.allow("note");
    k.finish();
    d.attention_kernels.push_back(std::move(kernel));
  }
  d.attention_kernel = o.string("default_kernel");
  if (active_attention_kernel(d) == nullptr) o.fail("default_kernel", "expected the name of one of the kernels");
  o.allow("note");
  o.finish();
}

}  // namespace

const AttentionKernel* active_attention_kernel(const DeviceProfile& dev) {
  for (const auto& k : dev.attention_kernels)
    if (k.name == dev.attention_kernel) return &k;
  return nullptr;
}

DeviceProfile load_device_profile(const std::string& path) {
  const auto doc = read_json_file(path);
  JsonObject root = root_object(doc, path);
  root.require_schema_version(1);
  DeviceProfile d;
  d.file = path;
  d.name = root.string("name");
  root.allow("description");
  d.peak_bf16 = sourced(root, "peak_bf16", Dimension::flop_rate);
  d.peak_fp32 = sourced(root, "peak_fp32", Dimension::flop_rate);
  d.memory_bandwidth = sourced(root, "memory_bandwidth", Dimension::bandwidth);
  d.gemm_efficiency = sourced(root, "gemm_efficiency", Dimension::dimensionless);
  d.gemm_tile = sourced(root, "gemm_tile", Dimension::dimensionless);
  d.memory_efficiency = sourced(root, "memory_efficiency", Dimension::dimensionless);
  if (root.has("sustained_compute")) {
    d.sustained_compute = sourced(root, "sustained_compute", Dimension::dimensionless);
    if (d.sustained_compute <= 0 || d.sustained_compute > 1)
      root.fail("sustained_compute", "expected a value in (0, 1]: the sustained / burst tensor-core rate");
  }
  if (root.has("fused_attention")) read_fused_attention(root.object("fused_attention"), d);
  d.launch_overhead = sourced(root, "launch_overhead", Dimension::seconds);
  d.runtime_reserve = sourced(root, "runtime_reserve", Dimension::bytes);
  if (root.has("eager_view_call")) d.eager_view_call = sourced(root, "eager_view_call", Dimension::seconds);
  if (root.has("eager_copy_call")) d.eager_copy_call = sourced(root, "eager_copy_call", Dimension::seconds);
  if (d.eager_view_call < 0) root.fail("eager_view_call", "expected a non-negative time");
  if (d.eager_copy_call < 0) root.fail("eager_copy_call", "expected a non-negative time");
  if (root.has("metric_sync_call")) d.metric_sync_call = sourced(root, "metric_sync_call", Dimension::seconds);
  if (d.metric_sync_call < 0) root.fail("metric_sync_call", "expected a non-negative time");
  if (root.has("mlm_collate_token")) d.mlm_collate_token = sourced(root, "mlm_collate_token", Dimension::seconds);
  if (d.mlm_collate_token < 0) root.fail("mlm_collate_token", "expected a non-negative time per token");
  if (root.has("eager_slice_copy_iteration"))
    d.eager_slice_copy_iteration = sourced(root, "eager_slice_copy_iteration", Dimension::seconds);
  if (d.eager_slice_copy_iteration < 0) root.fail("eager_slice_copy_iteration", "expected a non-negative time");
  if (root.has("eager_kernel_issue")) d.eager_kernel_issue = sourced(root, "eager_kernel_issue", Dimension::seconds);
  if (d.eager_kernel_issue < 0 || d.eager_kernel_issue > 1e-2)
    root.fail("eager_kernel_issue", "expected a host time per kernel launch between 0 and 10ms");
  if (root.has("allocator_retry")) d.allocator_retry = sourced(root, "allocator_retry", Dimension::seconds);
  if (root.has("allocator_retry_per_gb"))
    d.allocator_retry_per_gb = sourced(root, "allocator_retry_per_gb", Dimension::seconds);
  if (d.allocator_retry < 0 || d.allocator_retry > 1)
    root.fail("allocator_retry", "expected a time between 0 and 1s");
  if (d.allocator_retry_per_gb < 0 || d.allocator_retry_per_gb > 1)
    root.fail("allocator_retry_per_gb", "expected a time per GB between 0 and 1s");
  if (root.has("sm_count")) {
    const double sms = sourced(root, "sm_count", Dimension::dimensionless);
    if (sms < 1 || sms > 1e5 || sms != std::floor(sms))
      root.fail("sm_count", "expected a positive whole number of streaming multiprocessors");
    d.sm_count = static_cast<int>(sms);
  }
  if (root.has("held_sm_slowdown")) d.held_sm_slowdown = read_held_sm_slowdown(root.object("held_sm_slowdown"), d.sm_count);
  if (d.peak_bf16 <= 0) root.fail("peak_bf16", "expected a positive rate");
  if (d.peak_fp32 <= 0) root.fail("peak_fp32", "expected a positive rate");
  if (d.memory_bandwidth <= 0) root.fail("memory_bandwidth", "expected a positive bandwidth");
  if (d.gemm_efficiency <= 0 || d.gemm_efficiency > 1)
    root.fail("gemm_efficiency", "expected a value in (0, 1]");
  if (d.memory_efficiency <= 0 || d.memory_efficiency > 1)
    root.fail("memory_efficiency", "expected a value in (0, 1]");
  if (d.gemm_tile < 0) root.fail("gemm_tile", "expected 0 (off) or a tile edge");
  if (root.has("fitted")) {
    for (auto& f : root.object_array("fitted")) {
      FittedParameter p;
      p.json_path = f.string("parameter");
      p.rows = f.string_array("rows");
      p.method = f.string("method");
      f.finish();
      d.fitted.push_back(p);
    }
  } else {
    root.allow("fitted");
  }
  if (root.has("kernel_calibration")) {
    JsonObject k = root.object("kernel_calibration");
    attach_kernel_calibration(d, load_kernel_calibration(relative_to(path, k.string("file"))));
    k.allow("note");
    k.finish();
  }
  if (root.has("gemm_calibrations")) {
    // More GEMM samples, each file adding dtypes the others lack (an FP8 calibration beside the
    // bf16 one): their provenance stays with each file.
    if (!d.kernels) root.fail("gemm_calibrations", "adds GEMM samples to a kernel_calibration: name one first");
    KernelCalibration merged = *d.kernels;
    for (auto& k : root.object_array("gemm_calibrations")) {
      const std::string file = relative_to(path, k.string("file"));
      const KernelCalibration extra = load_kernel_calibration(file);
      if (extra.gemm.empty()) k.fail("file", "expected a calibration with gemm samples: " + file + " has none");
      for (const auto& g : extra.gemm)
        for (const auto& have : merged.gemm)
          if (have.dtype == g.dtype && have.accumulation == g.accumulation)
            k.fail("file", std::string("expected GEMM dtypes no other calibration of the profile samples: ") +
                               dtype_name(g.dtype) +
                               (g.accumulation == Accumulation::fast ? " with fast accumulation" : "") +
                               " is already sampled");
      merged.gemm.insert(merged.gemm.end(), extra.gemm.begin(), extra.gemm.end());
      d.extra_gemm_calibrations.push_back(file);
      k.allow("note");
      k.finish();
    }
    attach_kernel_calibration(d, std::move(merged));
  }
  if (d.kernels) {
    // FP8 linear layers run their forward GEMM with fast accumulation and their two backward
    // GEMMs without (Transformer Engine's _2X_ACC_FPROP false, _2X_ACC_DGRAD / _WGRAD true;
    // torchao's float8 use_fast_accum on the output GEMM only), so a device with fp8 samples
    // needs both curves. One alone is an error, not a stand-in for the other: on an H100 the two
    // differ by 9% at the median shape, and which one a profile lacks would silently decide
    // every FP8 forward (or backward) product.
    const bool full = gemm_curve(d, Dtype::fp8, Accumulation::full) != nullptr;
    const bool fast = gemm_curve(d, Dtype::fp8, Accumulation::fast) != nullptr;
    if (full != fast)
      root.fail(root.has("gemm_calibrations") ? "gemm_calibrations" : "kernel_calibration",
                std::string("expected fp8 GEMM samples at both accumulations (\"accumulation\": \"fast\" for the "
                            "forward products of FP8 linear layers, full for their gradients); found only ") +
                    (full ? "full" : "fast") + "-accumulation ones");
  }
  if (root.has("memory_bound_kernels")) {
    JsonObject k = root.object("memory_bound_kernels");
    d.memory_bound_kernels = load_memory_bound_kernels(relative_to(path, k.string("file")));
    k.allow("note");
    k.finish();
  }
  root.finish();
  return d;
}

void attach_kernel_calibration(DeviceProfile& dev, KernelCalibration c) {
  dev.kernels = std::move(c);
  dev.gemm_curves.clear();
  std::vector<std::pair<Dtype, Accumulation>> kinds;
  for (const auto& g : dev.kernels->gemm) {
    const std::pair<Dtype, Accumulation> kind{g.dtype, g.accumulation};
    if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) kinds.push_back(kind);
  }
  for (const auto& [t, a] : kinds) {
    std::vector<GemmSample> of_kind;
    for (const auto& g : dev.kernels->gemm)
      if (g.dtype == t && g.accumulation == a) of_kind.push_back(g);
    dev.gemm_curves.push_back({t, a, GemmThroughputCurve(of_kind, dev.gemm_tile, achieved_memory_bandwidth(dev))});
  }
}

const GemmThroughputCurve* gemm_curve(const DeviceProfile& dev, Dtype d, Accumulation a) {
  auto find = [&](Dtype t) -> const GemmThroughputCurve* {
    for (const auto& c : dev.gemm_curves)
      if (c.dtype == t && c.accumulation == a) return &c.curve;
    return nullptr;
  };
  if (const auto* c = find(d)) return c;
  if (d == Dtype::bf16) return find(Dtype::fp16);
  if (d == Dtype::fp16) return find(Dtype::bf16);
  return nullptr;
}

BytesPerSecond achieved_memory_bandwidth(const DeviceProfile& dev) {
  if (dev.kernels && dev.kernels->memory_bandwidth) return *dev.kernels->memory_bandwidth;
  return dev.memory_bandwidth * dev.memory_efficiency;
}

BytesPerSecond memory_bound_rate(const DeviceProfile& dev, const std::string& kernel) {
  if (kernel.empty()) return achieved_memory_bandwidth(dev);
  const std::vector<ElementwiseSample>* samples = nullptr;
  if (dev.memory_bound_kernels) {
    samples = &dev.memory_bound_kernels->kernels;
  } else if (dev.kernels) {
    samples = &dev.kernels->elementwise;
  }
  if (samples == nullptr) return achieved_memory_bandwidth(dev);
  // Several samples of one class pool their traffic and time.
  Bytes bytes = 0;
  Seconds time = 0;
  for (const auto& s : *samples) {
    if (s.name != kernel) continue;
    bytes += s.bytes;
    time += s.time;
  }
  return time > 0 ? bytes / time : achieved_memory_bandwidth(dev);
}

}  // namespace trainsim::model

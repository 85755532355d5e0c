#include "model/kernel_calibration.hpp"

#include <nlohmann/json.hpp>

#include <ostream>

#include "core/error.hpp"
#include "core/json_reader.hpp"

namespace trainsim::model {

namespace {

constexpr const char* kSchema = "trainsim.kernel_calibration/1";

CalibrationProvenance read_provenance(JsonObject o) {
  CalibrationProvenance p;
  p.method = o.choice("method", {"measured", "published"});
  p.source = o.string("source");
  if (p.source.empty()) o.fail("source", "expected a non-empty source");
  p.date = o.string("date");
  p.gpu = o.string_or("gpu", "");
  p.driver = o.string_or("driver", "");
  p.cuda = o.string_or("cuda", "");
  p.cublas = o.string_or("cublas", "");
  p.note = o.string_or("note", "");
  p.sm_count = o.has("sm_count") ? o.positive_integer("sm_count") : 0;
  p.sm_clock_mhz = o.number_or("sm_clock_mhz", 0);
  p.memory_clock_mhz = o.number_or("memory_clock_mhz", 0);
  o.finish();
  return p;
}

GemmSample read_gemm(JsonObject o) {
  GemmSample g;
  const std::string dtype = o.string("dtype");
  const auto d = parse_dtype(dtype);
  if (!d) o.fail("dtype", "expected fp32, tf32, fp16, bf16 or fp8, not \"" + dtype + "\"");
  g.dtype = *d;
  if (o.choice_or("accumulation", {"full", "fast"}, "full") == "fast") {
    if (g.dtype != Dtype::fp8)
      o.fail("accumulation", "expected \"full\" (or none): fast accumulation is an fp8 GEMM mode, not " + dtype);
    g.accumulation = Accumulation::fast;
  }
  g.m = static_cast<double>(o.positive_integer("m"));
  g.n = static_cast<double>(o.positive_integer("n"));
  g.k = static_cast<double>(o.positive_integer("k"));
  g.batch = static_cast<double>(o.positive_integer_or("batch", 1));
  g.achieved = o.number("tflops") * 1e12;
  if (g.achieved <= 0) o.fail("tflops", "expected a positive achieved TFLOP/s");
  o.finish();
  return g;
}

}  // namespace

KernelCalibration load_kernel_calibration(const std::string& path) {
  const auto doc = read_json_file(path);
  JsonObject root = root_object(doc, path);
  if (root.string("schema") != kSchema)
    root.fail("schema", std::string("expected \"") + kSchema + "\"");
  KernelCalibration c;
  c.file = path;
  c.provenance = read_provenance(root.object("provenance"));
  for (auto& g : root.object_array("gemm")) c.gemm.push_back(read_gemm(g));
  if (c.gemm.empty()) root.fail("gemm", "expected at least one GEMM sample");
  if (root.has("memory_bandwidth"))
    c.memory_bandwidth = root.quantity("memory_bandwidth", Dimension::bandwidth);
  if (root.has("launch_overhead"))
    c.launch_overhead = root.non_negative_quantity("launch_overhead", Dimension::seconds);
  if (root.has("elementwise")) {
    for (auto& e : root.object_array("elementwise")) {
      ElementwiseSample s;
      s.name = e.string("name");
      s.bytes = e.number("bytes");
      s.time = e.number("time_us") * 1e-6;
      if (s.bytes <= 0) e.fail("bytes", "expected a positive byte count");
      if (s.time <= 0) e.fail("time_us", "expected a positive time");
      e.finish();
      c.elementwise.push_back(s);
    }
  }
  root.allow("description");
  root.finish();
  return c;
}

void write_kernel_calibration(std::ostream& out, const KernelCalibration& c) {
  using nlohmann::ordered_json;
  ordered_json j;
  j["schema"] = kSchema;
  const auto& p = c.provenance;
  ordered_json prov;
  prov["method"] = p.method;
  prov["source"] = p.source;
  prov["date"] = p.date;
  auto opt = [&](const char* key, const std::string& v) {
    if (!v.empty()) prov[key] = v;
  };
  opt("gpu", p.gpu);
  if (p.sm_count > 0) prov["sm_count"] = p.sm_count;
  if (p.sm_clock_mhz > 0) prov["sm_clock_mhz"] = p.sm_clock_mhz;
  if (p.memory_clock_mhz > 0) prov["memory_clock_mhz"] = p.memory_clock_mhz;
  opt("driver", p.driver);
  opt("cuda", p.cuda);
  opt("cublas", p.cublas);
  opt("note", p.note);
  j["provenance"] = prov;
  j["gemm"] = ordered_json::array();
  for (const auto& g : c.gemm) {
    ordered_json row;
    row["dtype"] = dtype_name(g.dtype);
    if (g.accumulation == Accumulation::fast) row["accumulation"] = accumulation_name(g.accumulation);
    row["m"] = static_cast<long>(g.m);
    row["n"] = static_cast<long>(g.n);
    row["k"] = static_cast<long>(g.k);
    row["batch"] = static_cast<long>(g.batch);
    row["tflops"] = g.achieved / 1e12;
    j["gemm"].push_back(row);
  }
  // Quantities are written in the units the reader parses, at full precision.
  if (c.memory_bandwidth) j["memory_bandwidth"] = format_quantity(*c.memory_bandwidth / 1e9, "GB/s");
  if (c.launch_overhead) j["launch_overhead"] = format_quantity(*c.launch_overhead * 1e6, "us");
  if (!c.elementwise.empty()) {
    j["elementwise"] = ordered_json::array();
    for (const auto& e : c.elementwise)
      j["elementwise"].push_back({{"name", e.name}, {"bytes", e.bytes}, {"time_us", e.time * 1e6}});
  }
  out << j.dump(2) << "\n";
}

}  // namespace trainsim::model

#include "model/memory_bound_kernels.hpp"

#include "core/json_reader.hpp"

namespace trainsim::model {

namespace {

constexpr const char* kSchema = "trainsim.memory_bound_kernels/1";

void read_provenance(JsonObject o, MemoryBoundKernels& k) {
  CalibrationProvenance& p = k.provenance;
  p.method = o.choice("method", {"measured", "published"});
  p.source = o.string("source");
  if (p.source.empty()) o.fail("source", "expected a non-empty source");
  p.date = o.string("date");
  k.framework = o.string("framework");
  if (k.framework.empty()) o.fail("framework", "expected the framework and version whose kernels were timed");
  p.gpu = o.string_or("gpu", "");
  p.driver = o.string_or("driver", "");
  p.cuda = o.string_or("cuda", "");
  p.note = o.string_or("note", "");
  p.sm_count = o.has("sm_count") ? o.positive_integer("sm_count") : 0;
  o.finish();
}

}  // namespace

MemoryBoundKernels load_memory_bound_kernels(const std::string& path) {
  const auto doc = read_json_file(path);
  JsonObject root = root_object(doc, path);
  if (root.string("schema") != kSchema)
    root.fail("schema", std::string("expected \"") + kSchema + "\"");
  MemoryBoundKernels k;
  k.file = path;
  read_provenance(root.object("provenance"), k);
  for (auto& e : root.object_array("kernels")) {
    ElementwiseSample s;
    s.name = e.string("name");
    if (s.name.empty()) e.fail("name", "expected a kernel class name");
    for (const auto& other : k.kernels)
      if (other.name == s.name) e.fail("name", "expected a name not used by another kernel");
    s.bytes = e.number("bytes");
    s.time = e.number("time_us") * 1e-6;
    if (s.bytes <= 0) e.fail("bytes", "expected a positive byte count");
    if (s.time <= 0) e.fail("time_us", "expected a positive time");
    e.allow("note");
    e.finish();
    k.kernels.push_back(s);
  }
  if (k.kernels.empty()) root.fail("kernels", "expected at least one kernel");
  root.allow("description");
  root.finish();
  return k;
}

}  // namespace trainsim::model

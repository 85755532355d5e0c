#include "pipeline/pipeline_result_json.hpp"

namespace trainsim::pipeline {

nlohmann::ordered_json to_json(const PipelineResult& r) {
  nlohmann::ordered_json epochs = nlohmann::ordered_json::array();
  for (const auto& e : r.epochs)
    epochs.push_back({{"time_s", e.time},
                      {"samples_per_s", e.samples_per_s},
                      {"wait_fraction", e.wait_fraction},
                      {"io_wait_fraction", e.io_wait_fraction},
                      {"cpu_wait_fraction", e.cpu_wait_fraction},
                      {"max_node_wait_fraction", e.max_node_wait_fraction},
                      {"min_node_wait_fraction", e.min_node_wait_fraction},
                      {"slowest_node", e.slowest_node},
                      {"accelerator_utilisation", e.accelerator_utilisation},
                      {"cpu_utilisation", e.cpu_utilisation},
                      {"bytes_page_cache", e.bytes_page_cache},
                      {"bytes_server_cache", e.bytes_server_cache},
                      {"bytes_disk", e.bytes_disk}});
  nlohmann::ordered_json diagnoses = nlohmann::ordered_json::array();
  for (const auto& d : r.diagnoses)
    diagnoses.push_back({{"rule", d.rule}, {"epoch", d.epoch}, {"evidence", d.evidence}});
  return {{"source", r.source},
          {"readers", r.readers},
          {"compute_bound_samples_per_s", r.compute_bound_samples_per_s},
          {"steps_per_epoch", r.steps_per_epoch},
          {"epochs", epochs},
          {"diagnoses", diagnoses}};
}

PipelineResult pipeline_result_from_json(const nlohmann::json& j) {
  PipelineResult r;
  r.source = j.at("source").get<std::string>();
  r.readers = j.at("readers").get<std::string>();
  r.compute_bound_samples_per_s = j.at("compute_bound_samples_per_s").get<double>();
  r.steps_per_epoch = j.at("steps_per_epoch").get<long>();
  for (const auto& e : j.at("epochs")) {
    EpochResult x;
    x.time = e.at("time_s").get<double>();
    x.samples_per_s = e.at("samples_per_s").get<double>();
    x.wait_fraction = e.at("wait_fraction").get<double>();
    x.io_wait_fraction = e.at("io_wait_fraction").get<double>();
    x.cpu_wait_fraction = e.at("cpu_wait_fraction").get<double>();
    x.max_node_wait_fraction = e.at("max_node_wait_fraction").get<double>();
    x.min_node_wait_fraction = e.at("min_node_wait_fraction").get<double>();
    x.slowest_node = e.at("slowest_node").get<int>();
    x.accelerator_utilisation = e.at("accelerator_utilisation").get<double>();
    x.cpu_utilisation = e.at("cpu_utilisation").get<double>();
    x.bytes_page_cache = e.at("bytes_page_cache").get<double>();
    x.bytes_server_cache = e.at("bytes_server_cache").get<double>();
    x.bytes_disk = e.at("bytes_disk").get<double>();
    r.epochs.push_back(x);
  }
  for (const auto& d : j.at("diagnoses"))
    r.diagnoses.push_back({d.at("rule").get<std::string>(), d.at("epoch").get<int>(),
                           d.at("evidence").get<std::string>()});
  return r;
}

}  // namespace trainsim::pipeline

#include "report/report.hpp"

#include <algorithm>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "core/text_format.hpp"
#include "model/checkpointing.hpp"
#include "model/encoder_decoder.hpp"
#include "model/transformer.hpp"

#include "pipeline/pipeline_result_json.hpp"
#include "report/pipeline_report.hpp"

namespace trainsim::report {

const char* status_of(const scenario::PointResult& r) {
  if (r.oom) return "oom";
  if (!r.not_simulated.empty()) return "not_simulated";
  return "simulated";
}

const scenario::PointResult* scaling_base(const std::vector<scenario::PointResult>& results) {
  for (const auto& r : results)
    if (std::string(status_of(r)) == "simulated") return &r;
  return results.empty() ? nullptr : &results.front();
}

std::vector<Row> make_rows(const std::vector<scenario::PointResult>& results) {
  std::vector<Row> rows;
  if (results.empty()) return rows;
  const auto& base = results.front();
  // Simulated scaling is against the first point that ran: an OOM or unscheduled first point
  // has no throughput to scale from.
  const auto& sim_base = *scaling_base(results);
  const double base_pa = std::string(status_of(sim_base)) == "simulated" ? sim_base.samples_per_s / sim_base.accelerators : 0;
  const double base_ref_pa =
      base.point.reference_samples_per_s ? *base.point.reference_samples_per_s / base.accelerators : 0;
  for (const auto& r : results) {
    Row row;
    row.result = &r;
    row.per_accelerator = r.samples_per_s / r.accelerators;
    row.scaling_efficiency = base_pa > 0 ? row.per_accelerator / base_pa : 0;
    // FLOPs the hardware executes per sequence: the model's, plus the layers' forward again when
    // activations are recomputed (how Megatron-LM reports TFLOP/s).
    const auto& m = r.point.model;
    double flops = model::model_flops_per_sequence(m);
    if (r.point.training.activation_checkpointing &&
        r.point.training.checkpoint_policy == plan::CheckpointPolicy::selective_op) {
      // The matmuls the policy recomputes (the attention kernel's output is saved).
      const model::LayerShape one{1, 1, false, true, r.point.training.fused_cross_entropy,
                                      r.point.training.eager_kernels};
      for (const auto& op : model::recomputed_forward_ops(m, one, model::Checkpointing::selective_op))
        if (op.kind == model::OpKind::gemm) flops += static_cast<double>(m.layers) * op.flops;
    } else if (r.point.training.activation_checkpointing &&
               r.point.training.checkpoint_policy == plan::CheckpointPolicy::selective_attention) {
      // The core attention's two batched matmuls again: 4 s^2 h per layer and sequence; with
      // fused attention the kernel's (half of it under a causal mask).
      const model::LayerShape one{1, 1, false, r.point.training.flash_attention, r.point.training.fused_cross_entropy,
                                  r.point.training.eager_kernels};
      for (const auto& op : model::recomputed_forward_ops(m, one, model::Checkpointing::selective_attention))
        if (op.kind == model::OpKind::gemm || op.kind == model::OpKind::fused_attention)
          flops += static_cast<double>(m.layers) * op.flops;
    } else if (r.point.training.activation_checkpointing && model::is_encoder_decoder(m))
      flops += model::blocks_forward_flops_per_sequence(m);  // both stacks' blocks, their own tokens
    else if (r.point.training.activation_checkpointing)
      flops += 2.0 * static_cast<double>(m.layers) * model::parameters_per_layer(m) * static_cast<double>(m.seq_len) +
               4.0 * static_cast<double>(m.layers * m.hidden) * static_cast<double>(m.seq_len * m.seq_len);
    row.tflops_per_accelerator = row.per_accelerator * flops / 1e12;
    if (r.point.reference_samples_per_s && std::string(status_of(r)) == "simulated") {
      row.has_reference = true;
      const double ref = *r.point.reference_samples_per_s;
      row.reference_per_accelerator = ref / r.accelerators;
      row.reference_efficiency = base_ref_pa > 0 ? row.reference_per_accelerator / base_ref_pa : 0;
      row.error_pct = 100.0 * (r.samples_per_s - ref) / ref;
    }
    if (r.point.reference_tflops_per_accelerator && std::string(status_of(r)) == "simulated") {
      row.has_tflops_reference = true;
      const double ref = *r.point.reference_tflops_per_accelerator;
      row.tflops_error_pct = 100.0 * (row.tflops_per_accelerator - ref) / ref;
    }
    if (r.point.reference_tflops_per_accelerator_at_least && std::string(status_of(r)) == "simulated")
      row.tflops_bound = judge_lower_bound(row.tflops_per_accelerator, *r.point.reference_tflops_per_accelerator_at_least);
    rows.push_back(row);
  }
  return rows;
}

std::optional<ReferenceError> reference_error(const Row& row) {
  const bool fitted = row.result->point.fitted;
  if (row.has_reference) return ReferenceError{row.error_pct, fitted, ErrorBasis::samples_per_s};
  if (row.has_tflops_reference) return ReferenceError{row.tflops_error_pct, fitted, ErrorBasis::tflops_per_accelerator};
  return std::nullopt;
}

namespace {

using text::fmt;

std::string gib(Bytes b) { return fmt("%.1f", b / (1024.0 * 1024.0 * 1024.0)); }

/// Thousands separators as the source prints them ("1,379.76").
std::string with_commas(double v) {
  std::string s = fmt("%.2f", v);
  const auto dot = s.find('.');
  for (long i = static_cast<long>(dot) - 3; i > (s[0] == '-' ? 1 : 0); i -= 3)
    s.insert(static_cast<std::size_t>(i), ",");
  return s;
}

/// The machines of the results that `keep`, each once, in the order the points first name them.
template <typename Keep>
std::vector<const scenario::Machine*> machines_of(const std::vector<scenario::PointResult>& results, Keep keep) {
  std::vector<const scenario::Machine*> out;
  for (const auto& r : results)
    if (keep(r) && std::find(out.begin(), out.end(), r.point.machine.get()) == out.end())
      out.push_back(r.point.machine.get());
  return out;
}

}  // namespace

void write_table(std::ostream& os, const scenario::Scenario& s,
                 const std::vector<scenario::PointResult>& results) {
  const auto rows = make_rows(results);
  // Points named after their node count print as the source's "instances" column; points with
  // their own labels (configurations of one size) print the label.
  std::size_t label_width = 0;
  for (const auto& r : results)
    if (r.point.label != std::to_string(r.point.nodes) + (r.point.nodes == 1 ? " instance" : " instances"))
      label_width = std::max(label_width, r.point.label.size() + 2);
  // A table measured on several instance types names each row's topology.
  const auto machines = machines_of(results, [](const scenario::PointResult&) { return true; });
  const bool mixed = machines.size() > 1;
  std::size_t topology_width = 0;
  for (const auto* m : machines) topology_width = std::max(topology_width, m->topology.name.size() + 2);
  os << s.title << "\n";
  os << (mixed ? "topologies " : "topology ");
  for (std::size_t k = 0; k < machines.size(); ++k) os << (k ? ", " : "") << machines[k]->topology.name;
  os << ", model " << s.model.name << ", reference: "
     << s.reference_source << "\n\n";
  if (label_width > 0) os << std::left << std::setw(static_cast<int>(label_width)) << "point";
  if (mixed) os << std::left << std::setw(static_cast<int>(topology_width)) << "topology";
  os << std::left << std::setw(10) << "instances" << std::right << std::setw(13) << "accelerators"
     << std::setw(12) << "seq/s" << std::setw(12) << "reference" << std::setw(9) << "error"
     << std::setw(12) << "seq/s/acc" << std::setw(12) << "reference" << std::setw(12)
     << "scaling" << std::setw(12) << "reference" << std::setw(11) << "step (s)" << std::setw(14)
     << "memory (GiB)" << "  fitted" << "\n";
  std::vector<ReferenceError> errors;
  for (const auto& row : rows) {
    const auto& r = *row.result;
    if (label_width > 0) os << std::left << std::setw(static_cast<int>(label_width)) << r.point.label;
    if (mixed)
      os << std::left << std::setw(static_cast<int>(topology_width)) << r.point.machine->topology.name;
    os << std::left << std::setw(10) << r.point.nodes << std::right << std::setw(13) << r.accelerators;
    if (r.oom) {
      const auto& worst = r.memory.ranks.front();
      os << "  OOM: " << r.memory.worst_rank << " needs " << gib(r.memory.worst_peak) << " of "
         << gib(worst.capacity) << " GiB (largest term " << worst.largest().name << " "
         << gib(worst.largest().bytes) << " GiB); " << r.memory.advice << "\n";
      continue;
    }
    if (!r.not_simulated.empty()) {
      os << "  fits (" << gib(r.memory.worst_peak) << " GiB), not simulated: " << r.not_simulated << "\n";
      continue;
    }
    os << std::setw(12) << with_commas(r.samples_per_s);
    if (row.has_reference) {
      os << std::setw(12) << with_commas(*r.point.reference_samples_per_s) << std::setw(9)
         << fmt("%+.1f%%", row.error_pct);
    } else {
      os << std::setw(12) << "-" << std::setw(9) << "-";
    }
    os << std::setw(12) << fmt("%.2f", row.per_accelerator);
    os << std::setw(12) << (row.has_reference ? fmt("%.2f", row.reference_per_accelerator) : "-");
    os << std::setw(12) << fmt("%.2f%%", 100 * row.scaling_efficiency);
    os << std::setw(12) << (row.has_reference ? fmt("%.2f%%", 100 * row.reference_efficiency) : "-");
    os << std::setw(11) << fmt("%.4f", r.step_time) << std::setw(14)
       << (gib(r.peak_memory) + "/" + gib(r.memory.ranks.front().capacity)) << "  "
       << (r.point.fitted ? "yes" : "no");
    if (row.has_tflops_reference) {
      os << "  TFLOP/s/acc " << fmt("%.1f", row.tflops_per_accelerator) << " (reference "
         << fmt("%.0f", *r.point.reference_tflops_per_accelerator) << ", " << fmt("%+.1f%%", row.tflops_error_pct)
         << ")";
    }
    if (row.tflops_bound) {
      os << "  TFLOP/s/acc " << fmt("%.1f", row.tflops_per_accelerator) << " (reference at least "
         << fmt("%.0f", *r.point.reference_tflops_per_accelerator_at_least) << ": " << verdict_text(*row.tflops_bound)
         << ")";
    }
    if (r.peak_reserved > 0) {
      os << "  reserved " << gib(r.peak_reserved) << " GiB";
      if (r.allocator_retries > 0) os << " (" << r.allocator_retries << " allocator retries)";
      if (r.allocator_out_of_memory) os << " (caching allocator out of memory)";
    }
    if (!r.completed) os << "  (DEADLOCK: not every task ran)";
    os << "\n";
    if (const auto e = reference_error(row)) errors.push_back(*e);
  }
  if (const auto line = summary_line(summarise_errors(errors)); !line.empty()) os << "\n" << line << "\n";
  if (const auto* base = scaling_base(results); base != nullptr && base != &results.front())
    os << (errors.empty() ? "\n" : "") << "scaling: relative to \"" << base->point.label
       << "\", the first point simulated\n";
  const auto bounded = std::count_if(rows.begin(), rows.end(), [](const Row& row) { return row.tflops_bound.has_value(); });
  if (bounded > 0) {
    const auto met = std::count_if(rows.begin(), rows.end(),
                                   [](const Row& row) { return row.tflops_bound && row.tflops_bound->meets; });
    os << (errors.empty() ? "\n" : "") << "lower bounds (TFLOP/s per accelerator, not counted as errors): " << met
       << " of " << bounded << " met\n";
  }
  const auto fitted_on = machines_of(results, [](const scenario::PointResult& r) { return r.point.fitted; });
  if (!fitted_on.empty()) {
    os << "fitted rows were used to fit:";
    for (const auto* m : fitted_on) {
      for (const auto& f : m->device.fitted) os << "\n  " << m->device.file << " " << f.json_path;
      for (const auto& f : m->collectives.fitted) os << "\n  " << m->collectives.file << " " << f;
    }
    os << "\n";
  }
  write_pipeline_notes(os, s, results);
}

void write_json(std::ostream& os, const scenario::Scenario& s,
                const std::vector<scenario::PointResult>& results, bool wall_time) {
  const auto rows = make_rows(results);
  nlohmann::ordered_json points = nlohmann::ordered_json::array();
  for (const auto& row : rows) {
    const auto& r = *row.result;
    nlohmann::ordered_json p;
    p["label"] = r.point.label;
    p["topology"] = r.point.machine->topology.name;
    p["nodes"] = r.point.nodes;
    p["accelerators"] = r.accelerators;
    p["status"] = status_of(r);
    if (!r.not_simulated.empty()) p["not_simulated"] = r.not_simulated;
    p["samples_per_s"] = r.samples_per_s;
    p["samples_per_s_per_accelerator"] = row.per_accelerator;
    p["scaling_efficiency"] = row.scaling_efficiency;
    p["tflops_per_accelerator"] = row.tflops_per_accelerator;
    p["step_time_s"] = r.step_time;
    p["completed"] = r.completed;
    p["sim_wall_s"] = wall_time ? nlohmann::ordered_json(r.sim_wall_s) : nlohmann::ordered_json();
    p["fitted"] = r.point.fitted;
    if (row.has_reference) {
      p["reference_samples_per_s"] = *r.point.reference_samples_per_s;
      p["reference_scaling_efficiency"] = row.reference_efficiency;
      p["error_pct"] = row.error_pct;
    }
    if (r.point.reference_tflops_per_accelerator) {
      const double ref = *r.point.reference_tflops_per_accelerator;
      p["reference_tflops_per_accelerator"] = ref;
      if (row.has_tflops_reference) p["tflops_error_pct"] = row.tflops_error_pct;
    }
    if (r.point.reference_tflops_per_accelerator_at_least) {
      p["reference_tflops_per_accelerator_at_least"] = *r.point.reference_tflops_per_accelerator_at_least;
      if (row.tflops_bound) {
        p["tflops_bound_verdict"] = row.tflops_bound->meets ? "meets" : "misses";
        p["tflops_bound_margin_pct"] = row.tflops_bound->margin_pct;
      }
    }
    nlohmann::ordered_json mem;
    mem["fits"] = r.memory.fits;
    mem["peak_bytes"] = r.memory.worst_peak;
    mem["capacity_bytes"] = r.memory.ranks.empty() ? 0.0 : r.memory.ranks.front().capacity;
    mem["worst_rank"] = r.memory.worst_rank;
    if (!r.memory.advice.empty()) mem["advice"] = r.memory.advice;
    if (std::string(status_of(r)) == "simulated") {
      mem["simulated_peak_bytes"] = r.peak_memory;
      mem["simulated_peak_rank"] = r.peak_memory_rank;
      mem["simulated_peak_time_s"] = r.peak_memory_time;
      mem["simulated_reserved_peak_bytes"] = r.peak_reserved;
      mem["allocator_retries"] = r.allocator_retries;
      mem["allocator_out_of_memory"] = r.allocator_out_of_memory;
    }
    p["memory"] = mem;
    p["global_batch"] = global_batch_json(global_batch(r.point, results.front().point));
    if (r.pipeline) p["pipeline"] = pipeline::to_json(*r.pipeline);
    points.push_back(p);
  }
  nlohmann::ordered_json doc;
  doc["scenario"] = s.name;
  doc["title"] = s.title;
  doc["topology"] = s.machine->topology.name;
  doc["model"] = s.model.name;
  doc["reference_source"] = s.reference_source;
  if (s.data) {
    const auto& t = s.data->diagnosis;
    doc["diagnosis_thresholds"] = {{"wait", t.wait},
                                   {"accelerator_utilisation", t.accelerator_utilisation},
                                   {"node_spread", t.node_spread},
                                   {"cpu_utilisation", t.cpu_utilisation},
                                   {"note", "assumptions; set in data.diagnosis"}};
  }
  doc["points"] = points;
  os << doc.dump(2) << "\n";
}

void write_csv(std::ostream& os, const scenario::Scenario& s,
               const std::vector<scenario::PointResult>& results, bool wall_time) {
  const auto rows = make_rows(results);
  os << "label,nodes,accelerators,samples_per_s,samples_per_s_per_accelerator,scaling_efficiency,"
        "step_time_s,reference_samples_per_s,error_pct,fitted,sim_wall_s,status,tflops_per_accelerator,"
        "peak_memory_bytes,capacity_bytes"
     << pipeline_csv_header(s) << "\n";
  for (const auto& row : rows) {
    const auto& r = *row.result;
    os << '"' << r.point.label << '"' << ',' << r.point.nodes << ',' << r.accelerators << ','
       << fmt("%.6g", r.samples_per_s) << ',' << fmt("%.6g", row.per_accelerator) << ','
       << fmt("%.6g", row.scaling_efficiency) << ',' << fmt("%.9g", r.step_time) << ',';
    if (row.has_reference)
      os << fmt("%.6g", *r.point.reference_samples_per_s) << ',' << fmt("%.4f", row.error_pct);
    else
      os << ',';
    os << ',' << (r.point.fitted ? "true" : "false") << ',';
    if (wall_time) os << fmt("%.6f", r.sim_wall_s);
    os << ',' << status_of(r) << ',' << fmt("%.6g", row.tflops_per_accelerator) << ','
       << fmt("%.6g", r.memory.worst_peak) << ','
       << fmt("%.6g", r.memory.ranks.empty() ? 0.0 : r.memory.ranks.front().capacity);
    os << pipeline_csv_fields(s, r) << "\n";
  }
}

}  // namespace trainsim::report

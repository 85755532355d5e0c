#include "layer_table.hpp"

#include <cstdio>
#include <sstream>

namespace trainsim::validate {

namespace {

[[noreturn]] void fail(const std::string& source, int line_no, const std::string& what) {
  throw UsageError(source + ":" + std::to_string(line_no) + ": " + what);
}

/// "NAME: hidden H, heads A, seq S, micro-batch B, ..." -> the layer options the run had.
LayerOptions read_header(const std::string& line, const std::string& source, int line_no) {
  const auto colon = line.find(": hidden ");
  const std::string name = line.substr(0, colon);
  long hidden = 0, heads = 0, seq = 0, batch = 0;
  if (std::sscanf(line.c_str() + colon, ": hidden %ld, heads %ld, seq %ld, micro-batch %ld", &hidden,
                  &heads, &seq, &batch) != 4)
    fail(source, line_no, "expected \"NAME: hidden H, heads A, seq S, micro-batch B, ...\"");
  std::vector<std::string> args = {"--micro-batch", std::to_string(batch)};
  if (name == "custom") {
    args.insert(args.end(), {"--hidden", std::to_string(hidden), "--heads", std::to_string(heads),
                             "--seq", std::to_string(seq)});
  } else {
    args.insert(args.end(), {"--model", name});
  }
  LayerOptions o = parse_layer_options(args);
  if (o.spec.hidden != hidden || o.spec.heads != heads || o.spec.seq_len != seq)
    fail(source, line_no, "the shape differs from the named model " + name + "'s");
  return o;
}

}  // namespace

std::vector<SavedLayerRun> read_layer_tables(std::istream& in, const std::string& source) {
  std::vector<SavedLayerRun> runs;
  bool in_table = false;
  std::string line;
  int line_no = 0;
  const std::string total_label = "total (whole pass)";
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find(": hidden ") != std::string::npos) {
      if (in_table) fail(source, line_no, "a table starts before the last one's total");
      runs.push_back({read_header(line, source, line_no), {}, 0});
      in_table = true;
      continue;
    }
    if (!in_table || line.rfind("kernel ", 0) == 0) continue;
    std::string name;
    std::string rest = line;
    if (line.rfind(total_label, 0) == 0) {
      name = total_label;
      rest = line.substr(total_label.size());
    } else {
      std::istringstream words(line);
      words >> name;
      std::getline(words, rest);
    }
    double measured_us = 0;
    if (std::sscanf(rest.c_str(), " %lf", &measured_us) != 1 || measured_us <= 0)
      fail(source, line_no, "expected a kernel row: name, measured us, predicted us, error");
    if (name == total_label) {
      runs.back().measured_total = measured_us * 1e-6;
      in_table = false;
    } else {
      runs.back().measured.emplace_back(name, measured_us * 1e-6);
    }
  }
  if (in_table) fail(source, line_no, "the last table has no \"" + total_label + "\" row");
  return runs;
}

}  // namespace trainsim::validate

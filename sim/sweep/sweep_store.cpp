#include "sweep/sweep_store.hpp"

#include <filesystem>
#include <sstream>

#include "core/error.hpp"

namespace trainsim::sweep {

namespace fs = std::filesystem;

SweepStore::SweepStore(std::string dir, const nlohmann::json& manifest) : dir_(std::move(dir)) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec || !fs::is_directory(dir_)) throw ConfigError(dir_, "", "cannot create the --out folder");
  const fs::path manifest_file = fs::path(dir_) / "sweep.json";
  if (fs::exists(manifest_file)) {
    std::ifstream in(manifest_file);
    nlohmann::json old;
    try {
      old = nlohmann::json::parse(in);
    } catch (const nlohmann::json::parse_error&) {
      old = nullptr;
    }
    if (old != manifest)
      throw ConfigError(manifest_file.string(), "",
                        "this --out folder holds another sweep (different scenario or --set "
                        "values); use a new folder or delete this one");
  } else {
    write_file("sweep.json", manifest.dump(2) + "\n");
  }
  const fs::path log_file = fs::path(dir_) / "points.jsonl";
  {
    std::ifstream in(log_file);
    for (std::string line; std::getline(in, line);) {
      try {
        auto rec = nlohmann::ordered_json::parse(line);
        finished_[rec.at("key").get<std::string>()] = rec;
      } catch (const nlohmann::json::exception&) {
        // A line cut short when the sweep was killed: that point is simulated again.
      }
    }
  }
  // Rewrite the log without any cut-short line, so appends start on a fresh line.
  std::ostringstream clean;
  for (const auto& [key, rec] : finished_) clean << rec.dump() << "\n";
  write_file("points.jsonl", clean.str());
  log_.open(log_file, std::ios::app);
  if (!log_) throw ConfigError(log_file.string(), "", "cannot write");
}

void SweepStore::append(const nlohmann::ordered_json& record) {
  log_ << record.dump() << "\n";
  log_.flush();
  finished_[record.at("key").get<std::string>()] = record;
}

void SweepStore::write_file(const std::string& name, const std::string& text) const {
  const fs::path target = fs::path(dir_) / name;
  const fs::path tmp = fs::path(dir_) / (name + ".tmp");
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out) throw ConfigError(tmp.string(), "", "cannot write");
    out << text;
  }
  fs::rename(tmp, target);
}

}  // namespace trainsim::sweep

#include "provenance.hpp"

#include <ctime>
#include <fstream>
#include <regex>
#include <sstream>

namespace trainsim::validate {

std::string today_utc() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &utc);
  return buf;
}

std::string parse_nvidia_driver_version(const std::string& proc_text) {
  static const std::regex version(R"(Kernel Module(?: for [^ ]+)?\s+([0-9]+(?:\.[0-9]+)+))");
  std::smatch m;
  if (std::regex_search(proc_text, m, version)) return m[1];
  return "";
}

std::string read_nvidia_driver_version() {
  std::ifstream in("/proc/driver/nvidia/version");
  if (!in) return "";
  std::stringstream text;
  text << in.rdbuf();
  return parse_nvidia_driver_version(text.str());
}

std::string dotted_version(long code) {
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." +
         std::to_string(code % 100);
}

std::string cuda_version(int code) {
  return std::to_string(code / 1000) + "." + std::to_string(code % 1000 / 10);
}

}  // namespace trainsim::validate

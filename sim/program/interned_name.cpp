#include "program/interned_name.hpp"

#include <deque>
#include <mutex>
#include <ostream>
#include <unordered_map>
#include <vector>

#include "core/error.hpp"

namespace trainsim::program {

namespace {

struct NameTable {
  std::mutex mutex;
  std::deque<std::string> texts;  // a deque never moves its elements: the views below stay valid
  std::vector<const std::string*> by_id;
  std::unordered_map<std::string_view, std::uint32_t> ids;

  NameTable() {
    texts.emplace_back();
    by_id.push_back(&texts.back());
    ids.emplace(texts.back(), 0);
  }
};

NameTable& table() {
  // Never destroyed: names may be read by destructors of other static objects.
  static auto* t = new NameTable;
  return *t;
}

}  // namespace

InternedName::InternedName(std::string_view text) {
  if (text.empty()) return;
  NameTable& t = table();
  const std::lock_guard<std::mutex> lock(t.mutex);
  if (auto it = t.ids.find(text); it != t.ids.end()) {
    id_ = it->second;
    return;
  }
  TRAINSIM_CHECK(t.by_id.size() < UINT32_MAX, "too many distinct task names");
  id_ = static_cast<std::uint32_t>(t.by_id.size());
  t.texts.emplace_back(text);
  t.by_id.push_back(&t.texts.back());
  t.ids.emplace(t.texts.back(), id_);
}

const std::string& InternedName::str() const {
  NameTable& t = table();
  const std::lock_guard<std::mutex> lock(t.mutex);
  return *t.by_id[id_];
}

std::ostream& operator<<(std::ostream& os, const InternedName& n) { return os << n.str(); }

}  // namespace trainsim::program

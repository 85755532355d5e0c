#pragma once
// The ranks of a collective call, interned. A 1,024-GPU job with per-step TP overlap makes
// millions of calls but only a few thousand distinct groups (every call of a tensor-parallel group
// has the same members), so each group is kept once in a process-wide table and a call holds a
// pointer to it: making a call allocates nothing, and two calls have the same group exactly when
// they hold the same pointer. Read like a const std::vector<int>.
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <vector>

namespace trainsim::program {

class RankGroup {
public:
  using value_type = int;
  using const_iterator = std::vector<int>::const_iterator;
  using iterator = const_iterator;

  RankGroup();  ///< the empty group
  // Implicit, so schedules and tests keep writing groups as vectors and brace lists.
  RankGroup(const std::vector<int>& ranks);     // NOLINT(google-explicit-constructor)
  RankGroup(std::initializer_list<int> ranks);  // NOLINT(google-explicit-constructor)

  /// The members in call order; the reference stays valid for the life of the process.
  [[nodiscard]] const std::vector<int>& ranks() const { return entry_->ranks; }
  operator const std::vector<int>&() const { return ranks(); }  // NOLINT(google-explicit-constructor)
  /// Dense, in order of first use in this process (not stable across processes: never write it).
  [[nodiscard]] std::uint32_t id() const { return entry_->id; }

  [[nodiscard]] const_iterator begin() const { return ranks().begin(); }
  [[nodiscard]] const_iterator end() const { return ranks().end(); }
  [[nodiscard]] std::size_t size() const { return ranks().size(); }
  [[nodiscard]] bool empty() const { return ranks().empty(); }
  [[nodiscard]] int front() const { return ranks().front(); }
  [[nodiscard]] int back() const { return ranks().back(); }
  int operator[](std::size_t i) const { return ranks()[i]; }

  bool operator==(const RankGroup& o) const { return entry_ == o.entry_; }
  bool operator!=(const RankGroup& o) const { return entry_ != o.entry_; }

  struct Entry {
    std::vector<int> ranks;
    std::uint32_t id = 0;
  };

private:
  const Entry* entry_;
};

// Comparing with a vector compares the members, without adding them to the table.
inline bool operator==(const RankGroup& a, const std::vector<int>& b) { return a.ranks() == b; }
inline bool operator==(const std::vector<int>& a, const RankGroup& b) { return b == a; }
inline bool operator!=(const RankGroup& a, const std::vector<int>& b) { return !(a == b); }
inline bool operator!=(const std::vector<int>& a, const RankGroup& b) { return !(b == a); }

std::ostream& operator<<(std::ostream& os, const RankGroup& g);

}  // namespace trainsim::program

#pragma once
// Names of tasks and collective calls, interned. A 1,024-GPU job has millions of tasks but only a
// few thousand distinct names (every rank of a stage names its tasks alike), so each name is kept
// once in a process-wide table and a task holds its 4-byte id: copying a name allocates nothing
// and comparing two names compares two ids. The text is there whenever a trace, a report or an
// error message asks for it.
#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>

namespace trainsim::program {

class InternedName {
public:
  InternedName() = default;  ///< the empty name
  // Implicit, so schedules keep writing names as strings.
  InternedName(std::string_view text);  // NOLINT(google-explicit-constructor)
  InternedName(const std::string& text) : InternedName(std::string_view(text)) {}  // NOLINT
  InternedName(const char* text) : InternedName(std::string_view(text)) {}         // NOLINT

  /// The text; the reference stays valid for the life of the process.
  [[nodiscard]] const std::string& str() const;
  operator const std::string&() const { return str(); }  // NOLINT(google-explicit-constructor)
  [[nodiscard]] bool empty() const { return id_ == 0; }
  /// Dense, in order of first use in this process (not stable across processes: never write it).
  [[nodiscard]] std::uint32_t id() const { return id_; }

  bool operator==(const InternedName& o) const { return id_ == o.id_; }
  bool operator!=(const InternedName& o) const { return id_ != o.id_; }

private:
  std::uint32_t id_ = 0;
};

// Comparing with text compares the text, without adding it to the table.
inline bool operator==(const InternedName& a, const std::string& b) { return a.str() == b; }
inline bool operator==(const std::string& a, const InternedName& b) { return b == a; }
inline bool operator==(const InternedName& a, const char* b) { return a.str() == b; }
inline bool operator==(const char* a, const InternedName& b) { return b == a; }
inline bool operator!=(const InternedName& a, const std::string& b) { return !(a == b); }
inline bool operator!=(const std::string& a, const InternedName& b) { return !(b == a); }
inline bool operator!=(const InternedName& a, const char* b) { return !(a == b); }
inline bool operator!=(const char* a, const InternedName& b) { return !(b == a); }

inline std::string operator+(const InternedName& a, const std::string& b) { return a.str() + b; }
inline std::string operator+(const std::string& a, const InternedName& b) { return a + b.str(); }
inline std::string operator+(const InternedName& a, const char* b) { return a.str() + b; }
inline std::string operator+(const char* a, const InternedName& b) { return a + b.str(); }

std::ostream& operator<<(std::ostream& os, const InternedName& n);

}  // namespace trainsim::program

#pragma once
// The tasks a task waits for. Nearly every task waits for one to three others (the previous pass,
// a gather, a received activation), and a 1,024-GPU job has millions of tasks: up to three are
// kept inside the task, so building a program does not allocate per task. A task that waits for
// more (an optimizer step after every gradient reduction) spills to the heap.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <vector>

namespace trainsim::program {

struct TaskRef {
  int stream = 0;  ///< index into RankProgram::streams
  int index = 0;   ///< index into Stream::tasks
  bool operator==(const TaskRef& o) const { return stream == o.stream && index == o.index; }
  bool operator!=(const TaskRef& o) const { return !(*this == o); }
};

class TaskDeps {
public:
  using value_type = TaskRef;
  using iterator = TaskRef*;
  using const_iterator = const TaskRef*;

  TaskDeps() = default;
  TaskDeps(std::initializer_list<TaskRef> refs) { assign(refs.begin(), refs.size()); }
  // Implicit, so schedules keep collecting dependencies in a std::vector.
  TaskDeps(const std::vector<TaskRef>& refs) { assign(refs.data(), refs.size()); }  // NOLINT
  TaskDeps(const TaskDeps& o) { assign(o.data(), o.size_); }
  TaskDeps(TaskDeps&& o) noexcept { take(o); }
  TaskDeps& operator=(const TaskDeps& o) {
    if (this != &o) {
      release();
      assign(o.data(), o.size_);
    }
    return *this;
  }
  TaskDeps& operator=(TaskDeps&& o) noexcept {
    if (this != &o) {
      release();
      take(o);
    }
    return *this;
  }
  ~TaskDeps() { release(); }

  [[nodiscard]] std::size_t size() const { return size_; }
  [[nodiscard]] bool empty() const { return size_ == 0; }
  [[nodiscard]] const TaskRef* data() const { return on_heap() ? store_.heap : store_.local; }
  [[nodiscard]] TaskRef* data() { return on_heap() ? store_.heap : store_.local; }
  [[nodiscard]] const_iterator begin() const { return data(); }
  [[nodiscard]] const_iterator end() const { return data() + size_; }
  [[nodiscard]] iterator begin() { return data(); }
  [[nodiscard]] iterator end() { return data() + size_; }
  const TaskRef& operator[](std::size_t i) const { return data()[i]; }
  TaskRef& operator[](std::size_t i) { return data()[i]; }

  void push_back(const TaskRef& r) {
    if (size_ == capacity_) grow(2 * capacity_);
    data()[size_++] = r;
  }
  void clear() { size_ = 0; }

  friend bool operator==(const TaskDeps& a, const TaskDeps& b) { return equal(a, b.data(), b.size()); }
  friend bool operator!=(const TaskDeps& a, const TaskDeps& b) { return !(a == b); }
  friend bool operator==(const TaskDeps& a, const std::vector<TaskRef>& b) { return equal(a, b.data(), b.size()); }
  friend bool operator==(const std::vector<TaskRef>& a, const TaskDeps& b) { return b == a; }

private:
  static constexpr std::uint32_t kLocal = 3;
  union Store {
    TaskRef local[kLocal];
    TaskRef* heap;
    Store() : heap(nullptr) {}
  };

  [[nodiscard]] bool on_heap() const { return capacity_ > kLocal; }
  static bool equal(const TaskDeps& a, const TaskRef* b, std::size_t n) {
    return a.size_ == n && std::equal(a.begin(), a.end(), b);
  }
  void assign(const TaskRef* refs, std::size_t n) {
    if (n > capacity_) grow(static_cast<std::uint32_t>(n));
    std::copy(refs, refs + n, data());
    size_ = static_cast<std::uint32_t>(n);
  }
  void grow(std::uint32_t capacity) {
    auto* heap = new TaskRef[capacity];
    std::copy(begin(), end(), heap);
    const std::uint32_t n = size_;
    release();
    store_.heap = heap;
    size_ = n;
    capacity_ = capacity;
  }
  void take(TaskDeps& o) {
    std::memcpy(static_cast<void*>(&store_), &o.store_, sizeof store_);
    size_ = o.size_;
    capacity_ = o.capacity_;
    o.size_ = 0;
    o.capacity_ = kLocal;
  }
  void release() {
    if (on_heap()) delete[] store_.heap;
    size_ = 0;
    capacity_ = kLocal;
  }

  Store store_;
  std::uint32_t size_ = 0;
  std::uint32_t capacity_ = kLocal;
};

}  // namespace trainsim::program

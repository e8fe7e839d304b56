// Attributes: the small typed values torch ops carry (dim=-1, keepdim=True, eps=1e-6, ...).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace tessera {

using AttrValue = std::variant<bool, int64_t, double, std::string, std::vector<int64_t>>;

// Python-like rendering: True, -1, 1e-06, 'tanh', (1024,)
std::string attr_str(const AttrValue& v);

// An ordered list of attributes: the order is the order the printer uses.
class Attrs {
 public:
  void set(std::string key, AttrValue v);
  const AttrValue* find(std::string_view key) const;
  bool has(std::string_view key) const { return find(key) != nullptr; }
  int64_t get_int(std::string_view key, int64_t fallback) const;
  double get_float(std::string_view key, double fallback) const;   // accepts ints too
  bool get_bool(std::string_view key, bool fallback) const;
  std::string get_string(std::string_view key, std::string fallback) const;
  const std::vector<std::pair<std::string, AttrValue>>& items() const { return items_; }
  bool empty() const { return items_.empty(); }
  friend bool operator==(const Attrs& a, const Attrs& b) { return a.items_ == b.items_; }

 private:
  std::vector<std::pair<std::string, AttrValue>> items_;
};

}  // namespace tessera

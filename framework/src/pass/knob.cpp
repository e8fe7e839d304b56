// Knob schema helpers: type names and checks, one-line descriptions, and the YAML spelling of knob
// values (typing plain scalars by content, and printing values so they read back unchanged).
#include "tessera/pass/knob.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <type_traits>

namespace tessera {

std::string_view knob_type_name(KnobType t) {
  switch (t) {
    case KnobType::Bool: return "bool";
    case KnobType::Int: return "int";
    case KnobType::Float: return "float";
    case KnobType::String: return "string";
    case KnobType::IntList: return "int-list";
  }
  return "int";
}

bool knob_value_has_type(const AttrValue& v, KnobType t) {
  switch (t) {
    case KnobType::Bool: return std::holds_alternative<bool>(v);
    case KnobType::Int: return std::holds_alternative<int64_t>(v);
    case KnobType::Float: return std::holds_alternative<double>(v) || std::holds_alternative<int64_t>(v);
    case KnobType::String: return std::holds_alternative<std::string>(v);
    case KnobType::IntList: return std::holds_alternative<std::vector<int64_t>>(v);
  }
  return false;
}

std::string describe_knob(const KnobSpec& k) {
  std::string s = k.name + " (" + std::string(knob_type_name(k.type)) + ", default: ";
  s += k.default_value ? knob_value_str(*k.default_value) : std::string("heuristic");
  if (!k.candidates.empty()) {
    s += ", candidates: ";
    for (size_t i = 0; i < k.candidates.size(); ++i) {
      if (i) s += ", ";
      s += knob_value_str(k.candidates[i]);
    }
  }
  s += ")";
  if (!k.help.empty()) s += " \u2014 " + k.help;
  return s;
}

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Index just past a run of digits starting at `i`.
size_t skip_digits(std::string_view s, size_t i) {
  while (i < s.size() && is_digit(s[i])) ++i;
  return i;
}

// [-+]?[0-9]+ (YAML 1.2 core schema, decimal only).
bool looks_like_int(std::string_view s) {
  size_t i = (!s.empty() && (s[0] == '-' || s[0] == '+')) ? 1 : 0;
  return i < s.size() && skip_digits(s, i) == s.size();
}

// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? (YAML 1.2 core schema).
bool looks_like_float(std::string_view s) {
  size_t i = (!s.empty() && (s[0] == '-' || s[0] == '+')) ? 1 : 0;
  if (i < s.size() && s[i] == '.') {
    size_t j = skip_digits(s, i + 1);
    if (j == i + 1) return false;
    i = j;
  } else {
    size_t j = skip_digits(s, i);
    if (j == i) return false;
    i = j;
    if (i < s.size() && s[i] == '.') i = skip_digits(s, i + 1);
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    size_t j = skip_digits(s, i);
    if (j == i) return false;
    i = j;
  }
  return i == s.size();
}

std::optional<double> special_float(std::string_view s) {
  bool negative = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s == ".inf" || s == ".Inf" || s == ".INF") return negative ? -HUGE_VAL : HUGE_VAL;
  return std::nullopt;
}

bool is_nan_word(std::string_view s) { return s == ".nan" || s == ".NaN" || s == ".NAN"; }

// Words a plain scalar must not be spelled as when it means a string: YAML reads them as null.
bool is_null_word(std::string_view s) {
  return s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL";
}

// Whether `s` can be written as a plain scalar anywhere in a pipeline file (block or flow
// context) and read back as the same text. Deliberately conservative: quoting is always safe.
bool plain_scalar_safe(std::string_view s) {
  if (is_null_word(s)) return false;
  constexpr std::string_view kIndicators = "-?:,[]{}#&*!|>'\"%@`";
  if (kIndicators.find(s.front()) != std::string_view::npos) return false;
  if (s.front() == ' ' || s.back() == ' ') return false;
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f) return false;
    if (c == ',' || c == '[' || c == ']' || c == '{' || c == '}' || c == '#' || c == ':') return false;
  }
  return true;
}

std::string double_quoted(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (u < 0x20 || u == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", u);
          out += buf;
        } else {
          out += c;  // UTF-8 bytes pass through: YAML double-quoted scalars accept them raw
        }
    }
  }
  return out + "\"";
}

std::string float_str(double d) {
  if (std::isnan(d)) return ".nan";
  if (std::isinf(d)) return d < 0 ? "-.inf" : ".inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d);  // shortest text that reads back exactly
  std::string s(buf, res.ptr);
  // Keep it a float when read back: 1 -> 1.0.
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

}  // namespace

std::optional<AttrValue> parse_knob_value(std::string_view text) {
  if (text == "auto") return std::nullopt;
  if (text == "true" || text == "True" || text == "TRUE") return AttrValue(true);
  if (text == "false" || text == "False" || text == "FALSE") return AttrValue(false);
  std::string_view digits = (!text.empty() && text[0] == '+') ? text.substr(1) : text;
  if (looks_like_int(text)) {
    int64_t v = 0;
    auto res = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    if (res.ec == std::errc() && res.ptr == digits.data() + digits.size()) return AttrValue(v);
    return AttrValue(std::string(text));  // out of int64 range: left as text, rejected by type checks
  }
  if (looks_like_float(text)) {
    double v = 0;
    auto res = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    if (res.ec == std::errc() && res.ptr == digits.data() + digits.size()) return AttrValue(v);
    return AttrValue(std::string(text));
  }
  if (auto inf = special_float(text)) return AttrValue(*inf);
  if (is_nan_word(text)) return AttrValue(std::nan(""));
  return AttrValue(std::string(text));
}

std::string knob_value_str(const AttrValue& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>) {
          return x ? "true" : "false";
        } else if constexpr (std::is_same_v<T, int64_t>) {
          return std::to_string(x);
        } else if constexpr (std::is_same_v<T, double>) {
          return float_str(x);
        } else if constexpr (std::is_same_v<T, std::string>) {
          auto typed = parse_knob_value(x);
          bool reads_back = typed && std::holds_alternative<std::string>(*typed);
          return reads_back && plain_scalar_safe(x) ? x : double_quoted(x);
        } else {
          std::string s = "[";
          for (size_t i = 0; i < x.size(); ++i) {
            if (i) s += ", ";
            s += std::to_string(x[i]);
          }
          return s + "]";
        }
      },
      v);
}

}  // namespace tessera

// Attributes: Python-like rendering of attribute values and the ordered attribute list.
#include "tessera/ir/attr.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace tessera {
namespace {

// Python's repr(float): shortest digits that round-trip, positional notation for decimal
// exponents in [-5, 16), scientific otherwise ("1e-06", "1e+16"), and ".0" for integral values.
std::string python_float_repr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";

  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::scientific);
  std::string_view sci(buf, static_cast<size_t>(res.ptr - buf));  // "-1.2345e-06"

  bool negative = false;
  if (!sci.empty() && sci.front() == '-') {
    negative = true;
    sci.remove_prefix(1);
  }
  size_t e_pos = sci.find('e');
  std::string_view mantissa = sci.substr(0, e_pos);
  int exponent = std::atoi(std::string(sci.substr(e_pos + 1)).c_str());
  std::string digits;
  for (char c : mantissa) {
    if (c != '.') digits += c;
  }

  std::string out = negative ? "-" : "";
  // Same cut-over as CPython's float_repr_style 'short' (decpt <= -4 or decpt > 16).
  if (exponent < -4 || exponent >= 16) {
    out += digits[0];
    if (digits.size() > 1) {
      out += '.';
      out += digits.substr(1);
    }
    out += 'e';
    out += exponent < 0 ? '-' : '+';
    int mag = std::abs(exponent);
    if (mag < 10) out += '0';
    out += std::to_string(mag);
    return out;
  }
  int point = exponent + 1;  // digits before the decimal point
  if (point <= 0) {
    out += "0.";
    out.append(static_cast<size_t>(-point), '0');
    out += digits;
  } else if (static_cast<size_t>(point) >= digits.size()) {
    out += digits;
    out.append(static_cast<size_t>(point) - digits.size(), '0');
    out += ".0";
  } else {
    out += digits.substr(0, static_cast<size_t>(point));
    out += '.';
    out += digits.substr(static_cast<size_t>(point));
  }
  return out;
}

// Python's repr(str) for the common case: single quotes unless the text contains a single quote
// and no double quote, with backslash escapes for quotes, backslashes and control characters.
std::string python_str_repr(const std::string& s) {
  bool has_single = s.find('\'') != std::string::npos;
  bool has_double = s.find('"') != std::string::npos;
  char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  for (unsigned char c : s) {
    if (c == static_cast<unsigned char>(quote) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "\\x%02x", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += quote;
  return out;
}

std::string int_tuple_repr(const std::vector<int64_t>& values) {
  std::string out = "(";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(values[i]);
  }
  if (values.size() == 1) out += ",";
  out += ")";
  return out;
}

}  // namespace

std::string attr_str(const AttrValue& v) {
  if (const bool* b = std::get_if<bool>(&v)) return *b ? "True" : "False";
  if (const int64_t* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (const double* d = std::get_if<double>(&v)) return python_float_repr(*d);
  if (const std::string* s = std::get_if<std::string>(&v)) return python_str_repr(*s);
  return int_tuple_repr(std::get<std::vector<int64_t>>(v));
}

void Attrs::set(std::string key, AttrValue v) {
  for (auto& [k, value] : items_) {
    if (k == key) {
      value = std::move(v);  // keep the original position so printing order is stable
      return;
    }
  }
  items_.emplace_back(std::move(key), std::move(v));
}

const AttrValue* Attrs::find(std::string_view key) const {
  for (const auto& [k, value] : items_) {
    if (k == key) return &value;
  }
  return nullptr;
}

int64_t Attrs::get_int(std::string_view key, int64_t fallback) const {
  const AttrValue* v = find(key);
  if (v == nullptr) return fallback;
  if (const int64_t* i = std::get_if<int64_t>(v)) return *i;
  return fallback;
}

double Attrs::get_float(std::string_view key, double fallback) const {
  const AttrValue* v = find(key);
  if (v == nullptr) return fallback;
  if (const double* d = std::get_if<double>(v)) return *d;
  if (const int64_t* i = std::get_if<int64_t>(v)) return static_cast<double>(*i);
  return fallback;
}

bool Attrs::get_bool(std::string_view key, bool fallback) const {
  const AttrValue* v = find(key);
  if (v == nullptr) return fallback;
  if (const bool* b = std::get_if<bool>(v)) return *b;
  return fallback;
}

std::string Attrs::get_string(std::string_view key, std::string fallback) const {
  const AttrValue* v = find(key);
  if (v == nullptr) return fallback;
  if (const std::string* s = std::get_if<std::string>(v)) return *s;
  return fallback;
}

}  // namespace tessera

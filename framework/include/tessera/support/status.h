// Status and Expected<T>: error values with locations, used everywhere instead of exceptions.
//
//   Status s = run_pass(...);           if (!s) return s;
//   Expected<Graph> g = parse(...);     if (!g) return g.error();   use *g / g->...
//   TESSERA_TRY(s);                     // early-return a failed Status
//   TESSERA_ASSIGN_OR_RETURN(auto v, expr);
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "tessera/support/diagnostics.h"

namespace tessera {

class [[nodiscard]] Status {
 public:
  Status() = default;  // success
  Status(Diagnostic d) : error_(std::move(d)) {}  // NOLINT: implicit on purpose, `return make_error(...)`
  static Status ok() { return Status(); }

  bool is_ok() const { return !error_.has_value(); }
  explicit operator bool() const { return is_ok(); }
  const Diagnostic& error() const& { return *error_; }
  Diagnostic& error() & { return *error_; }
  Diagnostic&& error() && { return std::move(*error_); }
  std::string message() const { return is_ok() ? std::string() : error_->render(); }

 private:
  std::optional<Diagnostic> error_;
};

template <class T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::in_place_index<0>, std::move(value)) {}          // NOLINT
  Expected(Diagnostic d) : v_(std::in_place_index<1>, std::move(d)) {}         // NOLINT
  Expected(Status s) : v_(std::in_place_index<1>, std::move(s).error()) {}     // NOLINT: s must be an error

  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Diagnostic& error() const& { return std::get<1>(v_); }
  Diagnostic&& error() && { return std::get<1>(std::move(v_)); }
  Status status() const { return has_value() ? Status() : Status(error()); }

 private:
  std::variant<T, Diagnostic> v_;
};

}  // namespace tessera

#define TESSERA_TRY(expr)                         \
  do {                                            \
    ::tessera::Status tessera_try_s_ = (expr);    \
    if (!tessera_try_s_) return tessera_try_s_;   \
  } while (0)

#define TESSERA_CONCAT_INNER_(a, b) a##b
#define TESSERA_CONCAT_(a, b) TESSERA_CONCAT_INNER_(a, b)
#define TESSERA_ASSIGN_OR_RETURN(lhs, expr)                                         \
  auto TESSERA_CONCAT_(tessera_e_, __LINE__) = (expr);                               \
  if (!TESSERA_CONCAT_(tessera_e_, __LINE__))                                        \
    return std::move(TESSERA_CONCAT_(tessera_e_, __LINE__)).error();                 \
  lhs = std::move(*TESSERA_CONCAT_(tessera_e_, __LINE__))

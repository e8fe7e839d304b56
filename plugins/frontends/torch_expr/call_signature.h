// CallSignature and BoundArguments: Python-style argument binding for catalog functions, tensor
// methods and module constructors, with typed accessors. Every binding or type error is located
// at the offending argument (or at the call when an argument is missing).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "source_text.h"
#include "tessera/ir/type.h"
#include "tessera/support/status.h"
#include "traced_value.h"

namespace tessera::torch_expr {

// One evaluated argument of a call.
struct ArgumentValue {
  std::string keyword;  // empty for positional
  SourceSpan keyword_span;
  TracedValue value;
  SourceSpan span;      // the argument expression
};

struct CallSite {
  std::string callee;     // as shown in messages: "torch.matmul", "x.mean", "nn.Linear"
  SourceSpan span;        // the whole call expression
  std::string name_hint;  // the variable the result is assigned to, if any
};

class BoundArguments {
 public:
  BoundArguments(const SourceText& source, CallSite site) : source_(&source), site_(std::move(site)) {}

  const CallSite& site() const { return site_; }
  const TracedValue& value(const std::string& name) const;
  bool is_none(const std::string& name) const { return value(name).is<NoneValue>(); }
  bool given(const std::string& name) const;
  // The argument's span, or the call's when the argument took its default.
  SourceSpan span(const std::string& name) const;
  // An error located at argument `name`.
  Diagnostic error(const std::string& name, std::string message) const;

  Expected<std::string> tensor(const std::string& name) const;
  Expected<std::optional<std::string>> optional_tensor(const std::string& name) const;
  Expected<int64_t> integer(const std::string& name) const;
  Expected<std::optional<int64_t>> optional_integer(const std::string& name) const;
  Expected<double> number(const std::string& name) const;
  Expected<std::optional<double>> optional_number(const std::string& name) const;
  Expected<bool> boolean(const std::string& name) const;
  Expected<std::string> string(const std::string& name) const;
  // An int or a tuple/list of ints (normalized_shape=2048 or (2048,); dim=-1 or (0, 1)).
  Expected<std::vector<int64_t>> int_list(const std::string& name) const;
  Expected<std::optional<std::vector<int64_t>>> optional_int_list(const std::string& name) const;
  Expected<std::optional<DType>> optional_dtype(const std::string& name) const;
  // A `*size` parameter: sizes as separate ints `(2, 3)` or as one tuple/list `((2, 3),)`.
  Expected<std::vector<int64_t>> sizes(const std::string& name) const;

 private:
  friend class CallSignature;
  struct Slot {
    TracedValue value;
    SourceSpan span;
    bool given = false;
  };
  Diagnostic type_error(const std::string& name, std::string_view expected) const;

  const SourceText* source_;
  CallSite site_;
  std::map<std::string, Slot> slots_;
};

class CallSignature {
 public:
  // A Python parameter list: "input, dim=None, keepdim=False", "*size, dtype=None",
  // "input, *, approximate='none'". Defaults are literals: None, True, False, numbers, strings, ().
  explicit CallSignature(std::string_view params);

  // "(input, dim=None, keepdim=False)"
  std::string str() const { return "(" + text_ + ")"; }
  std::vector<std::string> parameter_names() const;

  Expected<BoundArguments> bind(const std::vector<ArgumentValue>& args, const CallSite& site,
                                const SourceText& source) const;

 private:
  struct Param {
    std::string name;
    std::optional<TracedValue> default_value;  // none: required
    bool var_positional = false;
    bool keyword_only = false;
  };
  std::string text_;
  std::vector<Param> params_;
};

}  // namespace tessera::torch_expr

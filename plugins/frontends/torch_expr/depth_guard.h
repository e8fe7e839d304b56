// DepthGuard: counts one level of recursion for as long as it lives. The parser and the tracer
// bound their recursion with it, so a deeply nested program is an error, never a stack overflow.
#pragma once

namespace tessera::torch_expr {

struct DepthGuard {
  explicit DepthGuard(int& d) : depth(d) { ++depth; }
  ~DepthGuard() { --depth; }
  DepthGuard(const DepthGuard&) = delete;
  DepthGuard& operator=(const DepthGuard&) = delete;
  int& depth;
};

}  // namespace tessera::torch_expr

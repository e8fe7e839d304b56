// KernelCache: a content-addressed on-disk cache of compiled kernels. See kernel_cache.cpp.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "nvrtc_compiler.h"
#include "tessera/support/status.h"

namespace tessera {

class KernelCache {
 public:
  explicit KernelCache(std::string dir) : dir_(std::move(dir)) {}
  const std::string& dir() const { return dir_; }

  // The entry name of a compile: FNV-1a 128 (32 hex digits) of the source, arch, NVRTC options
  // and NVRTC version, each length-prefixed so no two inputs collide by concatenation.
  static std::string key(const std::string& source, const std::string& arch,
                         const std::vector<std::string>& options, const std::string& nvrtc_version);

  // The entry `key`, or nullopt when it is missing, truncated or corrupt (the caller rebuilds it).
  std::optional<CompiledKernel> load(const std::string& key) const;
  // Writes `<dir>/<key>.cubin` and `<key>.json` atomically (temp file + rename), creating `dir`.
  Status store(const std::string& key, const CompiledKernel& k) const;

 private:
  std::string dir_;
};

}  // namespace tessera

// KernelCache: compiled kernels on disk, content-addressed.
//
// An entry is `<dir>/<key>.cubin` (the image) and `<dir>/<key>.json` (kernel name, arch, ptxas
// resources, cubin size and FNV-1a 64 checksum). The key hashes everything the cubin depends on
// (source, arch, options, NVRTC version), so entries are never invalidated, only left unused; a
// stale directory can be deleted at any time. Both files are written to a unique temp name and
// renamed, so readers never see half an entry; an entry whose metadata does not parse or whose
// cubin does not match its size and checksum is ignored (and overwritten by the next store).
// Only regular files of bounded size are read, and metadata values are range-checked. A cache
// that cannot be written is not an error: the target compiles without it and says so once.
// The directory comes from TargetOptions::cache_dir (the CLI resolves the default).
#include "kernel_cache.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <unistd.h>

#include "tessera/support/atomic_file.h"

namespace tessera {

namespace fs = std::filesystem;

namespace {

using u128 = unsigned __int128;

std::string hex128(u128 v) {
  static const char* digits = "0123456789abcdef";
  std::string s(32, '0');
  for (int i = 31; i >= 0; --i, v >>= 4) s[i] = digits[static_cast<int>(v & 0xf)];
  return s;
}

struct Fnv128 {
  u128 h = (static_cast<u128>(0x6c62272e07bb0142ULL) << 64) | 0x62b821756295c58dULL;
  void bytes(const std::string& s) {
    const u128 prime = (static_cast<u128>(0x0000000001000000ULL) << 64) | 0x000000000000013BULL;
    for (unsigned char c : s) {
      h ^= c;
      h *= prime;
    }
  }
  void field(const std::string& s) {
    bytes(std::to_string(s.size()) + ":");
    bytes(s);
  }
};

std::string checksum64(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

// Largest file the cache reads back: a cubin of our kernels is tens of KB; anything near this is
// not an entry we wrote.
constexpr int64_t kMaxEntryBytes = int64_t{64} << 20;

// The contents of `p` if it is a regular file of at most kMaxEntryBytes, else nullopt. The cache
// directory is not trusted: an entry may be a symlink to /dev/zero, a FIFO (opening it must not
// block) or a huge file. Checked on the opened descriptor, so the file cannot be swapped between
// the check and the read.
std::optional<std::string> read_file(const fs::path& p) {
  int fd = ::open(p.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  std::optional<std::string> out;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= kMaxEntryBytes) {
    std::string data(static_cast<size_t>(st.st_size), '\0');
    size_t got = 0;
    while (got < data.size()) {
      ssize_t n = ::read(fd, data.data() + got, data.size() - got);
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    if (got == data.size()) out = std::move(data);
  }
  ::close(fd);
  return out;
}

// A metadata integer, which must lie within [lo, hi] for the entry to be trusted.
bool read_in_range(const nlohmann::json& j, int64_t lo, int64_t hi, int64_t& out) {
  out = j.get<int64_t>();
  return lo <= out && out <= hi;
}

// The cache's entries are written whole (write_file_atomically); errors say they are the cache's.
Status write_atomically(const fs::path& path, const std::string& data) {
  if (Status s = write_file_atomically(path, data); !s) return make_error("kernel cache: " + s.error().message);
  return Status::ok();
}

}  // namespace

std::string KernelCache::key(const std::string& source, const std::string& arch,
                             const std::vector<std::string>& options, const std::string& nvrtc_version) {
  Fnv128 h;
  h.field("tessera-kernel-cache-v1");
  h.field(source);
  h.field(arch);
  h.field(std::to_string(options.size()));
  for (const std::string& o : options) h.field(o);
  h.field(nvrtc_version);
  return hex128(h.h);
}

std::optional<CompiledKernel> KernelCache::load(const std::string& key) const {
  if (dir_.empty()) return std::nullopt;
  auto meta_text = read_file(fs::path(dir_) / (key + ".json"));
  auto cubin = read_file(fs::path(dir_) / (key + ".cubin"));
  if (!meta_text || !cubin) return std::nullopt;
  nlohmann::json meta = nlohmann::json::parse(*meta_text, nullptr, /*allow_exceptions=*/false);
  if (!meta.is_object()) return std::nullopt;
  try {
    if (meta.at("cubin_bytes").get<int64_t>() != static_cast<int64_t>(cubin->size()) ||
        meta.at("cubin_fnv1a64").get<std::string>() != checksum64(*cubin))
      return std::nullopt;
    CompiledKernel k;
    k.kernel = meta.at("kernel").get<std::string>();
    k.arch = meta.at("arch").get<std::string>();
    k.cubin = std::move(*cubin);
    // PTX is optional: present when the kernel was built with it (`--emit ptx`).
    if (meta.contains("ptx_fnv1a64")) {
      auto ptx = read_file(fs::path(dir_) / (key + ".ptx"));
      if (ptx && checksum64(*ptx) == meta.at("ptx_fnv1a64").get<std::string>()) k.ptx = std::move(*ptx);
    }
    const auto& r = meta.at("resources");
    // ptxas limits: at most 255 registers per thread; shared memory and spills far below 1 GiB.
    constexpr int64_t kGiB = int64_t{1} << 30;
    int64_t registers = 0;
    if (!read_in_range(r.at("registers"), 0, 255, registers) ||
        !read_in_range(r.at("shared_bytes"), 0, kGiB, k.resources.shared_bytes) ||
        !read_in_range(r.at("spill_store_bytes"), 0, kGiB, k.resources.spill_store_bytes) ||
        !read_in_range(r.at("spill_load_bytes"), 0, kGiB, k.resources.spill_load_bytes))
      return std::nullopt;
    k.resources.registers = static_cast<int>(registers);
    return k;
  } catch (const nlohmann::json::exception&) {  // a field missing or of the wrong type: corrupt
    return std::nullopt;
  }
}

Status KernelCache::store(const std::string& key, const CompiledKernel& k) const {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return make_error("kernel cache: cannot create directory '" + dir_ + "': " + ec.message());
  nlohmann::ordered_json meta;
  meta["kernel"] = k.kernel;
  meta["arch"] = k.arch;
  meta["resources"] = {{"registers", k.resources.registers},
                       {"shared_bytes", k.resources.shared_bytes},
                       {"spill_store_bytes", k.resources.spill_store_bytes},
                       {"spill_load_bytes", k.resources.spill_load_bytes}};
  meta["cubin_bytes"] = k.cubin.size();
  meta["cubin_fnv1a64"] = checksum64(k.cubin);
  if (!k.ptx.empty()) meta["ptx_fnv1a64"] = checksum64(k.ptx);
  // The images first: a reader that finds the metadata finds complete files beside it.
  if (Status s = write_atomically(fs::path(dir_) / (key + ".cubin"), k.cubin); !s) return s;
  if (!k.ptx.empty())
    if (Status s = write_atomically(fs::path(dir_) / (key + ".ptx"), k.ptx); !s) return s;
  return write_atomically(fs::path(dir_) / (key + ".json"), meta.dump(2) + "\n");
}

}  // namespace tessera

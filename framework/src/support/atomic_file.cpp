// write_file_atomically (tessera/support/atomic_file.h).
#include "tessera/support/atomic_file.h"

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

namespace tessera {

Status write_file_atomically(const std::filesystem::path& path, const std::string& data) {
  namespace fs = std::filesystem;
  static std::atomic<uint64_t> counter{0};  // unique temp names across this process's threads
  std::ostringstream tmp_name;
  tmp_name << path.filename().string() << ".tmp." << ::getpid() << "." << std::hash<std::thread::id>{}(std::this_thread::get_id())
           << "." << counter++;
  const fs::path tmp = path.parent_path() / tmp_name.str();
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return make_error("cannot write '" + tmp.string() + "'");
    f.write(data.data(), static_cast<std::streamsize>(data.size()));
    if (!f.flush()) return make_error("cannot write '" + tmp.string() + "'");
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return make_error("cannot rename into '" + path.string() + "'");
  }
  return Status::ok();
}

}  // namespace tessera

// Writing a file so that a reader, or a process killed mid-write, never sees half of it.
#pragma once

#include <filesystem>
#include <string>

#include "tessera/support/status.h"

namespace tessera {

// Writes `data` to `path` through a temp file in the same directory (named uniquely per process,
// thread and call, so concurrent writers of one path never share it) and a rename. An error names
// the file; the temp file is removed when the rename fails.
Status write_file_atomically(const std::filesystem::path& path, const std::string& data);

}  // namespace tessera

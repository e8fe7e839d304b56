#include "support/nvrtc_check.h"

#ifdef TESSERA_HAVE_CUDA
#include <nvrtc.h>

#include <regex>
#include <sstream>
#include <vector>

namespace tessera::test {

std::string nvrtc_compile(const CudaOp& op, const std::string& arch) {
  nvrtcProgram prog;
  if (nvrtcCreateProgram(&prog, op.source.c_str(), (op.name + ".cu").c_str(), 0, nullptr, nullptr) != NVRTC_SUCCESS)
    return "nvrtcCreateProgram failed";
  // ptxas's resource report: a kernel that spills registers to local memory fails the check.
  std::vector<std::string> options = {"--gpu-architecture=" + arch, "--std=c++17", "--ptxas-options=-v"};
  std::stringstream dirs(TESSERA_CUDA_INCLUDE_DIRS);  // '|'-separated
  for (std::string dir; std::getline(dirs, dir, '|');)
    if (!dir.empty()) options.push_back("--include-path=" + dir);
  std::vector<const char*> argv;
  for (const std::string& o : options) argv.push_back(o.c_str());
  nvrtcResult r = nvrtcCompileProgram(prog, static_cast<int>(argv.size()), argv.data());
  size_t log_size = 0;
  nvrtcGetProgramLogSize(prog, &log_size);
  std::string log(log_size, '\0');
  if (log_size) nvrtcGetProgramLog(prog, log.data());
  while (!log.empty() && log.back() == '\0') log.pop_back();
  nvrtcDestroyProgram(&prog);
  if (r == NVRTC_SUCCESS) {
    static const std::regex spills(R"(([1-9]\d*) bytes spill (stores|loads))");
    std::smatch m;
    if (std::regex_search(log, m, spills))
      return op.name + " spills for " + arch + " (" + m.str(0) + "):\n" + log;
    return "";
  }
  return std::string(nvrtcGetErrorString(r)) + " for " + arch + ":\n" + log + "\n--- source ---\n" + op.source;
}

}  // namespace tessera::test
#endif

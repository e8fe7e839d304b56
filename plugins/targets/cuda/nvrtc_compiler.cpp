// NvrtcCompiler: one CUDA kernel source -> cubin (+ PTX when asked) for sm_80 ... sm_120, through
// NVRTC, with ptxas's resource report (`--ptxas-options=-v`: registers, static shared memory,
// spill stores / loads) parsed from the program log.
//
// NVRTC is linked only when the toolkit was found at configure time (TESSERA_HAVE_CUDA); without
// it compile() returns the error "this build has no NVRTC". Errors name the kernel and carry the
// NVRTC log plus the offending source lines. Tests: tests/unit/nvrtc_compiler_test.cpp.
#include "nvrtc_compiler.h"

#include <regex>
#include <set>
#include <sstream>

#ifdef TESSERA_HAVE_CUDA
#include <dlfcn.h>
#include <nvrtc.h>
#endif

namespace tessera {

namespace {

// The number captured by `pattern` (e.g. 32 in "Used 32 registers"), or 0 when absent.
int64_t number_before(const std::string& text, const std::regex& pattern) {
  std::smatch m;
  if (std::regex_search(text, m, pattern)) return std::stoll(m[1].str());
  return 0;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace

void keep_nvrtc_loaded() {
#ifdef TESSERA_HAVE_CUDA
  // RTLD_NOLOAD finds the copy the plugin already links; RTLD_NODELETE pins it. The handle's
  // reference is never released on purpose.
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&nvrtcVersion), &info) != 0 && info.dli_fname != nullptr)
    (void)dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
#endif
}

KernelResources parse_ptxas_resources(const std::string& log, const std::string& kernel) {
  // Only the report of `kernel`'s entry function counts (device functions have their own lines).
  std::string section = log;
  const std::string entry = "Compiling entry function '" + kernel + "'";
  if (size_t at = log.find(entry); at != std::string::npos) {
    size_t next = log.find("Compiling entry function '", at + entry.size());
    section = log.substr(at, next == std::string::npos ? std::string::npos : next - at);
  }
  KernelResources r;
  r.registers = static_cast<int>(number_before(section, std::regex(R"(Used (\d+) registers)")));
  r.shared_bytes = number_before(section, std::regex(R"((\d+) bytes smem)"));
  r.spill_store_bytes = number_before(section, std::regex(R"((\d+) bytes spill stores)"));
  r.spill_load_bytes = number_before(section, std::regex(R"((\d+) bytes spill loads)"));
  return r;
}

std::vector<std::string> quote_error_lines(const std::string& log, const std::string& source) {
  const std::vector<std::string> lines = split_lines(source);
  std::vector<std::string> quoted;
  std::set<int64_t> seen;
  static const std::regex mention(R"(\.cu\((\d+)\)|\bline (\d+))");
  for (auto it = std::sregex_iterator(log.begin(), log.end(), mention); it != std::sregex_iterator(); ++it) {
    int64_t n = std::stoll((*it)[1].matched ? (*it)[1].str() : (*it)[2].str());
    if (n < 1 || n > static_cast<int64_t>(lines.size()) || !seen.insert(n).second) continue;
    quoted.push_back("line " + std::to_string(n) + ": " + lines[n - 1]);
  }
  return quoted;
}

std::vector<std::string> NvrtcCompiler::options(const std::string& arch) {
  std::vector<std::string> o = {"--gpu-architecture=" + arch, "--std=c++17", "--ptxas-options=-v"};
#ifdef TESSERA_CUDA_INCLUDE_DIRS
  std::istringstream dirs(TESSERA_CUDA_INCLUDE_DIRS);  // '|'-separated, from CMake
  for (std::string dir; std::getline(dirs, dir, '|');)
    if (!dir.empty()) o.push_back("--include-path=" + dir);
#endif
  return o;
}

#ifdef TESSERA_HAVE_CUDA

bool NvrtcCompiler::available() { return true; }

std::string NvrtcCompiler::version() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "unknown";
  return std::to_string(major) + "." + std::to_string(minor);
}

Expected<CompiledKernel> NvrtcCompiler::compile(const std::string& kernel, const std::string& source,
                                                const std::string& arch, bool want_ptx) {
  const std::string what = "kernel " + kernel + " (" + arch + ")";
  nvrtcProgram prog;
  nvrtcResult r = nvrtcCreateProgram(&prog, source.c_str(), (kernel + ".cu").c_str(), 0, nullptr, nullptr);
  if (r != NVRTC_SUCCESS) return make_error("NVRTC could not create " + what + ": " + nvrtcGetErrorString(r));
  const std::vector<std::string> opts = options(arch);
  std::vector<const char*> argv;
  for (const std::string& o : opts) argv.push_back(o.c_str());
  r = nvrtcCompileProgram(prog, static_cast<int>(argv.size()), argv.data());
  size_t log_size = 0;
  nvrtcGetProgramLogSize(prog, &log_size);
  std::string log(log_size, '\0');
  if (log_size) nvrtcGetProgramLog(prog, log.data());
  while (!log.empty() && log.back() == '\0') log.pop_back();
  if (r != NVRTC_SUCCESS) {
    nvrtcDestroyProgram(&prog);
    Diagnostic d = make_error("NVRTC failed to compile " + what + ": " + nvrtcGetErrorString(r));
    for (const std::string& q : quote_error_lines(log, source)) d.note("offending source " + q);
    d.note("NVRTC log:\n" + log);
    return d;
  }
  CompiledKernel out;
  out.kernel = kernel;
  out.arch = arch;
  out.resources = parse_ptxas_resources(log, kernel);
  size_t size = 0;
  if (nvrtcGetCUBINSize(prog, &size) != NVRTC_SUCCESS || size == 0) {
    nvrtcDestroyProgram(&prog);
    return make_error("NVRTC produced no cubin for " + what);
  }
  out.cubin.resize(size);
  nvrtcGetCUBIN(prog, out.cubin.data());
  if (want_ptx && nvrtcGetPTXSize(prog, &size) == NVRTC_SUCCESS && size > 0) {
    out.ptx.resize(size);
    nvrtcGetPTX(prog, out.ptx.data());
    while (!out.ptx.empty() && out.ptx.back() == '\0') out.ptx.pop_back();
  }
  nvrtcDestroyProgram(&prog);
  return out;
}

#else  // no CUDA toolkit at configure time

bool NvrtcCompiler::available() { return false; }
std::string NvrtcCompiler::version() { return "none"; }
Expected<CompiledKernel> NvrtcCompiler::compile(const std::string& kernel, const std::string&,
                                                const std::string&, bool) {
  return make_error("cannot compile kernel " + kernel +
                    ": this build has no NVRTC (the CUDA toolkit was not found at configure time)");
}

#endif

}  // namespace tessera

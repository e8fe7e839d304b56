// Shared command-line plumbing: global flags, plugin discovery, pipeline and device selection.
#include "cli_session.h"

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "tessera/support/install_paths.h"

namespace tessera::cli {

void add_global_options(po::options_description& desc, GlobalFlags& flags) {
  desc.add_options()
      ("pipeline", po::value(&flags.pipeline)->value_name("FILE"), "pipeline YAML file (default: pipelines/default.yaml)")
      ("arch", po::value(&flags.arch)->value_name("sm_XX"), "CUDA architecture (sm_80 ... sm_120)")
      ("device", po::value(&flags.device)->value_name("NAME"), "device description (h100, h200, a100, l40s, rtx4090, rtx5090)")
      ("dtype", po::value(&flags.dtype)->value_name("f32|bf16|f16"), "default dtype of created tensors")
      ("threads", po::value(&flags.threads)->value_name("N"), "kernel pass applications at once (default: the pipeline's threads, 1); same output for any N")
      ("plugin", po::value(&flags.plugins)->value_name("FILE")->composing(), "load an extra plugin (repeatable)")
      ("knob", po::value(&flags.knobs)->value_name("PASS.KNOB=VALUE")->composing(),
       "pin a knob over the pipeline's (repeatable; VALUE as in a pipeline file: true, 4, 'in0')")
      ("output,o", po::value(&flags.output)->value_name("FILE"), "write the output to FILE instead of stdout")
      ("help,h", "show this help")
      ("verbose,v", "-v: one line per pass on stderr; -vv: also a diff of every pass application on stdout");
}

std::vector<std::string> strip_verbosity(int argc, char** argv, int first, int& verbosity) {
  std::vector<std::string> rest;
  for (int i = first; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-v" || a == "--verbose") {
      verbosity += 1;
    } else if (a.size() > 2 && a[0] == '-' && a[1] == 'v' && a.find_first_not_of('v', 1) == std::string::npos) {
      verbosity += static_cast<int>(a.size() - 1);  // -vv, -vvv
    } else {
      rest.push_back(std::move(a));
    }
  }
  return rest;
}

std::optional<int> parse_command_line(const std::vector<std::string>& args, const po::options_description& desc,
                                      const po::positional_options_description& pos, po::variables_map& vm,
                                      const std::string& usage) {
  try {
    po::store(po::command_line_parser(args).options(desc).positional(pos).run(), vm);
    if (vm.count("help")) {
      std::cout << usage << "\n\n" << desc << "\n";
      return kExitOk;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "error: " << e.what() << "\n" << "usage: " << usage << " (see --help)\n";
    return kExitUsage;
  }
  return std::nullopt;
}

int report(std::ostream& err, const Diagnostic& d) {
  err << d.render();
  return kExitError;
}

static std::vector<std::string> split_path_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ':'))
    if (!item.empty()) out.push_back(item);
  return out;
}

std::unique_ptr<Session> open_session(const GlobalFlags& flags, std::ostream& err, bool need_pipeline) {
  auto s = std::make_unique<Session>();

  auto dtype = parse_dtype(flags.dtype);
  if (!dtype) {
    err << "error: unknown --dtype '" << flags.dtype << "' (expected f32, bf16 or f16)\n";
    return nullptr;
  }
  s->dtype = *dtype;

  // 1-2: the built-in plugin directory.
  Status st;
  for (const auto& dir : PluginHost::default_directories())
    if (st = s->host.load_directory(dir); !st) break;
  // 3: TESSERA_PLUGIN_PATH (the CLI is the one place that reads the environment).
  if (st) {
    if (const char* env = std::getenv("TESSERA_PLUGIN_PATH"))
      for (const auto& dir : split_path_list(env))
        if (st = s->host.load_directory(dir); !st) break;
  }
  // 4: --plugin FILE.
  for (size_t i = 0; st && i < flags.plugins.size(); ++i) st = s->host.load_file(flags.plugins[i]);
  if (!st) {
    report(err, st.error());
    return nullptr;
  }

  // The pipeline, then 5: its `plugins:`.
  std::string path = flags.pipeline;
  if (path.empty()) {
    auto found = find_data_file("pipelines/default.yaml");
    if (!found) {
      report(err, found.error());
      return nullptr;
    }
    path = *found;
  }
  auto spec = load_pipeline_file(path);
  if (!spec) {
    report(err, spec.error());
    return nullptr;
  }
  s->pipeline = std::move(*spec);
  for (const std::string& knob : flags.knobs) {
    if (Status ks = pin_knob(s->pipeline, knob); !ks) {
      report(err, ks.error());
      return nullptr;
    }
  }
  for (size_t i = 0; i < s->pipeline.plugins.size(); ++i) {
    SourceLoc origin = i < s->pipeline.plugin_locs.size() ? s->pipeline.plugin_locs[i] : SourceLoc{};
    if (Status ps = s->host.load_file(s->pipeline.plugins[i], origin); !ps) {
      report(err, ps.error());
      return nullptr;
    }
  }
  if (need_pipeline) {
    if (Status vs = validate_pipeline(s->pipeline, s->host.registry()); !vs) {
      report(err, vs.error());
      return nullptr;
    }
  }
  if (!flags.arch.empty()) {
    if (!is_known_arch(flags.arch)) {
      std::string known;
      for (const auto& a : known_archs()) known += (known.empty() ? "" : ", ") + a;
      err << "error: unknown --arch '" << flags.arch << "' (known: " << known << ")\n";
      return nullptr;
    }
    s->pipeline.target.arch = flags.arch;
  }
  if (!flags.device.empty()) s->pipeline.target.device = flags.device;
  if (flags.threads != 0) {
    if (flags.threads < 1 || flags.threads > 1024) {
      err << "error: --threads must be from 1 to 1024, got " << flags.threads << "\n";
      return nullptr;
    }
    s->pipeline.threads = flags.threads;
  }

  auto table = DeviceTable::load_default();
  if (!table) {
    report(err, table.error());
    return nullptr;
  }
  s->devices = std::move(*table);
  const std::string& dev = s->pipeline.target.device;
  const std::string& arch = s->pipeline.target.arch;
  s->device_named = !dev.empty() || !arch.empty();
  s->device = !dev.empty() ? s->devices.find(dev) : !arch.empty() ? s->devices.find_by_arch(arch) : s->devices.find("h100");
  if (!s->device) {
    std::string known;
    for (const auto& d : s->devices.all()) known += (known.empty() ? "" : ", ") + d.name;
    err << "error: unknown device '" << (dev.empty() ? arch : dev) << "' (known: " << known << ")\n";
    return nullptr;
  }
  return s;
}

const DeviceDesc* device_for_driver_name(const DeviceTable& table, const std::string& driver_name) {
  auto squash = [](const std::string& s) {
    std::string o;
    for (char c : s)
      if (c != ' ' && c != '-' && c != '_') o += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return o;
  };
  const std::string name = squash(driver_name);
  const DeviceDesc* best = nullptr;
  for (const DeviceDesc& d : table.all()) {
    const std::string s = squash(d.name);
    if (!s.empty() && name.find(s) != std::string::npos && (!best || s.size() > squash(best->name).size())) best = &d;
  }
  return best;
}

void adopt_gpu_device(Session& s, const std::string& driver_name, std::ostream& err) {
  if (s.device_named) return;
  if (const DeviceDesc* d = device_for_driver_name(s.devices, driver_name)) {
    s.device = d;
    return;
  }
  err << "note: '" << driver_name << "' is not in data/devices.yaml; compiling for " << s.device->name
      << "'s description (--device NAME names another)\n";
}

int emit_output(const GlobalFlags& flags, const std::string& text, std::ostream& err) {
  if (flags.output.empty() || flags.output == "-") {
    std::cout << text;
    std::cout.flush();
    return std::cout ? kExitOk : kExitError;
  }
  std::ofstream f(flags.output, std::ios::binary);
  if (!f) {
    err << "error: cannot write '" << flags.output << "'\n";
    return kExitError;
  }
  f << text;
  return f ? kExitOk : kExitError;
}

// The kernel cache directory: --cache-dir, else $XDG_CACHE_HOME/tessera, else ~/.cache/tessera
// ("" when none of them is known: builds then skip the cache).
std::string default_cache_dir(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::string(xdg) + "/tessera";
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache/tessera";
  return "";
}

}  // namespace tessera::cli

// bonsai backends: every plugin file in the search path, loaded and probed.
#include <cstdio>
#include <string>

#include "bonsai/engine.hpp"
#include "commands.hpp"
#include "options.hpp"
#include "usage_error.hpp"

namespace bonsai::cli {
namespace {

std::string describe_device(const DeviceInfo &d) {
  std::string s = std::to_string(d.device_count) + " device(s)";
  if (!d.name.empty())
    s += ", " + d.name;
  if (d.total_memory_bytes > 0) {
    char mem[48];
    std::snprintf(mem, sizeof mem, ", %.1f GiB",
                  static_cast<double>(d.total_memory_bytes) / (1024.0 * 1024.0 * 1024.0));
    s += mem;
  }
  if (d.compute_major > 0)
    s += ", compute " + std::to_string(d.compute_major) + "." + std::to_string(d.compute_minor);
  return s;
}

void describe(std::string &out, const PluginInfo &p) {
  out += p.name + "\n";
  out += "  path:    " + p.path.string() + "\n";
  if (!p.loaded) {
    out += "  status:  not loadable: " + p.load_error + "\n";
    return;
  }
  out += "  version: " + p.version + "\n";
  out += "  abi:     " + std::to_string(p.abi_major) + "." + std::to_string(p.abi_minor) + "\n";
  if (!p.description.empty())
    out += "  about:   " + p.description + "\n";
  out += "  probe:   " + p.probe_status;
  if (p.device_ok)
    out += " (" + describe_device(p.device) + ")";
  out += "\n";
  if (p.device_ok)
    out += "  auto:    preference " +
           (p.device.preference > 0 ? std::to_string(p.device.preference) : "not stated") +
           " (the usable plugin with the highest is taken)\n";
  if (!p.device.detail.empty())
    out += "  detail:  " + p.device.detail + "\n";
}

} // namespace

int backends_command(const Args &args) {
  CommandLine command_line("backends", "backends");
  command_line.logging();
  if (!command_line.parse(args))
    return kExitOk;

  const auto plugins = list_plugins();
  std::string searched;
  for (const auto &dir : plugin_search_path())
    searched += (searched.empty() ? "" : ", ") + dir.string();
  if (plugins.empty())
    throw Error("no backend plugins (libbonsai_NAME.so) found; searched: " + searched +
                " (set BONSAI_PLUGIN_PATH to add folders)");
  std::string out;
  for (const auto &p : plugins)
    describe(out, p);
  out += "searched: " + searched + "\n";
  std::fputs(out.c_str(), stdout);
  return kExitOk;
}

} // namespace bonsai::cli

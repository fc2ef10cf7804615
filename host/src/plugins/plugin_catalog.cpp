#include "plugins/plugin_catalog.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <sstream>
#include <system_error>

#include <fmt/format.h>

#include "common/log_internal.hpp"

namespace bonsai {
namespace host {
namespace {

std::vector<std::string> split(const std::string &text, char separator) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, separator))
    parts.push_back(part);
  return parts;
}

std::string trim(const std::string &text) {
  const auto begin = text.find_first_not_of(" \t");
  if (begin == std::string::npos)
    return {};
  const auto end = text.find_last_not_of(" \t");
  return text.substr(begin, end - begin + 1);
}

// The folder this library was loaded from (for the install layout
// lib/libbonsai_host.so + lib/bonsai/plugins/).
std::filesystem::path host_library_dir() {
  Dl_info info{};
  static const int anchor = 0;
  if (dladdr(&anchor, &info) == 0 || info.dli_fname == nullptr)
    return {};
  std::error_code error;
  auto path = std::filesystem::weakly_canonical(info.dli_fname, error);
  if (error)
    path = info.dli_fname;
  return path.parent_path();
}

PluginInfo describe(const PluginLibrary &library) {
  PluginInfo info;
  info.path = library.path();
  info.name = library.name();
  info.version = library.version();
  info.description = library.description();
  info.abi_major = library.api().abi_major;
  info.abi_minor = library.api().abi_minor;
  info.loaded = true;
  const ProbeResult probe = library.probe();
  info.device_ok = probe.status == BONSAI_OK;
  info.probe_status = status_name(probe.status);
  const bonsai_device_info &device = probe.device;
  info.device.device_count = device.device_count;
  info.device.name = device.name;
  info.device.total_memory_bytes = device.total_memory_bytes;
  info.device.free_memory_bytes = device.free_memory_bytes;
  info.device.compute_major = device.compute_major;
  info.device.compute_minor = device.compute_minor;
  info.device.detail = device.detail;
  info.device.preference = device.preference;
  return info;
}

// The candidate files for one spec element, in search order.
std::vector<std::filesystem::path> candidate_files(const std::string &element,
                                                   const std::vector<std::filesystem::path> &dirs) {
  if (spec_is_path(element))
    return {std::filesystem::path(element)};
  std::vector<std::filesystem::path> files;
  for (const auto &dir : dirs) {
    auto file = dir / fmt::format("libbonsai_{}.so", element);
    std::error_code error;
    if (std::filesystem::exists(file, error))
      files.push_back(file);
  }
  return files;
}

std::string describe_dirs(const std::vector<std::filesystem::path> &dirs) {
  std::string text;
  for (const auto &dir : dirs)
    text += (text.empty() ? "" : ", ") + dir.string();
  return text.empty() ? "(no folders)" : text;
}

// Loads + probes one file; throws PluginError when it is not usable.
SelectedPlugin try_file(const std::filesystem::path &file) {
  auto library = PluginLibrary::load(file);
  PluginInfo info = describe(*library);
  if (!info.device_ok)
    library->fail(fmt::format("probe reported {}{}", info.probe_status,
                              info.device.detail.empty() ? "" : ": " + info.device.detail));
  return {std::move(library), std::move(info)};
}

SelectedPlugin select_one(const std::string &element,
                          const std::vector<std::filesystem::path> &dirs) {
  const auto files = candidate_files(element, dirs);
  if (files.empty())
    throw PluginError(fmt::format("backend '{}' not found: no libbonsai_{}.so in {}", element,
                                  element, describe_dirs(dirs)));
  // The first file found wins; a broken earlier copy is an error, not a
  // reason to silently pick a different build.
  return try_file(files.front());
}

// The libbonsai_*.so files of one folder, sorted (none when it is missing).
std::vector<std::filesystem::path> plugin_files_in(const std::filesystem::path &dir) {
  std::vector<std::filesystem::path> files;
  std::error_code error;
  if (!std::filesystem::is_directory(dir, error))
    return files;
  for (std::filesystem::directory_iterator it(dir, error), end; !error && it != end;
       it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (name.starts_with("libbonsai_") && name.ends_with(".so"))
      files.push_back(it->path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Every plugin file in the folders, in search order; a name found again in
// a later folder is shadowed by the first (as PATH does).
std::vector<std::filesystem::path>
all_plugin_files(const std::vector<std::filesystem::path> &dirs) {
  std::vector<std::filesystem::path> files;
  std::set<std::string> names;
  for (const auto &dir : dirs)
    for (auto &file : plugin_files_in(dir))
      if (names.insert(file.filename().string()).second)
        files.push_back(std::move(file));
  return files;
}

// "auto": loads and probes every plugin file and returns the usable ones,
// highest preference first (ABI 1.1; a 1.0 plugin states none and ranks
// last); equal preferences keep file order. A plugin that fails to load or
// finds no device is skipped with its reason logged.
std::vector<SelectedPlugin> select_auto(const std::vector<std::filesystem::path> &dirs) {
  const auto files = all_plugin_files(dirs);
  if (files.empty())
    throw PluginError(
        fmt::format("backend 'auto': no libbonsai_*.so plugin in {}", describe_dirs(dirs)));
  std::vector<SelectedPlugin> usable;
  std::string reasons;
  for (const auto &file : files) {
    try {
      usable.push_back(try_file(file));
      logger().debug("backend 'auto': {} is usable, preference {}", file.string(),
                     usable.back().info.device.preference);
    } catch (const Error &error) {
      logger().info("backend 'auto': skipping {}", error.what());
      reasons += fmt::format("\n  {}", error.what());
    }
  }
  if (usable.empty())
    throw PluginError(fmt::format("no usable backend for 'auto':{}", reasons));
  std::stable_sort(usable.begin(), usable.end(), [](const auto &a, const auto &b) {
    return a.info.device.preference > b.info.device.preference;
  });
  return usable;
}

// One element of a backend spec: "auto" (every usable plugin, best first),
// a NAME or a path (one plugin).
std::vector<SelectedPlugin> select_element(const std::string &element,
                                           const std::vector<std::filesystem::path> &dirs) {
  if (element == "auto")
    return select_auto(dirs);
  std::vector<SelectedPlugin> one;
  one.push_back(select_one(element, dirs));
  return one;
}

} // namespace

bool spec_is_path(const std::string &spec) {
  return spec.find('/') != std::string::npos || spec.ends_with(".so");
}

std::vector<SelectedPlugin> select_plugins(const std::string &spec,
                                           const std::vector<std::filesystem::path> &dirs) {
  std::vector<std::string> elements;
  for (const auto &part : split(spec, ','))
    if (std::string element = trim(part); !element.empty())
      elements.push_back(std::move(element));
  if (elements.empty())
    throw InvalidArgument(fmt::format("backend '{}' names no plugin", spec));

  std::vector<SelectedPlugin> candidates;
  std::set<std::filesystem::path> taken;
  std::string reasons;
  for (const auto &element : elements) {
    try {
      for (auto &candidate : select_element(element, dirs))
        if (taken.insert(candidate.info.path).second)
          candidates.push_back(std::move(candidate));
    } catch (const Error &error) {
      // A single element is the user's exact choice: its own error.
      if (elements.size() == 1)
        throw;
      logger().info("backend '{}': skipping {}", element, error.what());
      reasons += fmt::format("\n  {}: {}", element, error.what());
    }
  }
  if (candidates.empty())
    throw PluginError(fmt::format("no usable backend for '{}':{}", spec, reasons));
  const PluginInfo &first = candidates.front().info;
  logger().info("backend '{}': using {} ({}{})", spec, first.path.string(), first.device.name,
                candidates.size() > 1 ? fmt::format(", then {} more if it fails to load the model",
                                                    candidates.size() - 1)
                                      : "");
  return candidates;
}

} // namespace host

std::vector<std::filesystem::path> plugin_search_path() {
  std::vector<std::filesystem::path> dirs;
  if (const char *env = std::getenv("BONSAI_PLUGIN_PATH"); env != nullptr)
    for (const auto &part : host::split(env, ':'))
      if (!part.empty())
        dirs.emplace_back(part);
  // Next to the host library: lib/bonsai/plugins both in an install and in
  // the build tree (same layout), so an installed host never looks into the
  // tree it was built in.
  if (auto lib_dir = host::host_library_dir(); !lib_dir.empty())
    dirs.push_back(lib_dir / "bonsai" / "plugins");

  // Remove duplicates, keeping the first occurrence.
  std::vector<std::filesystem::path> unique;
  std::set<std::string> seen;
  for (auto &dir : dirs) {
    std::error_code error;
    auto canonical = std::filesystem::weakly_canonical(dir, error);
    const std::string key = error ? dir.lexically_normal().string() : canonical.string();
    if (seen.insert(key).second)
      unique.push_back(std::move(dir));
  }
  return unique;
}

PluginInfo inspect_plugin(const std::filesystem::path &file) {
  try {
    return host::describe(*host::PluginLibrary::load(file));
  } catch (const Error &error) {
    PluginInfo info;
    info.path = file;
    info.name = host::backend_name_from_file(file);
    info.load_error = error.what();
    return info;
  }
}

std::vector<PluginInfo> list_plugins(const std::vector<std::filesystem::path> &dirs) {
  std::vector<PluginInfo> plugins;
  for (const auto &dir : dirs)
    for (const auto &file : host::plugin_files_in(dir))
      plugins.push_back(inspect_plugin(file));
  return plugins;
}

std::vector<PluginInfo> list_plugins() {
  return list_plugins(plugin_search_path());
}

} // namespace bonsai

// bonsai-plugin-check PATH.so: holds any backend plugin to the ABI contract
// (docs/abi.md) and the numerics contract (docs/abi.md, "Numerics"), then runs the
// golden tiny models through libbonsai_host with it. Exit status:
//   0  every check passed
//   1  at least one check failed
//   2  bad usage, or the file is not a loadable plugin
//   77 the static checks passed but the plugin's probe finds no device, so
//      nothing ran on a device (the automake "skipped" convention)
#include <boost/program_options.hpp>

#include <cstdio>
#include <exception>
#include <functional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "bonsai/core/formats.hpp"
#include "data_dir.hpp"
#include "golden_check.hpp"
#include "report.hpp"

namespace po = boost::program_options;

namespace bonsai::plugin_check {
namespace {

constexpr int kExitPass = 0, kExitFail = 1, kExitUsage = 2, kExitNoDevice = 77;

struct Arguments {
  std::string plugin;
  std::string options;
  bool exact = false;
  std::string golden_dir;
  bool no_golden = false;
  int threads = 2;
};

// Runs one check; an exception (e.g. create_context failing) is a failure.
conformance::CheckResult guarded(const std::string &name,
                                 const std::function<conformance::CheckResult()> &check) {
  try {
    return check();
  } catch (const std::exception &e) {
    conformance::CheckResult r{name};
    r.fail(e.what());
    return r;
  }
}

// The golden models run_golden checks: the weight type each needs (the host
// hands a plugin without `type` the values as `fallback`), and the fast
// path's gates (docs/abi.md "Numerics"; docs/models.md for qwen35, where
// int8 activations meet the per-head norms and llama.cpp's own agreement
// with the reference is cosine 0.996).
struct GoldenModel {
  const char *name;
  GgmlType type;
  GgmlType fallback;
  double fast_cosine;
  double fast_top1;
};
constexpr GoldenModel kGoldenModels[] = {
    {"tiny-q1", GgmlType::Q1_0, GgmlType::Q1_0, 0.9995, 0.95},
    {"tiny-q1-tied", GgmlType::Q1_0, GgmlType::Q1_0, 0.9995, 0.95},
    {"tiny-q2", GgmlType::Q2_0, GgmlType::Q2_0, 0.9995, 0.95},
    {"tiny-q35-q1", GgmlType::Q1_0, GgmlType::Q1_0, 0.996, 0.85},
    {"tiny-q35-q2g64", GgmlType::Q2_0_G64, GgmlType::Q8_0, 0.996, 0.85}};

void run_golden(const conformance::PluginChecker &checker, const Arguments &args, Tally &tally) {
  const std::filesystem::path dir =
      args.golden_dir.empty() ? find_golden_dir() : std::filesystem::path(args.golden_dir);
  std::printf("\ngolden tiny models through libbonsai_host (%s)\n", dir.c_str());
  if (dir.empty()) {
    conformance::CheckResult r{"golden models"};
    r.fail("the golden data was found neither in <bin>/../share/bonsai nor in the source tree; "
           "pass --golden DIR or --no-golden");
    print_check(stdout, r, tally);
    return;
  }
  const bool f32 = checker.supports(static_cast<uint32_t>(GgmlType::F32));
  for (const GoldenModel &model : kGoldenModels) {
    conformance::CheckResult r{std::string("golden ") + model.name};
    if (!f32 || !(checker.supports(static_cast<uint32_t>(model.type)) ||
                  checker.supports(static_cast<uint32_t>(model.fallback)))) {
      r.skipped = true;
      r.note("needs " + std::string(type_name(static_cast<uint32_t>(model.type))) +
             " and f32 weights, which this plugin "
             "does not support");
    } else {
      GoldenOptions golden;
      golden.data_dir = dir;
      golden.model_name = model.name;
      golden.fast_cosine = model.fast_cosine;
      golden.fast_top1 = model.fast_top1;
      golden.plugin_path = args.plugin;
      golden.plugin_options = args.options;
      golden.exact = checker.options().exact;
      golden.n_threads = args.threads;
      r = check_golden_model(golden);
    }
    print_check(stdout, r, tally);
  }
}

int run(const Arguments &args) {
  conformance::CheckOptions options;
  options.plugin_path = args.plugin;
  options.context_options = args.options;
  options.exact = args.exact || conformance::options_select_exact_kernels(args.options);
  options.n_threads = args.threads;
  std::unique_ptr<conformance::PluginChecker> checker;
  try {
    checker = std::make_unique<conformance::PluginChecker>(options);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "bonsai-plugin-check: error: %s\n", e.what());
    return kExitUsage;
  }
  const conformance::PluginChecker &c = *checker;
  std::printf("bonsai-plugin-check %s\n  options \"%s\", %s tolerances\n\n", args.plugin.c_str(),
              args.options.c_str(), options.exact ? "exact" : "fast-path");
  std::fflush(stdout);

  Tally tally;
  const auto report = [&](const std::string &name, auto check) {
    const conformance::CheckResult result = guarded(name, [&] { return check(); });
    print_check(stdout, result, tally);
    std::fflush(stdout);
    return result.passed();
  };
  const bool table_ok = report("api_table", [&] { return c.api_table(); });
  report("exported_symbols", [&] { return c.exported_symbols(); });
  report("probe", [&] { return c.probe(); });
  if (!table_ok) {
    // A missing required entry would be called through a NULL pointer.
    std::printf("\nThe API table is incomplete: no check that needs a context ran.\n");
    std::printf("\nsummary: %d passed, %d failed, %d skipped\nresult: FAIL\n", tally.passed,
                tally.failed, tally.skipped);
    return kExitFail;
  }

  // The checks that need a context on a device.
  const std::vector<conformance::PluginChecker::NamedCheck> device_checks = c.device_checks();

  const std::string skip_reason = c.context_skip_reason();
  if (!skip_reason.empty()) {
    // Every check that could not run is counted and named, never passed.
    std::printf("\nSKIPPED: %s\n", skip_reason.c_str());
    std::vector<std::string> skipped;
    for (const auto &check : device_checks)
      skipped.push_back(check.name);
    if (!args.no_golden)
      for (const GoldenModel &golden : kGoldenModels)
        skipped.push_back(std::string("golden ") + golden.name);
    for (const std::string &name : skipped) {
      conformance::CheckResult r{name};
      r.skipped = true;
      r.note("skipped: no device");
      print_check(stdout, r, tally);
    }
    std::printf("\nsummary: %d passed, %d failed, %d skipped\n", tally.passed, tally.failed,
                tally.skipped);
    if (tally.failed > 0)
      return kExitFail;
    std::printf("result: SKIPPED (no device; exit status %d)\n", kExitNoDevice);
    return kExitNoDevice;
  }

  for (const auto &[name, check] : device_checks)
    report(name, check);
  if (!args.no_golden)
    run_golden(c, args, tally);

  std::printf("\nsummary: %d passed, %d failed, %d skipped\nresult: %s\n", tally.passed,
              tally.failed, tally.skipped, tally.failed == 0 ? "PASS" : "FAIL");
  return tally.failed == 0 ? kExitPass : kExitFail;
}

} // namespace
} // namespace bonsai::plugin_check

int main(int argc, char **argv) {
  bonsai::plugin_check::Arguments args;
  po::options_description named("options");
  named.add_options()("help,h", "show this help")(
      "options", po::value(&args.options),
      "plugin context options, \"key=value;...\" (e.g. \"kernels=reference\")")(
      "exact", po::bool_switch(&args.exact),
      "hold results to the exact-path tolerances (implied by kernels=reference)")(
      "golden", po::value(&args.golden_dir),
      "folder of the golden tiny models (default: <bin>/../share/bonsai)")(
      "no-golden", po::bool_switch(&args.no_golden), "skip the golden-model checks")(
      "threads", po::value(&args.threads)->default_value(2), "worker threads per context");
  po::options_description all;
  all.add(named).add_options()("plugin", po::value(&args.plugin));
  po::positional_options_description positional;
  positional.add("plugin", 1);
  const auto usage = [&](std::FILE *out) {
    std::ostringstream text;
    text << named;
    std::fprintf(out,
                 "usage: bonsai-plugin-check PLUGIN.so [options]\n\n%s\nexit status: 0 pass, 1 "
                 "failure, 2 usage or unloadable plugin, 77 no device (device checks skipped)\n",
                 text.str().c_str());
  };
  try {
    po::variables_map vm;
    po::store(po::command_line_parser(argc, argv).options(all).positional(positional).run(), vm);
    po::notify(vm);
    if (vm.count("help")) {
      usage(stdout);
      return 0;
    }
    if (args.plugin.empty() || args.threads < 1)
      throw po::error(args.plugin.empty() ? "no plugin file given" : "--threads must be >= 1");
  } catch (const po::error &e) {
    std::fprintf(stderr, "bonsai-plugin-check: %s\n", e.what());
    usage(stderr);
    return 2;
  }
  return bonsai::plugin_check::run(args);
}

// PluginChecker plumbing and the checks of the API table, exports and probe.
#include "plugin_checks.hpp"

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "bonsai/core/formats.hpp"
#include "elf_symbols.hpp"

namespace bonsai::conformance {

bool options_select_exact_kernels(const std::string &context_options) {
  return context_options.find("kernels=reference") != std::string::npos;
}

std::string format_cosine(double cosine) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.8f", cosine);
  return text;
}

std::string CheckResult::summary() const {
  std::ostringstream out;
  out << name << (skipped ? " (skipped)" : "") << ":";
  for (const std::string &f : failures)
    out << "\n  FAIL " << f;
  for (const std::string &n : notes)
    out << "\n  note " << n;
  return out.str();
}

const std::vector<uint32_t> &known_weight_types() {
  static const std::vector<uint32_t> types = {
      static_cast<uint32_t>(GgmlType::F32),  static_cast<uint32_t>(GgmlType::F16),
      static_cast<uint32_t>(GgmlType::Q8_0), static_cast<uint32_t>(GgmlType::BF16),
      static_cast<uint32_t>(GgmlType::Q1_0), static_cast<uint32_t>(GgmlType::Q2_0)};
  return types;
}

PluginChecker::PluginChecker(CheckOptions options)
    : options_(std::move(options)),
      library_(std::make_unique<test::PluginLibrary>(options_.plugin_path)) {}

PluginChecker::~PluginChecker() = default;

bool PluginChecker::supports(uint32_t type) const {
  test::ContextConfig config;
  config.options = options_.context_options;
  config.n_threads = options_.n_threads;
  test::ContextHandle ctx(api(), config);
  return api().supports_type(ctx.get(), type) == BONSAI_OK;
}

namespace {

// ABI 1.0's table ended at kv_length; 1.1 appended `extensions`.
constexpr size_t kApiTableV10Size = offsetof(bonsai_backend_api, extensions);

// The extension chain of a table that has one: every entry's header is sane,
// the chain ends, and a sequences extension offers every function.
void check_extensions(const bonsai_backend_api &a, CheckResult &r) {
  if (a.struct_size < offsetof(bonsai_backend_api, extensions) + sizeof(a.extensions))
    return; // ABI 1.0: no chain
  std::string offered;
  int count = 0;
  for (const bonsai_extension *e = a.extensions; e != nullptr; e = e->next) {
    if (!r.expect(++count <= 64, "the extension chain does not end within 64 entries"))
      return;
    r.expect(e->struct_size >= sizeof(bonsai_extension),
             "extension " + std::to_string(count) + " has struct_size " +
                 std::to_string(e->struct_size) + ", smaller than its header");
    if (e->type != BONSAI_EXTENSION_SEQUENCES) {
      offered += " type " + std::to_string(e->type) + " (unknown to this checker)";
      continue;
    }
    offered += " sequences";
    if (!r.expect(e->struct_size >= sizeof(bonsai_sequences_extension),
                  "the sequences extension's struct_size " + std::to_string(e->struct_size) +
                      " is smaller than ABI 1.1's"))
      continue;
    const auto &seq = *reinterpret_cast<const bonsai_sequences_extension *>(e);
    r.expect(seq.max_slots >= 1,
             "sequences extension: max_slots is " + std::to_string(seq.max_slots) + " (< 1)");
    r.expect(seq.slot_create && seq.slot_free && seq.slot_truncate && seq.slot_copy &&
                 seq.slot_length && seq.begin_batch,
             "sequences extension: a function pointer is NULL");
  }
  r.note("extensions:" + (offered.empty() ? std::string(" none") : offered));
}

} // namespace

std::string PluginChecker::context_skip_reason() const {
  if (api().struct_size < kApiTableV10Size)
    return "the API table is shorter than ABI 1.0's (struct_size " +
           std::to_string(api().struct_size) + ")";
  bonsai_device_info info{};
  info.struct_size = sizeof(info);
  if (api().probe(&info) == BONSAI_OK)
    return {};
  info.detail[sizeof(info.detail) - 1] = '\0';
  return std::string("probe finds no device: ") + info.detail;
}

CheckResult PluginChecker::api_table() const {
  CheckResult r{"api_table"};
  const bonsai_backend_api &a = api();
  r.expect(a.abi_major == BONSAI_ABI_MAJOR, "abi_major is " + std::to_string(a.abi_major));
  // Every 1.0 entry must fit in the table the plugin says it has.
  r.expect(a.struct_size >= kApiTableV10Size,
           "struct_size " + std::to_string(a.struct_size) + " is smaller than the ABI 1.0 table");
  r.expect(a.name != nullptr && a.name[0] != '\0', "name is NULL or empty");
  r.expect(a.version != nullptr && a.version[0] != '\0', "version is NULL or empty");
  r.expect(a.description != nullptr, "description is NULL");
  // Groups 1-3 and bind_model are required. An entry past struct_size is
  // absent and never read (&& stops before the read).
#define BONSAI_REQUIRED(field)                                                                     \
  r.expect(offsetof(bonsai_backend_api, field) + sizeof(void *) <= a.struct_size &&                \
               a.field != nullptr,                                                                 \
           "required function " #field " is missing")
  BONSAI_REQUIRED(probe);
  BONSAI_REQUIRED(create_context);
  BONSAI_REQUIRED(destroy_context);
  BONSAI_REQUIRED(last_error);
  BONSAI_REQUIRED(supports_type);
  BONSAI_REQUIRED(upload_weight);
  BONSAI_REQUIRED(free_weight);
  BONSAI_REQUIRED(matmul);
  BONSAI_REQUIRED(bind_model);
#undef BONSAI_REQUIRED
  check_extensions(a, r);
  r.expect(library_->entry()(BONSAI_ABI_MAJOR + 1, 0) == nullptr,
           "the entry point serves a host of the next major version instead of returning NULL");
  if (a.name != nullptr)
    r.note(std::string("plugin ") + a.name + " " + (a.version ? a.version : "?") + ", ABI " +
           std::to_string(a.abi_major) + "." + std::to_string(a.abi_minor));
  return r;
}

CheckResult PluginChecker::exported_symbols() const {
  CheckResult r{"exported_symbols"};
  const std::vector<std::string> names = conformance::exported_symbols(options_.plugin_path);
  std::string list;
  for (const std::string &n : names)
    list += (list.empty() ? "" : ", ") + n;
  r.expect(names.size() == 1 && names[0] == BONSAI_BACKEND_ENTRY_SYMBOL,
           "the plugin must export exactly " BONSAI_BACKEND_ENTRY_SYMBOL "; it exports " +
               std::to_string(names.size()) + " symbols: " + list.substr(0, 400));
  return r;
}

CheckResult PluginChecker::probe() const {
  CheckResult r{"probe"};
  const bonsai_backend_api &a = api();
  r.expect(a.probe(nullptr) == BONSAI_ERR_INVALID_ARGUMENT, "probe(NULL) is not INVALID_ARGUMENT");
  bonsai_device_info small{};
  small.struct_size = 4;
  r.expect(a.probe(&small) == BONSAI_ERR_INVALID_ARGUMENT,
           "probe with struct_size 4 is not INVALID_ARGUMENT");

  bonsai_device_info info{};
  info.struct_size = sizeof(info);
  const bonsai_status status = a.probe(&info);
  r.expect(info.struct_size == sizeof(info), "probe overwrote struct_size");
  const bool name_terminated = std::memchr(info.name, '\0', sizeof(info.name)) != nullptr;
  const bool detail_terminated = std::memchr(info.detail, '\0', sizeof(info.detail)) != nullptr;
  r.expect(name_terminated && detail_terminated, "name or detail is not NUL-terminated");
  if (status == BONSAI_OK) {
    r.expect(info.device_count >= 1, "probe OK but device_count is 0");
    r.expect(name_terminated && info.name[0] != '\0', "probe OK but the device name is empty");
    r.expect(info.total_memory_bytes > 0, "probe OK but total_memory_bytes is 0");
    r.note(std::string("device: ") + info.name + " (" + info.detail + ")");
  } else if (status == BONSAI_ERR_NO_DEVICE) {
    r.expect(info.device_count == 0, "NO_DEVICE but device_count is not 0");
    r.expect(detail_terminated && info.detail[0] != '\0', "NO_DEVICE without a reason in detail");
    r.note(std::string("no device: ") + info.detail);
  } else {
    r.fail("probe returned status " + std::to_string(status) + " (expected OK or NO_DEVICE)");
  }
  if (a.abi_minor >= 1 && status == BONSAI_OK)
    r.note("auto preference: " + std::to_string(info.preference));

  // A 1.0 host's struct ends at `detail`: a plugin of any 1.x must accept it
  // and write nothing past it (the bytes there belong to the host).
  constexpr size_t kV10Size = offsetof(bonsai_device_info, preference);
  constexpr unsigned char kGuard = 0xA5;
  alignas(bonsai_device_info) unsigned char bytes[sizeof(bonsai_device_info)];
  std::memset(bytes, kGuard, sizeof bytes);
  const uint32_t v10_size = kV10Size;
  std::memcpy(bytes, &v10_size, sizeof v10_size);
  const bonsai_status v10_status = a.probe(reinterpret_cast<bonsai_device_info *>(bytes));
  r.expect(v10_status == status, "probe with ABI 1.0's struct_size (" + std::to_string(kV10Size) +
                                     ") returned " + std::to_string(v10_status) + ", not " +
                                     std::to_string(status));
  bool untouched = true;
  for (size_t i = kV10Size; i < sizeof bytes; ++i)
    untouched = untouched && bytes[i] == kGuard;
  r.expect(untouched, "probe wrote past the end of an ABI 1.0 bonsai_device_info");
  return r;
}

std::vector<PluginChecker::NamedCheck> PluginChecker::device_checks() const {
  std::vector<NamedCheck> checks;
  checks.push_back({"error_paths", [this] { return error_paths(); }});
  for (uint32_t type : known_weight_types()) {
    const std::string label(type_name(type));
    checks.push_back({"matmul " + label, [this, type] { return matmul(type); }});
    checks.push_back({"layer_encode " + label, [this, type] { return layer_encode(type); }});
  }
  checks.push_back({"kv_truncate_redecode", [this] { return kv_truncate_redecode(); }});
  checks.push_back({"argmax_matches_logits", [this] { return argmax_matches_logits(); }});
  checks.push_back({"multi_sequence_step", [this] { return multi_sequence_step(); }});
  checks.push_back({"kv_slots", [this] { return kv_slots(); }});
  return checks;
}

std::vector<CheckResult> PluginChecker::run_all() const {
  std::vector<CheckResult> results = {api_table(), exported_symbols(), probe()};
  if (const std::string reason = context_skip_reason(); !reason.empty()) {
    CheckResult skipped("device checks");
    skipped.skipped = true;
    skipped.note(reason);
    results.push_back(skipped);
    return results;
  }
  for (const NamedCheck &check : device_checks())
    results.push_back(check.run());
  return results;
}

} // namespace bonsai::conformance

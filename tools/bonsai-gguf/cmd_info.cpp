// bonsai-gguf info: everything a GGUF file holds, in one readable listing —
// header, metadata, tensor table, totals per type and, for qwen3 files, the
// model summary that the runtime would load.
#include <charconv>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "bonsai/core/error.hpp"
#include "bonsai/core/formats.hpp"
#include "bonsai/core/gguf.hpp"
#include "bonsai/core/model_spec.hpp"
#include "bonsai/core/printable.hpp"
#include "command.hpp"
#include "command_line.hpp"

namespace bonsai::tools {

namespace {

struct InfoOptions {
  std::string path;
  size_t array_items = 4;   // array elements shown before "…"
  size_t string_chars = 60; // string bytes shown before "…"
};

double mib(uint64_t bytes) {
  return static_cast<double>(bytes) / (1024.0 * 1024.0);
}

// Quotes a string, making control characters visible and cutting it short.
std::string quoted(const std::string &s, size_t limit) {
  const size_t shown = std::min(s.size(), limit);
  std::string out(1, '"');
  out += printable(std::string_view(s).substr(0, shown), true);
  out += '"';
  if (shown < s.size())
    out += "… (" + std::to_string(s.size()) + " bytes)";
  return out;
}

std::string format_value(const gguf::Value &v, const InfoOptions &opt);

std::string format_array(const gguf::Array &a, const InfoOptions &opt) {
  // Appended piece by piece: GCC 12 warns falsely (-Wrestrict) on "[" + string.
  std::string out = "[";
  out.append(gguf::value_type_name(a.element_type)).append(" × ");
  out.append(std::to_string(a.items.size())).append("]");
  const size_t shown = std::min(a.items.size(), opt.array_items);
  for (size_t i = 0; i < shown; ++i)
    out.append(i ? ", " : " ").append(format_value(a.items[i], opt));
  if (shown < a.items.size())
    out += ", …";
  return out;
}

std::string format_value(const gguf::Value &v, const InfoOptions &opt) {
  using gguf::ValueType;
  switch (v.type) {
  case ValueType::FLOAT32:
  case ValueType::FLOAT64: {
    // Shortest text that reads back to the same number in the stored width,
    // so a float32 1e-6 shows as 1e-06, not 9.99999997e-07.
    char buf[64];
    const double d = std::get<double>(v.data);
    const auto r = v.type == ValueType::FLOAT32
                       ? std::to_chars(buf, buf + sizeof buf, static_cast<float>(d))
                       : std::to_chars(buf, buf + sizeof buf, d);
    return std::string(buf, r.ptr);
  }
  case ValueType::BOOL:
    return std::get<bool>(v.data) ? "true" : "false";
  case ValueType::STRING:
    return quoted(std::get<std::string>(v.data), opt.string_chars);
  case ValueType::ARRAY:
    return format_array(std::get<gguf::Array>(v.data), opt);
  default:
    if (const auto *u = std::get_if<uint64_t>(&v.data))
      return std::to_string(*u);
    return std::to_string(std::get<int64_t>(v.data));
  }
}

std::string dims_text(const std::vector<int64_t> &dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

void print_header(const gguf::File &f) {
  std::printf("file:      %s\n", f.path().c_str());
  std::printf("version:   %" PRIu32 "\n", f.version());
  std::printf("alignment: %" PRIu64 "\n", f.alignment());
  std::printf("size:      %zu bytes (%.2f MiB), tensor data from offset %" PRIu64 "\n",
              f.file_size(), mib(f.file_size()), f.data_offset());
}

void print_metadata(const gguf::File &f, const InfoOptions &opt) {
  std::printf("\nmetadata (%zu keys):\n", f.metadata().size());
  for (const auto &[key, value] : f.metadata())
    std::printf("  %-40s %-8s %s\n", key.c_str(),
                std::string(gguf::value_type_name(value.type)).c_str(),
                format_value(value, opt).c_str());
}

void print_tensors(const gguf::File &f) {
  std::printf("\ntensors (%zu):\n", f.tensors().size());
  if (f.tensors().empty())
    return;
  // The type column names the encoding: type 42 shows which layout it is.
  std::printf("  %-32s %-8s %-22s %12s %12s\n", "name", "type", "dims", "offset", "bytes");
  for (const auto &t : f.tensors())
    std::printf("  %-32s %-8s %-22s %12" PRIu64 " %12zu\n", t.name.c_str(),
                std::string(type_name(static_cast<uint32_t>(t.type()))).c_str(),
                dims_text(t.dims).c_str(), t.offset, t.nbytes);
}

void print_totals(const gguf::File &f) {
  if (f.tensors().empty())
    return;
  struct Total {
    size_t count = 0;
    uint64_t bytes = 0;
    int64_t elements = 0;
  };
  std::map<uint32_t, Total> by_type; // ordered by encoding id
  Total all;
  for (const auto &t : f.tensors()) {
    for (Total *total : {&by_type[static_cast<uint32_t>(t.type())], &all}) {
      total->count += 1;
      total->bytes += t.nbytes;
      total->elements += t.n_elements();
    }
  }
  std::printf("\ntotals by encoding:\n  %-50s %6s %14s %10s %16s\n", "encoding", "count", "bytes",
              "MiB", "elements");
  const auto row = [](const char *name, const Total &t) {
    std::printf("  %-50s %6zu %14" PRIu64 " %10.2f %16" PRId64 "\n", name, t.count, t.bytes,
                mib(t.bytes), t.elements);
  };
  for (const auto &[id, total] : by_type)
    row(type_description(static_cast<GgmlType>(id)).c_str(), total);
  row("all", all);
}

std::string count_text(int64_t n) {
  char buf[32];
  const double x = static_cast<double>(n);
  if (x >= 1e9)
    std::snprintf(buf, sizeof buf, "%.2f B", x / 1e9);
  else if (x >= 1e6)
    std::snprintf(buf, sizeof buf, "%.2f M", x / 1e6);
  else
    std::snprintf(buf, sizeof buf, "%.1f K", x / 1e3);
  return buf;
}

void print_model(const gguf::File &f) {
  const gguf::Value *arch = f.find("general.architecture");
  if (!arch || arch->type != gguf::ValueType::STRING ||
      (arch->as_string("arch") != "qwen3" && arch->as_string("arch") != "qwen35"))
    return;
  std::printf("\nmodel (%s):\n", arch->as_string("arch").c_str());
  ModelSpec spec;
  try {
    spec = ModelSpec::from_gguf(f);
  } catch (const Error &e) {
    // A vocabulary-only file is still worth inspecting: say why, don't fail.
    std::printf("  not loadable as a model: %s\n", e.what());
    return;
  }
  const Qwen3Hparams &h = spec.hparams;
  std::printf("  layers %" PRId64 ", hidden %" PRId64 ", heads %" PRId64 " (kv %" PRId64
              ", dim %" PRId64 "), ffn %" PRId64 "\n",
              h.n_layer, h.n_embd, h.n_head, h.n_head_kv, h.head_dim, h.n_ff);
  std::printf("  vocab %" PRId64 ", trained context %" PRId64 ", rope base %g, rms eps %g\n",
              h.n_vocab, h.n_ctx_train, static_cast<double>(h.rope.freq_base),
              static_cast<double>(h.rms_eps));
  if (const auto &y = h.hybrid) {
    const DeltaNetHparams &g = y->delta_net;
    int64_t recurrent = 0;
    for (bool r : y->recurrent)
      recurrent += r;
    std::printf("  gated DeltaNet layers %" PRId64 " (q/k heads %" PRId64 ", value heads %" PRId64
                ", dim %" PRId64 ", conv %" PRId64 "), attention layers %" PRId64
                " (rotary dims %" PRId64 "), MTP layers %" PRId64 " (a draft only)\n",
                recurrent, g.n_k_heads, g.n_v_heads, g.head_dim, g.conv_kernel,
                h.n_layer - recurrent, y->n_rot, y->n_nextn);
  }
  std::printf("  LM head: %s (%s, %s)\n", spec.tied() ? "tied" : "untied",
              spec.lm_head().name.c_str(),
              std::string(type_name(static_cast<uint32_t>(spec.lm_head().type))).c_str());
  const int64_t params = spec.n_params();
  const size_t bytes = spec.weight_bytes();
  std::printf("  parameters %s (%" PRId64 "), weights %.2f MiB, %.3f bits per weight\n",
              count_text(params).c_str(), params, mib(bytes),
              8.0 * static_cast<double>(bytes) / static_cast<double>(params));
}

int run_info(const std::vector<std::string> &args) {
  InfoOptions opt;
  CommandLine command_line("info", "info (FILE | -m FILE) [--items N] [--chars N]");
  command_line.model_file(opt.path, "GGUF file to describe (or the first argument)");
  // Signed, so that a negative value is refused (an unsigned option would
  // wrap -1 to "everything").
  int64_t items = static_cast<int64_t>(opt.array_items);
  int64_t chars = static_cast<int64_t>(opt.string_chars);
  command_line.add_options()("items", po::value(&items)->value_name("N")->default_value(items),
                             "array elements to show per metadata array")(
      "chars", po::value(&chars)->value_name("N")->default_value(chars),
      "string bytes to show before cutting");
  if (!command_line.parse(args))
    return kExitOk;
  command_line.no_more_words();
  if (items < 0)
    command_line.fail("--items must be >= 0, got " + std::to_string(items));
  if (chars < 0)
    command_line.fail("--chars must be >= 0, got " + std::to_string(chars));
  opt.array_items = static_cast<size_t>(items);
  opt.string_chars = static_cast<size_t>(chars);

  const gguf::File f = gguf::File::open(opt.path);
  print_header(f);
  print_metadata(f, opt);
  print_tensors(f);
  print_totals(f);
  print_model(f);
  return kExitOk;
}

const bool registered =
    register_command({"info", "show a GGUF file's header, metadata, tensors and model", &run_info});

} // namespace

} // namespace bonsai::tools

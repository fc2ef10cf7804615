// bonsai info -m FILE: what the model is, read from the GGUF metadata alone
// (no plugin is loaded, so it works on any machine).
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>

#include "bonsai/core/gguf.hpp"
#include "bonsai/core/model_spec.hpp"
#include "bonsai/core/printable.hpp"
#include "bonsai/core/tokenizer.hpp"
#include "chat_template_kind.hpp"
#include "commands.hpp"
#include "model_file.hpp"
#include "options.hpp"
#include "usage_error.hpp"

namespace bonsai::cli {
namespace {

std::string human_bytes(uint64_t bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int unit = 0;
  while (v >= 1024 && unit < 4) {
    v /= 1024;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, unit == 0 ? "%.0f %s" : "%.2f %s", v, units[unit]);
  return buf;
}

std::string human_count(int64_t n) {
  char buf[32];
  if (n >= 1000000000)
    std::snprintf(buf, sizeof buf, "%.2f B", static_cast<double>(n) / 1e9);
  else if (n >= 1000000)
    std::snprintf(buf, sizeof buf, "%.2f M", static_cast<double>(n) / 1e6);
  else
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(n));
  return buf;
}

// "Q1_0 (1-bit, 128 per block) x 197, F32 x 113" in order of first use.
std::string type_census(const ModelSpec &spec) {
  std::vector<std::pair<std::string, int>> counts;
  for (const TensorView *t : spec.all_tensors()) {
    const std::string name = type_description(t->type);
    auto it =
        std::find_if(counts.begin(), counts.end(), [&](const auto &c) { return c.first == name; });
    if (it == counts.end())
      counts.emplace_back(name, 1);
    else
      ++it->second;
  }
  std::string out;
  for (const auto &[name, count] : counts)
    out += (out.empty() ? "" : ", ") + name + " x " + std::to_string(count);
  return out;
}

std::string special_id(const char *label, int32_t id) {
  return id < 0 ? std::string() : std::string(", ") + label + " " + std::to_string(id);
}

void line(std::string &out, const char *key, const std::string &value) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%-15s", key);
  out += buf;
  out += value;
  out += '\n';
}

} // namespace

int info_command(const Args &args) {
  std::string model;
  RopeOverrides rope_overrides;
  CommandLine command_line("info", "info -m FILE");
  command_line.model(model).rope(rope_overrides).logging();
  if (!command_line.parse(args))
    return kExitOk;
  check_model_path(model);

  const gguf::File file = gguf::File::open(model);
  ModelSpec spec = ModelSpec::from_gguf(file);
  apply_rope_overrides(spec.hparams.rope, rope_overrides);
  const Tokenizer tokenizer = Tokenizer::from_gguf(file);
  const Qwen3Hparams &hp = spec.hparams;

  // Built whole, then printed: an error midway leaves stdout empty.
  std::string out;
  line(out, "file:",
       model + " (" + human_bytes(file.file_size()) + ", GGUF v" + std::to_string(file.version()) +
           ")");
  if (const auto *name = file.find("general.name"))
    line(out, "name:", printable(name->as_string("general.name")));
  line(out, "architecture:", file.get_string("general.architecture"));
  line(out, "parameters:",
       human_count(spec.n_params()) + " (weights " + human_bytes(spec.weight_bytes()) + ")");
  line(out, "weight types:", type_census(spec));
  line(out, "layers:", std::to_string(hp.n_layer));
  if (const auto &y = hp.hybrid) {
    const DeltaNetHparams &g = y->delta_net;
    const auto recurrent = std::count(y->recurrent.begin(), y->recurrent.end(), true);
    line(out, "deltanet:",
         std::to_string(recurrent) + " gated DeltaNet layers, " + std::to_string(g.n_k_heads) +
             " q/k and " + std::to_string(g.n_v_heads) + " value heads of " +
             std::to_string(g.head_dim) + ", conv " + std::to_string(g.conv_kernel));
    line(out, "attention:",
         std::to_string(hp.n_layer - recurrent) + " gated attention layers, " +
             std::to_string(y->n_rot) + " rotary dims; " + std::to_string(y->n_nextn) +
             " MTP layer(s), run only as a draft (--draft-mtp)");
  }
  line(out, "embedding:", std::to_string(hp.n_embd));
  line(out, "heads:",
       std::to_string(hp.n_head) + " query, " + std::to_string(hp.n_head_kv) +
           " key/value, head dim " + std::to_string(hp.head_dim));
  line(out, "feed-forward:", std::to_string(hp.n_ff));
  line(out, "context:", std::to_string(hp.n_ctx_train) + " tokens (training)");
  char norms[64];
  std::snprintf(norms, sizeof norms, "rms eps %g", static_cast<double>(hp.rms_eps));
  line(out, "norms:", norms);
  line(out, "rope:", hp.rope.describe());
  line(out, "lm head:",
       spec.tied() ? "tied (token_embd.weight)"
                   : "untied (output.weight, " +
                         std::string(type_name(static_cast<uint32_t>(spec.output->type))) + ")");
  line(out, "vocabulary:",
       std::to_string(hp.n_vocab) + " rows, " + std::to_string(tokenizer.n_vocab()) + " tokens" +
           special_id("bos", tokenizer.bos_id()) + special_id("eos", tokenizer.eos_id()) +
           special_id("im_end", tokenizer.im_end_id()));
  line(out, "chat template:", describe_chat_template(tokenizer.chat_template()));
  std::fputs(out.c_str(), stdout);
  return kExitOk;
}

} // namespace bonsai::cli

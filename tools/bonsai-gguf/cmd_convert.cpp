// bonsai-gguf convert: repack a model's weight matrices into another
// encoding without changing a single value (core/convert.hpp decides what is
// lossless), e.g. any ternary file to mainline Q2_0 (group 64), PQ2_0 <->
// PTQ1_0 <-> PrismML Q2_0, or F16 Bonsai weights to Q1_0 or ternary. A
// conversion that would lose information stops with the tensor, row and
// block that prevent it, and no output file is left behind.
#include <cstdio>
#include <string>
#include <vector>

#include "bonsai/core/convert.hpp"
#include "bonsai/core/error.hpp"
#include "bonsai/core/formats.hpp"
#include "bonsai/core/gguf.hpp"
#include "command.hpp"
#include "command_line.hpp"

namespace bonsai::tools {
namespace {

// A weight matrix in an encoding convert_row may repack (an empty tensor has
// nothing to convert).
bool is_matrix_source(const gguf::TensorInfo &t) {
  const GgmlType type = t.type();
  return t.dims.size() >= 2 && t.dims[0] > 0 &&
         (type == GgmlType::Q1_0 || traits_of(type).ternary || type == GgmlType::F16 ||
          type == GgmlType::BF16 || type == GgmlType::F32);
}

struct Plan {
  std::vector<std::string> converted;
  std::vector<std::string> kept; // matrices whose encoding has no exact way to the target
};

struct ConvertArgs {
  std::string input;
  std::string output;
  std::string type_text;
  GgmlType target = GgmlType::Q1_0;
};

// Parses convert's command line; false when --help was printed.
bool parse_convert(const std::vector<std::string> &args, ConvertArgs &a) {
  CommandLine command_line("convert", "convert (IN.gguf | -m IN.gguf) -o OUT.gguf --type TYPE");
  command_line.model_file(a.input, "input GGUF file (or the first argument)");
  command_line.add_options()("output,o", po::value(&a.output)->value_name("OUT.gguf"),
                             "output GGUF file")(
      "type", po::value(&a.type_text)->value_name("TYPE"),
      "target encoding of the weight matrices: q1_0, q2_0, q2_0_g64, pq2_0, ptq1_0, tq1_0, "
      "tq2_0");
  if (!command_line.parse(args))
    return false;
  command_line.no_more_words();
  if (a.output.empty())
    command_line.fail("no output file given: pass -o OUT.gguf");
  if (a.type_text.empty())
    command_line.fail("no target encoding given: pass --type TYPE");
  const auto target = type_from_name(a.type_text);
  if (!target || !(*target == GgmlType::Q1_0 || traits_of(*target).ternary))
    command_line.fail("--type must be q1_0, q2_0, q2_0_g64, pq2_0, ptq1_0, tq1_0 or tq2_0, not '" +
                      a.type_text + "'");
  a.target = *target;
  if (a.input == a.output)
    command_line.fail("the output must be another file than the input");
  return true;
}

// Adds every tensor of `file` to `w`: weight matrices with an exact route
// to `target` converted (while the Writer writes), the rest as they are.
Plan add_tensors(const gguf::File &file, GgmlType target, gguf::Writer &w) {
  Plan plan;
  for (const gguf::TensorInfo &t : file.tensors()) {
    const std::span<const uint8_t> bytes(t.data, t.nbytes);
    if (!is_matrix_source(t) || t.type() == target) {
      w.add_tensor_borrowed(t.name, t.type(), t.dims, bytes);
      continue;
    }
    if (!can_convert(t.type(), target) || t.dims[0] % traits_of(target).block_elements != 0) {
      plan.kept.push_back(t.name + " (" + type_description(t.type()) + ")");
      w.add_tensor_borrowed(t.name, t.type(), t.dims, bytes);
      continue;
    }
    plan.converted.push_back(t.name);
    w.add_tensor_filled(t.name, target, t.dims, [&t, target](std::span<uint8_t> out) {
      // Rows while the Writer writes; a refusal names tensor and row.
      convert_rows(t.type(), target, t.data, out.data(), t.dims[0], t.n_elements() / t.dims[0],
                   t.name);
    });
  }
  return plan;
}

int run_convert(const std::vector<std::string> &args) {
  ConvertArgs a;
  if (!parse_convert(args, a))
    return kExitOk;
  const gguf::File file = gguf::File::open(a.input);
  gguf::Writer::check_target(a.output); // before the work, not after it
  gguf::Writer w;
  for (const auto &[key, value] : file.metadata())
    w.set(key, value);
  const Plan plan = add_tensors(file, a.target, w);
  std::printf("converting %zu matrices of %s to %s ...\n", plan.converted.size(), a.input.c_str(),
              type_description(a.target).c_str());
  std::fflush(stdout);
  w.write(a.output);
  std::printf("wrote %s: %zu matrices converted, %zu tensors unchanged\n", a.output.c_str(),
              plan.converted.size(), file.tensors().size() - plan.converted.size());
  for (const std::string &name : plan.kept)
    std::printf("  kept: %s has no exact conversion to %s\n", name.c_str(), a.type_text.c_str());
  return kExitOk;
}

const bool registered = register_command(
    {"convert", "repack weight matrices into another encoding, exactly or not at all",
     run_convert});

} // namespace
} // namespace bonsai::tools

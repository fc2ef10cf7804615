// bonsai-gguf convert: repack a model's weight matrices into another
// encoding without changing a single value (core/convert.hpp decides what is
// lossless), e.g. any ternary file to mainline Q2_0 (group 64), PQ2_0 <->
// PTQ1_0 <-> PrismML Q2_0, or F16 Bonsai weights to Q1_0 or ternary. A
// conversion that would lose information stops with the tensor, row and
// block that prevent it, and no output file is left behind.
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "bonsai/core/convert.hpp"
#include "bonsai/core/error.hpp"
#include "bonsai/core/formats.hpp"
#include "bonsai/core/gguf.hpp"
#include "command.hpp"

namespace po = boost::program_options;

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

int run_convert(const std::vector<std::string> &args) {
  po::options_description visible("bonsai-gguf convert IN.gguf -o OUT.gguf --type TYPE");
  visible.add_options()("help,h", "show this help")("output,o", po::value<std::string>(),
                                                    "output GGUF file")(
      "type", po::value<std::string>(),
      "target encoding of the weight matrices: q1_0, q2_0, q2_0_g64, pq2_0, ptq1_0, tq1_0, "
      "tq2_0");
  po::options_description all;
  all.add(visible);
  all.add_options()("input", po::value<std::string>(), "input GGUF file");
  po::positional_options_description positional;
  positional.add("input", 1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(all).positional(positional).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << visible << "\n";
    return 0;
  }
  if (!vm.count("input") || !vm.count("output") || !vm.count("type"))
    throw Error("usage: bonsai-gguf convert IN.gguf -o OUT.gguf --type TYPE");
  const std::string type_text = vm["type"].as<std::string>();
  const auto target = type_from_name(type_text);
  if (!target || !(*target == GgmlType::Q1_0 || traits_of(*target).ternary))
    throw Error("--type must be q1_0, q2_0, q2_0_g64, pq2_0, ptq1_0, tq1_0 or tq2_0, not '" +
                type_text + "'");
  const std::string input = vm["input"].as<std::string>();
  const std::string output = vm["output"].as<std::string>();
  if (input == output)
    throw Error("the output must be another file than the input");

  const gguf::File file = gguf::File::open(input);
  gguf::Writer w;
  for (const auto &[key, value] : file.metadata())
    w.set(key, value);
  Plan plan;
  for (const gguf::TensorInfo &t : file.tensors()) {
    const std::span<const uint8_t> bytes(t.data, t.nbytes);
    if (!is_matrix_source(t) || t.type() == *target) {
      w.add_tensor_borrowed(t.name, t.type(), t.dims, bytes);
      continue;
    }
    if (!can_convert(t.type(), *target) || t.dims[0] % traits_of(*target).block_elements != 0) {
      plan.kept.push_back(t.name + " (" + type_description(t.type()) + ")");
      w.add_tensor_borrowed(t.name, t.type(), t.dims, bytes);
      continue;
    }
    plan.converted.push_back(t.name);
    const GgmlType to = *target;
    w.add_tensor_filled(t.name, to, t.dims, [&t, to](std::span<uint8_t> out) {
      // Rows while the Writer writes; a refusal names tensor and row.
      convert_rows(t.type(), to, t.data, out.data(), t.dims[0], t.n_elements() / t.dims[0], t.name);
    });
  }
  std::printf("converting %zu matrices of %s to %s ...\n", plan.converted.size(), input.c_str(),
              type_description(*target).c_str());
  std::fflush(stdout);
  w.write(output);
  std::printf("wrote %s: %zu matrices converted, %zu tensors unchanged\n", output.c_str(),
              plan.converted.size(), file.tensors().size() - plan.converted.size());
  for (const std::string &name : plan.kept)
    std::printf("  kept: %s has no exact conversion to %s\n", name.c_str(), type_text.c_str());
  return 0;
}

const bool registered = register_command(
    {"convert", "repack weight matrices into another encoding, exactly or not at all",
     run_convert});

} // namespace
} // namespace bonsai::tools

// bonsai-gguf tokenize / detokenize: run a GGUF file's tokenizer from the shell.
#include <charconv>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "bonsai/core/error.hpp"
#include "bonsai/core/gguf.hpp"
#include "bonsai/core/printable.hpp"
#include "bonsai/core/tokenizer.hpp"
#include "command.hpp"
#include "command_line.hpp"
#include "text_file.hpp"

namespace bonsai::tools {

namespace {

// Quotes a token's bytes so that spaces, control characters and partial UTF-8
// sequences are visible: "\n", "\t", "\xe4" ...
std::string visible(std::string_view bytes) {
  std::string out(1, '"');
  out += printable(bytes, true);
  out += '"';
  return out;
}

std::vector<int32_t> parse_ids(const std::string &list) {
  std::vector<int32_t> ids;
  std::stringstream stream(list);
  std::string item;
  while (std::getline(stream, item, ',')) {
    const size_t first = item.find_first_not_of(" \t");
    const size_t last = item.find_last_not_of(" \t");
    const std::string trimmed =
        first == std::string::npos ? std::string() : item.substr(first, last - first + 1);
    int32_t id = 0;
    const auto [end, ec] = std::from_chars(trimmed.data(), trimmed.data() + trimmed.size(), id);
    if (trimmed.empty() || ec != std::errc() || end != trimmed.data() + trimmed.size())
      throw UsageError("IDS: '" + trimmed + "' is not a token id (expected e.g. 9707,1879)");
    ids.push_back(id);
  }
  if (ids.empty())
    throw UsageError("IDS: no token ids given (expected e.g. 9707,1879)");
  return ids;
}

struct TokenizeArgs {
  std::string model;
  std::string text;
  std::string text_file;
  bool pieces = false;
  bool no_special = false;
};

// Parses tokenize's command line; false when --help was printed.
bool parse_tokenize(const std::vector<std::string> &args, TokenizeArgs &a) {
  CommandLine command_line("tokenize",
                           "tokenize (FILE | -m FILE) (--text TEXT | --text-file F) [--pieces] "
                           "[--no-special]");
  command_line.model_file(a.model, "GGUF file whose tokenizer is used (or the first argument)");
  command_line.add_options()("text", po::value(&a.text)->value_name("TEXT"), "text to tokenize")(
      "text-file", po::value(&a.text_file)->value_name("F"),
      "read the text from this file (bytes as is)")("pieces", po::bool_switch(&a.pieces),
                                                    "print one 'id<TAB>\"piece\"' line per token")(
      "no-special", po::bool_switch(&a.no_special),
      "treat control tokens such as <|im_start|> as plain text");
  if (!command_line.parse(args))
    return false;
  // The text as a second word is the usual slip: say where it goes.
  command_line.no_more_words("use --text for the text to tokenize, e.g. bonsai-gguf tokenize " +
                             std::string(command_line.given("model") ? "-m " : "") +
                             "FILE --text 'Hello world'");
  if (command_line.given("text") == command_line.given("text-file"))
    command_line.fail("give exactly one of --text TEXT or --text-file F");
  return true;
}

int run_tokenize(const std::vector<std::string> &args) {
  TokenizeArgs a;
  if (!parse_tokenize(args, a))
    return kExitOk;
  const std::string text =
      a.text_file.empty() ? a.text : cli::read_text_file(a.text_file, "--text-file", true);
  const auto file = gguf::File::open(a.model);
  const Tokenizer tokenizer = Tokenizer::from_gguf(file);
  const std::vector<int32_t> ids = tokenizer.encode(text, !a.no_special);
  if (a.pieces) {
    for (int32_t id : ids)
      std::cout << id << '\t' << visible(tokenizer.token_bytes(id)) << '\n';
  } else {
    for (size_t i = 0; i < ids.size(); ++i)
      std::cout << (i ? "," : "") << ids[i];
    std::cout << '\n';
  }
  return kExitOk;
}

int run_detokenize(const std::vector<std::string> &args) {
  std::string model;
  CommandLine command_line("detokenize", "detokenize (FILE | -m FILE) IDS",
                           "IDS: comma-separated token ids, e.g. 9707,1879");
  command_line.model_file(model, "GGUF file whose tokenizer is used (or the first argument)");
  if (!command_line.parse(args))
    return kExitOk;
  const std::vector<int32_t> ids = parse_ids(command_line.take_word(
      "token ids", "pass IDS after the file, e.g. bonsai-gguf detokenize FILE 9707,1879"));
  command_line.no_more_words("IDS is one comma-separated list without spaces, e.g. 9707,1879");
  const auto file = gguf::File::open(model);
  const Tokenizer tokenizer = Tokenizer::from_gguf(file);
  std::cout << tokenizer.decode(ids) << '\n';
  return kExitOk;
}

const bool registered_tokenize =
    register_command({"tokenize", "print the token ids (or pieces) of a text", &run_tokenize});
const bool registered_detokenize = register_command(
    {"detokenize", "print the text of comma-separated token ids", &run_detokenize});

} // namespace

} // namespace bonsai::tools

#include "command_line.hpp"

#include <iostream>

namespace bonsai::tools {

CommandLine::CommandLine(std::string command, std::string synopsis, std::string about)
    : command_(std::move(command)), synopsis_(std::move(synopsis)), about_(std::move(about)),
      options_("options") {
  options_.add_options()("help,h", "show this help and exit");
}

po::options_description_easy_init CommandLine::add_options() {
  return options_.add_options();
}

CommandLine &CommandLine::model_file(std::string &path, const char *help) {
  options_.add_options()("model,m", po::value(&path)->value_name("FILE"), help);
  model_path_ = &path;
  return *this;
}

bool CommandLine::parse(const std::vector<std::string> &args) {
  po::options_description all = options_;
  all.add_options()("positional-words", po::value(&words_));
  po::positional_options_description words;
  words.add("positional-words", -1);
  // No abbreviations: a prefix must never silently mean another flag.
  const int style = po::command_line_style::default_style & ~po::command_line_style::allow_guessing;
  try {
    po::store(po::command_line_parser(args).options(all).positional(words).style(style).run(),
              values_);
    if (values_.count("help")) {
      std::cout << "usage: bonsai-gguf " << synopsis_ << "\n"
                << (about_.empty() ? "" : about_ + "\n") << "\n"
                << options_ << std::flush;
      return false;
    }
    po::notify(values_);
  } catch (const po::error &e) {
    fail(e.what());
  }
  if (model_path_ != nullptr && !given("model"))
    *model_path_ = take_word("GGUF file", "pass FILE or -m FILE");
  return true;
}

bool CommandLine::given(const std::string &name) const {
  const auto it = values_.find(name);
  return it != values_.end() && !it->second.defaulted();
}

std::string CommandLine::take_word(const std::string &what, const std::string &example) {
  if (words_.empty())
    fail("no " + what + " given: " + example);
  std::string word = words_.front();
  words_.erase(words_.begin());
  return word;
}

void CommandLine::no_more_words(const std::string &hint) const {
  if (words_.empty())
    return;
  std::string list;
  for (const std::string &w : words_)
    list += (list.empty() ? "'" : ", '") + w + "'";
  const std::string why = !hint.empty() ? hint
                          : model_path_ != nullptr && given("model")
                              ? "the GGUF file is already given with -m"
                              : "every value belongs to a flag";
  fail("unexpected argument" + std::string(words_.size() > 1 ? "s " : " ") + list + ": " + why);
}

void CommandLine::fail(const std::string &message) const {
  throw UsageError(message + " (see 'bonsai-gguf " + command_ + " --help')");
}

} // namespace bonsai::tools

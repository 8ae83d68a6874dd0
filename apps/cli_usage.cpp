#include "apps/cli_usage.h"

#include "common/edit_distance.h"

namespace spade::apps {

namespace {

std::vector<const CLI::App*> subcommands_of(const CLI::App& cmd) {
  return cmd.get_subcommands([](const CLI::App* sub) { return !sub->get_name().empty(); });
}

std::vector<std::string> subcommand_names(const CLI::App& cmd) {
  std::vector<std::string> names;
  for (const CLI::App* sub : subcommands_of(cmd)) names.push_back(sub->get_name());
  return names;
}

// The words after "spade" that run `cmd`, each followed by a space: "" for the root, "duel " for spade duel.
std::string words_below_root(const CLI::App& cmd) {
  return cmd.get_parent() == nullptr ? "" : words_below_root(*cmd.get_parent()) + cmd.get_name() + " ";
}

// The message for `typed`, an argument that `cmd` (the command being parsed when it came) did not take.
std::string unexpected(const CLI::App& cmd, const std::string& typed) {
  if (typed.size() > 1 && typed[0] == '-' && typed.find_first_not_of('-') != std::string::npos) {
    const std::string name = typed.substr(0, typed.find('='));  // --confg=x: the option is --confg
    std::vector<std::string> bare, spelled;  // names without dashes (compared) and as typed on the line
    for (const CLI::Option* opt : cmd.get_options()) {
      for (const std::string& l : opt->get_lnames()) {
        bare.push_back(l);
        spelled.push_back("--" + l);
      }
      for (const std::string& s : opt->get_snames()) {
        bare.push_back(s);
        spelled.push_back("-" + s);
      }
    }
    std::string message = "unknown option '" + name + "' for '" + command_path(cmd) + "'";
    const std::string typed_bare = name.substr(name.find_first_not_of('-'));
    if (const auto match = closest_match(typed_bare, bare)) {
      for (size_t i = 0; i < bare.size(); ++i)
        if (bare[i] == *match) return message + "; did you mean '" + spelled[i] + "'?";
    }
    return message;
  }
  const std::vector<std::string> names = subcommand_names(cmd);
  if (names.empty()) return "unexpected argument '" + typed + "' for '" + command_path(cmd) + "'";
  const std::string prefix = words_below_root(cmd);
  std::string message = "unknown command '" + prefix + typed + "'";
  if (const auto match = closest_match(typed, names)) return message + "; did you mean '" + prefix + *match + "'?";
  return message + " ('" + command_path(cmd) + " --help' lists the commands)";
}

// The commands the last parse selected, root first.
std::vector<const CLI::App*> parsed_chain(const CLI::App& root) {
  std::vector<const CLI::App*> chain = {&root};
  while (!chain.back()->get_subcommands().empty()) chain.push_back(chain.back()->get_subcommands().front());
  return chain;
}

// What `opt` takes, from CLI11's type name of its value (INT, UINT, FLOAT, BOOLEAN, TEXT, ...).
std::string expected_value(const CLI::Option& opt) {
  const std::string type = opt.get_type_name();
  if (type.rfind("INT", 0) == 0) return "an integer";
  if (type.rfind("UINT", 0) == 0) return "a non-negative integer";
  if (type.rfind("FLOAT", 0) == 0) return "a number";
  if (type.rfind("BOOLEAN", 0) == 0) return "true or false";
  return "a value of type " + type;
}

}  // namespace

std::string HelpFormatter::make_option_opts(const CLI::Option* opt) const {
  std::string text = CLI::Formatter::make_option_opts(opt);
  if (opt->get_default_str() == "[]") {
    const size_t at = text.find("=[]");
    if (at != std::string::npos) text.erase(at, 3);
  }
  return text;
}

std::string command_path(const CLI::App& cmd) {
  return cmd.get_parent() == nullptr ? cmd.get_name() : command_path(*cmd.get_parent()) + " " + cmd.get_name();
}

const CLI::App& parsed_command(const CLI::App& root) { return *parsed_chain(root).back(); }

std::string explain_parse_error(const CLI::App& root, const CLI::ParseError& e) {
  // CLI11 leaves each argument no command took with the command that was being parsed when it came.
  const std::vector<const CLI::App*> chain = parsed_chain(root);
  for (const CLI::App* cmd : chain) {
    const std::vector<std::string> left = cmd->remaining(false);
    if (!left.empty()) return unexpected(*cmd, left.front());
  }
  const CLI::App& deepest = *chain.back();
  if (dynamic_cast<const CLI::RequiredError*>(&e) != nullptr && !subcommand_names(deepest).empty() &&
      deepest.get_require_subcommand_min() > deepest.get_subcommands().size()) {
    std::string list;
    for (const std::string& n : subcommand_names(deepest)) list += (list.empty() ? "" : ", ") + n;
    return "'" + command_path(deepest) + "' needs a command: one of " + list;
  }
  if (dynamic_cast<const CLI::ConversionError*>(&e) != nullptr) {
    // CLI11 words it "Could not convert: --seed = abc": say what the option takes instead.
    const std::string what = e.what(), head = "Could not convert: ";
    const size_t eq = what.find(" = ");
    if (what.rfind(head, 0) == 0 && eq != std::string::npos) {
      const std::string name = what.substr(head.size(), eq - head.size());
      if (const CLI::Option* opt = deepest.get_option_no_throw(name))
        return command_path(deepest) + ": " + name + " expects " + expected_value(*opt) + ", got '" +
               what.substr(eq + 3) + "'";
    }
  }
  return command_path(deepest) + ": " + e.what();
}

const CLI::App* find_command(const CLI::App& root, const std::vector<std::string>& words, std::string* error) {
  const CLI::App* cmd = &root;
  for (const std::string& word : words) {
    const CLI::App* next = nullptr;
    for (const CLI::App* sub : subcommands_of(*cmd))
      if (sub->get_name() == word) next = sub;
    if (next == nullptr) {
      *error = unexpected(*cmd, word);
      return nullptr;
    }
    cmd = next;
  }
  return cmd;
}

std::string help_text(const CLI::App& cmd) {
  // App::help() would descend into the subcommands the parse selected (`help` itself, for `spade help`).
  return cmd.get_formatter()->make_help(&cmd, command_path(cmd), CLI::AppFormatMode::Normal);
}

}  // namespace spade::apps

#include "envsandbox/envd_prelude.h"

#include <pybind11/embed.h>

namespace py = pybind11;

namespace spade::envsandbox::envd {
namespace {

// Standard modules imported ahead of time. The first block is what the reference loader injects
// (spade-reference.md §2); the rest are modules generated programs commonly import themselves.
constexpr const char* kInjectedModules[] = {"itertools", "math", "random", "re", "json", "collections",
                                            "functools", "string", "copy", "heapq", "operator",
                                            "statistics"};
constexpr const char* kWarmModules[] = {"abc", "array", "bisect", "dataclasses", "decimal", "enum",
                                        "fractions", "hashlib", "inspect", "linecache", "textwrap",
                                        "time", "traceback", "types", "typing", "ast"};
constexpr const char* kTypingNames[] = {"Any", "Callable", "Dict", "FrozenSet", "Iterable", "Iterator",
                                        "List", "Optional", "Sequence", "Set", "Tuple", "Type", "Union"};

// Helpers run inside a child. Plain Python because they only orchestrate calls into the program; the
// values they hand back are still converted by envd_value.cpp with exact type checks.
constexpr const char* kHelpers = R"PY(
import ast, inspect, linecache, re, sys, traceback, types

MODULE_NAME = "spade_env"
FILENAME = "<env>"

def new_namespace(prelude, source):
    """A fresh module dict holding the pre-injected names; registered so dataclasses/typing work."""
    mod = types.ModuleType(MODULE_NAME)
    mod.__dict__.update(prelude)
    sys.modules[MODULE_NAME] = mod
    linecache.cache[FILENAME] = (len(source), None, source.splitlines(True), FILENAME)
    return mod.__dict__

def find_env_class(ns):
    """First class defined by the program whose name ends in 'Env', skipping classes that are bases of
    another such class (the reference loader excludes base classes, spade-reference.md §2)."""
    found = [v for k, v in list(ns.items())
             if isinstance(v, type) and k.endswith("Env") and v.__dict__.get("__module__") == MODULE_NAME]
    for cls in found:
        if not any(other is not cls and issubclass(other, cls) for other in found):
            return cls
    return None

def instantiate(cls, cap):
    """cls(max_turns=min(class default, cap)) when the constructor names max_turns, else cls()."""
    try:
        params = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        params = {}
    p = params.get("max_turns")
    if p is not None and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
        default = p.default
        turns = min(default, cap) if type(default) is int else cap
        return cls(max_turns=turns), turns
    return cls(), None

def describe_exception(exc):
    """(qualified type name, str(exc), formatted traceback) without letting a hostile __str__ escape."""
    t = type(exc)
    name = t.__qualname__ if t.__module__ in ("builtins", MODULE_NAME) else t.__module__ + "." + t.__qualname__
    try:
        message = str(exc)
    except BaseException:
        message = "<exception message could not be printed>"
    try:
        tb = "".join(traceback.format_exception(exc))
    except BaseException:
        tb = ""
    return name, message, tb

# Non-empty content only: an empty {} on the failing line is far more often a dict literal.
_BRACES = re.compile(r"(?<!\{)\{([^{}]+)\}(?!\})")

def _is_expression(text):
    try:
        ast.parse(text.strip(), mode="eval")
        return True
    except (SyntaxError, ValueError):
        return False

def repair_fstring_braces(source):
    """spade-reference.md §2: up to 20 times compile; on a SyntaxError, on the failing line rewrite each
    non-empty {x} whose content is not a valid Python expression as {{x}}. Stops when nothing changes."""
    for _ in range(20):
        try:
            compile(source, FILENAME, "exec")
            return source
        except SyntaxError as e:
            lines = source.split("\n")
            if not e.lineno or e.lineno > len(lines):
                return source
            line = lines[e.lineno - 1]
            fixed = _BRACES.sub(lambda m: m.group(0) if _is_expression(m.group(1)) else "{{" + m.group(1) + "}}", line)
            if fixed == line:
                return source
            lines[e.lineno - 1] = fixed
            source = "\n".join(lines)
    return source
)PY";

}  // namespace

Prelude load_prelude() {
  Prelude p;
  for (const char* name : kInjectedModules) p.names[name] = py::module_::import(name);
  for (const char* name : kWarmModules) py::module_::import(name);
  try {
    p.names["np"] = py::module_::import("numpy");
    p.numpy = true;
  } catch (py::error_already_set&) {
    p.numpy = false;  // numpy is optional (reference injects it when present)
  }
  py::module_ collections = py::module_::import("collections");
  for (const char* name : {"deque", "Counter", "defaultdict"}) p.names[name] = collections.attr(name);
  p.names["combinations"] = py::module_::import("itertools").attr("combinations");
  py::module_ functools = py::module_::import("functools");
  p.names["reduce"] = functools.attr("reduce");
  p.names["lru_cache"] = functools.attr("lru_cache");
  p.names["deepcopy"] = py::module_::import("copy").attr("deepcopy");
  py::module_ typing = py::module_::import("typing");
  for (const char* name : kTypingNames) p.names[name] = typing.attr(name);

  p.helpers = py::module_::import("types").attr("ModuleType")("_spade_envd_helpers");
  py::exec(kHelpers, p.helpers.attr("__dict__"));
  py::module_::import("sys").attr("modules")["_spade_envd_helpers"] = p.helpers;
  return p;
}

}  // namespace spade::envsandbox::envd

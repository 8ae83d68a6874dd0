// spade-envd: converts a Python value returned by an environment program into the typed JSON tree of
// protocol.h ("Value encoding"). Uses exact type checks and the C API only: no user-defined method
// (__repr__, __iter__, __eq__, __str__, __index__, ...) is ever called, so a hostile object cannot run
// code or loop here. Subclasses of str/int/float/tuple/list/dict are read through their base storage
// and tagged with their type name. Depth, element count, string length and total size are capped;
// anything dropped is marked "cut".
#pragma once
#include <Python.h>

#include <cstdint>
#include <string>
#include <nlohmann/json.hpp>

namespace spade::envsandbox::envd {

struct ValueCaps {
  int64_t max_str_chars;  // per string, in characters (code points)
  int64_t max_bytes;      // whole tree, in (estimated) encoded JSON bytes
};

/// Encodes `value` (a borrowed reference). Requires the GIL; leaves no Python error set.
nlohmann::json encode_value(PyObject* value, const ValueCaps& caps);

}  // namespace spade::envsandbox::envd

namespace spade::envsandbox::envd {

/// UTF-8 text of a str object (lone surrogates replaced), cut to at most `max_bytes` bytes; "" for a
/// non-str. Requires the GIL; leaves no Python error set.
std::string str_text(PyObject* value, int64_t max_bytes);

}  // namespace spade::envsandbox::envd

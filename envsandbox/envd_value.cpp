#include "envsandbox/envd_value.h"

#include <cmath>
#include <string>

#include "common/strings.h"
#include "envsandbox/protocol.h"

using nlohmann::json;

namespace spade::envsandbox::envd {
namespace {

// Qualified type name read from the type object itself (no attribute lookup that could run code).
std::string type_name(PyTypeObject* t) {
  if (!(t->tp_flags & Py_TPFLAGS_HEAPTYPE)) return t->tp_name;
  std::string name;
  PyObject* module = t->tp_dict ? PyDict_GetItemString(t->tp_dict, "__module__") : nullptr;
  if (module != nullptr && PyUnicode_CheckExact(module)) {
    const char* m = PyUnicode_AsUTF8(module);
    if (m != nullptr && std::string(m) != "builtins") name = std::string(m) + ".";
    PyErr_Clear();
  }
  PyObject* qual = reinterpret_cast<PyHeapTypeObject*>(t)->ht_qualname;
  const char* q = (qual != nullptr && PyUnicode_CheckExact(qual)) ? PyUnicode_AsUTF8(qual) : nullptr;
  PyErr_Clear();
  return name + (q ? q : t->tp_name);
}

// Estimated size of a string once JSON-escaped.
int64_t escaped_size(const std::string& s) {
  int64_t n = static_cast<int64_t>(s.size()) + 2;
  for (unsigned char c : s) n += c < 0x20 ? 5 : (c == '"' || c == '\\') ? 1 : 0;
  return n;
}

class Encoder {
 public:
  explicit Encoder(const ValueCaps& caps) : caps_(caps), budget_(caps.max_bytes) {}

  json encode(PyObject* o, int depth) {
    ++elements_;
    budget_ -= 8;
    if (o == Py_None) return nullptr;
    if (PyBool_Check(o)) return o == Py_True;  // bool cannot be subclassed
    PyTypeObject* t = Py_TYPE(o);
    json node;
    if (PyUnicode_Check(o)) {
      bool cut = false;
      std::string text = str_text(o, &cut);
      if (t == &PyUnicode_Type && !cut) return text;
      node = json{{"t", "str"}, {"v", std::move(text)}};
      if (cut) node["cut"] = true;
    } else if (PyLong_Check(o)) {
      int overflow = 0;
      long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
      PyErr_Clear();
      if (overflow == 0 && t == &PyLong_Type) return v;
      node = overflow == 0 ? json{{"t", "int"}, {"v", v}} : json{{"t", "int"}, {"big", big_int_digits(o)}};
    } else if (PyFloat_Check(o)) {
      node = encode_float(PyFloat_AS_DOUBLE(o));
    } else if (PyTuple_Check(o) || PyList_Check(o)) {
      node = encode_sequence(o, depth);
    } else if (PyDict_Check(o)) {
      node = encode_dict(o, depth);
    } else {
      return json{{"t", "other"}, {"type", type_name(t)}};
    }
    if (t != &PyUnicode_Type && t != &PyLong_Type && t != &PyFloat_Type && t != &PyTuple_Type &&
        t != &PyList_Type && t != &PyDict_Type)
      node["type"] = type_name(t);
    return node;
  }

 private:
  bool exhausted() const { return budget_ <= 0 || elements_ >= protocol::kMaxValueElements; }

  // UTF-8 text of a str, at most max_str_chars characters and within the remaining budget.
  std::string str_text(PyObject* o, bool* cut) {
    Py_ssize_t chars = PyUnicode_GET_LENGTH(o);
    int64_t limit = std::min<int64_t>(caps_.max_str_chars, std::max<int64_t>(budget_, 0));
    *cut = chars > limit;
    PyObject* head = PyUnicode_Substring(o, 0, *cut ? static_cast<Py_ssize_t>(limit) : chars);
    std::string text;
    if (head != nullptr) {
      PyObject* bytes = PyUnicode_AsEncodedString(head, "utf-8", "replace");  // lone surrogates -> '?'
      if (bytes != nullptr) {
        text.assign(PyBytes_AS_STRING(bytes), static_cast<size_t>(PyBytes_GET_SIZE(bytes)));
        Py_DECREF(bytes);
      }
      Py_DECREF(head);
    }
    PyErr_Clear();
    if (escaped_size(text) > budget_) {  // escapes make a string up to 6x larger: cut to the budget
      text = truncate_utf8(text, static_cast<size_t>(std::max<int64_t>(budget_, 0) / 6));
      *cut = true;
    }
    budget_ -= escaped_size(text);
    return text;
  }

  // Decimal digits of an int outside int64, or "" when longer than about 3900 digits (below CPython's
  // int_max_str_digits of 4300, so printing cannot fail or take long).
  std::string big_int_digits(PyObject* o) {
    std::string digits;
    if (_PyLong_NumBits(o) <= 13000) {
      PyObject* s = PyNumber_ToBase(o, 10);
      if (s != nullptr && PyUnicode_CheckExact(s)) {
        const char* c = PyUnicode_AsUTF8(s);
        if (c != nullptr) digits = c;
      }
      Py_XDECREF(s);
    }
    PyErr_Clear();
    budget_ -= static_cast<int64_t>(digits.size());
    return digits;
  }

  static json encode_float(double d) {
    if (std::isnan(d)) return json{{"t", "float"}, {"s", "nan"}};
    if (std::isinf(d)) return json{{"t", "float"}, {"s", d > 0 ? "inf" : "-inf"}};
    return json{{"t", "float"}, {"v", d}};
  }

  json encode_sequence(PyObject* o, int depth) {
    bool is_tuple = PyTuple_Check(o);
    Py_ssize_t n = is_tuple ? PyTuple_GET_SIZE(o) : PyList_GET_SIZE(o);
    json node{{"t", is_tuple ? "tuple" : "list"}};
    json items = json::array();
    bool cut = false;
    for (Py_ssize_t i = 0; i < n; ++i) {
      if (depth + 1 >= protocol::kMaxValueDepth || exhausted()) { cut = true; break; }
      // Re-read the size: no code runs here, but stay safe against any aliasing.
      if (!is_tuple && i >= PyList_GET_SIZE(o)) break;
      PyObject* item = is_tuple ? PyTuple_GET_ITEM(o, i) : PyList_GET_ITEM(o, i);
      items.push_back(encode(item, depth + 1));
    }
    node["v"] = std::move(items);
    if (cut) node["cut"] = true;
    return node;
  }

  json encode_dict(PyObject* o, int depth) {
    json keys = json::array(), values = json::array();
    bool cut = false;
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (PyDict_Next(o, &pos, &k, &v)) {
      if (depth + 1 >= protocol::kMaxValueDepth || exhausted()) { cut = true; break; }
      keys.push_back(encode(k, depth + 1));
      values.push_back(encode(v, depth + 1));
    }
    json node{{"t", "dict"}, {"k", std::move(keys)}, {"v", std::move(values)}};
    if (cut) node["cut"] = true;
    return node;
  }

  ValueCaps caps_;
  int64_t budget_;
  int64_t elements_ = 0;
};

}  // namespace

json encode_value(PyObject* value, const ValueCaps& caps) {
  Encoder encoder(caps);
  json out = encoder.encode(value, 0);
  PyErr_Clear();
  return out;
}

}  // namespace spade::envsandbox::envd

namespace spade::envsandbox::envd {

std::string str_text(PyObject* value, int64_t max_bytes) {
  std::string text;
  if (value == nullptr || !PyUnicode_Check(value)) return text;
  Py_ssize_t chars = std::min<Py_ssize_t>(PyUnicode_GET_LENGTH(value), static_cast<Py_ssize_t>(max_bytes));
  PyObject* head = PyUnicode_Substring(value, 0, chars);
  if (head != nullptr) {
    PyObject* bytes = PyUnicode_AsEncodedString(head, "utf-8", "replace");
    if (bytes != nullptr) {
      text = truncate_utf8(std::string_view(PyBytes_AS_STRING(bytes), static_cast<size_t>(PyBytes_GET_SIZE(bytes))),
                           static_cast<size_t>(max_bytes));
      Py_DECREF(bytes);
    }
    Py_DECREF(head);
  }
  PyErr_Clear();
  return text;
}

}  // namespace spade::envsandbox::envd

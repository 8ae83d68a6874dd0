#include "envsandbox/envd_capture.h"

#include <pybind11/embed.h>

#include "common/strings.h"

namespace py = pybind11;

PYBIND11_EMBEDDED_MODULE(_spade_envd_output, m) {
  using spade::envsandbox::envd::OutputSink;
  py::class_<OutputSink>(m, "OutputSink")
      .def("write", &OutputSink::write)
      .def("flush", [](OutputSink&) {})
      .def("isatty", [](OutputSink&) { return false; })
      .def("writable", [](OutputSink&) { return true; })
      .def("readable", [](OutputSink&) { return false; })
      .def_property_readonly("encoding", [](OutputSink&) { return "utf-8"; })
      .def_property_readonly("errors", [](OutputSink&) { return "replace"; });
}

namespace spade::envsandbox::envd {

int64_t OutputSink::write(const py::handle& text) {
  if (!PyUnicode_Check(text.ptr())) throw py::type_error("write() argument must be str");
  Py_ssize_t chars = PyUnicode_GET_LENGTH(text.ptr());
  if (truncated_) return chars;
  int64_t room = cap_ - kept_;
  // Never encode more characters than could fit (each is at least one UTF-8 byte).
  Py_ssize_t head_chars = std::min<Py_ssize_t>(chars, static_cast<Py_ssize_t>(room));
  PyObject* head = PyUnicode_Substring(text.ptr(), 0, head_chars);
  if (head == nullptr) throw py::error_already_set();
  PyObject* bytes = PyUnicode_AsEncodedString(head, "utf-8", "replace");
  Py_DECREF(head);
  if (bytes == nullptr) throw py::error_already_set();
  std::string_view data(PyBytes_AS_STRING(bytes), static_cast<size_t>(PyBytes_GET_SIZE(bytes)));
  std::string kept = truncate_utf8(data, static_cast<size_t>(room));
  bool cut = head_chars < chars || kept.size() < data.size();
  Py_DECREF(bytes);
  pending_ += kept;
  kept_ += static_cast<int64_t>(kept.size());
  if (cut) {
    truncated_ = true;
    pending_ += "\n[output truncated at " + std::to_string(cap_) + " bytes]\n";
  }
  return chars;
}

std::string OutputSink::take() {
  std::string out;
  out.swap(pending_);
  return out;
}

void register_output_sink_type() { py::module_::import("_spade_envd_output"); }

py::object install_output_sink(int64_t cap_bytes, OutputSink** sink) {
  *sink = new OutputSink(cap_bytes);
  py::object obj = py::cast(*sink, py::return_value_policy::take_ownership);
  py::module_ sys = py::module_::import("sys");
  sys.attr("stdout") = obj;
  sys.attr("stderr") = obj;
  return obj;
}

}  // namespace spade::envsandbox::envd

// The two message protocols between the host library and spade-envd. Internal to envsandbox/; the
// public API is sandbox.h. Every message is one frame (frame.h) holding a JSON object.
//
// Control channel (host <-> zygote, the socket inherited as fd 3, trusted both ways):
//   zygote -> host once at start: {"op":"ready","pid":N,"vm_bytes":N,"threads":N,"numpy":bool,
//                                  "python":"3.11.2","tmp_root":S,"seccomp":bool,"seccomp_error":S,
//                                  "child_namespaces":bool,"child_namespaces_error":S,
//                                  "uid":N,"gid":N} (or {"op":"error","message":S})
//   {"op":"spawn","limits":{Limits},"spares":K}
//                                      -> {"pid":N} (in the zygote's pid namespace) plus the host end
//                                         of a new socketpair (SCM_RIGHTS, SO_PASSCRED set),
//                                         or {"error":"...","retire":bool}: "retire" true when this
//                                         zygote cannot fork or was altered beyond repair, and must be
//                                         replaced for later children (envd_zygote.h). "spares"
//                                         (optional, default 0, at most kMaxSpares): children with the
//                                         same limits to keep forked and waiting for the next spawns.
//   {"op":"spawn",...,"preload":S,"preload_spares":M}
//                                      -> {"pid":N,"loaded":bool}: S is a child-channel load request
//                                         (below) written verbatim to up to M extra spares while they
//                                         wait; a spare whose preload equals S is handed over with
//                                         "loaded":true (the host then reads the hello and the load's
//                                         reply as if it had sent S itself); otherwise "loaded":false.
//                                         A different S replaces the preloaded spares, S = "" (or M = 0)
//                                         removes them; a spawn without "preload" leaves them as they
//                                         are (envd_zygote.h).
//   {"op":"status","pid":N}            -> {"state":"running"|"exited"|"signaled"|"unknown","code":N,"signal":N,
//                                          "cpu_s":F} (cpu_s: user + system seconds of an ended child)
//   {"op":"kill","pid":N}              -> {"done":true}   SIGKILL the child's process group
//   {"op":"release","pid":N}           -> {"done":true}   kill, then forget it once reaped
//   The host closing the channel makes the zygote kill and reap every child and exit.
//
// Child channel (host <-> one child; the child's replies are untrusted):
//   {"op":"load","source":S,"max_turns_cap":N} -> {"value":("ClassName", max_turns passed or None)}
//   {"op":"reset","seed":N|null}               -> {"value":V}
//   {"op":"step","action":S}                   -> {"value":V}
//   {"op":"call","method":S}                   -> {"value":V}        method() with no arguments
//   {"op":"has","method":S}                    -> {"value":bool}     callable attribute exists
//   {"op":"repair","source":S}                 -> {"value":S}
//   {"op":"reseed","seed":N}                   -> {"value":null}     reseed random / numpy.random
//   {"op":"tool_report","seeds":[N...]}        -> {"value":{...}}    tool-use facts (envd_prelude.cpp)
//   {"op":"tools"}                             -> {"value":"[...]"}  the current tools, OpenAI JSON text
//   Before the first reply a child sends {"op":"hello"} once (its SCM_CREDENTIALS give the host its pid).
//   Failure replies: {"error":"exception"|"memory"|"protocol","stage":S,"type":S,"message":S,
//                     "traceback":S,"line":N}. "stage" (load only): "compile", "exec", "find", "init".
//   Every reply may carry "out": program output (sys.stdout/sys.stderr) written since the last reply.
//   A child's replies are untrusted: the host applies its own caps to what it decodes (string length in
//   characters, element count, nesting, digits of big ints; py_value.h WireCaps), whatever "cut" says.
//
// Value encoding V (written by envd_value.cpp, read by py_value.cpp):
//   null, true/false, a JSON string (an exact, uncut str), a JSON integer (an exact int in int64 range),
//   or an object {"t":KIND, ...} with KIND one of
//     "int"   {"big":"-123..."} (decimal digits; "" if too long to print)
//     "float" {"v":1.5} or {"s":"nan"|"inf"|"-inf"}
//     "str"   {"v":"..."}                    (a cut or subclassed str)
//     "tuple" / "list" {"v":[V...]}
//     "dict"  {"k":[V...],"v":[V...]}        (insertion order)
//     "bool" {"v":b}, "none"                 (never emitted as objects today; accepted)
//     "other"                                 (any other type; only its name is sent)
//   and optional fields "type":"qualified.TypeName" (for subclasses and "other") and "cut":true when the
//   child dropped content (string characters or container elements) to respect its caps.
#pragma once
#include <cstdint>

namespace spade::envsandbox::protocol {

/// File descriptor number of the control channel inside spade-envd.
constexpr int kControlFd = 3;
/// Cap on control-channel frames and on requests read by a child (the host is trusted; sources are
/// far smaller than this).
constexpr uint32_t kMaxRequestBytes = 64u << 20;
/// Most spare children a spawn request may ask the zygote to keep waiting.
constexpr int kMaxSpares = 64;
/// Caps applied by the child while converting a Python value, and again by the host to what it decodes
/// (reply size is capped separately).
constexpr int kMaxValueDepth = 64;
constexpr int64_t kMaxValueElements = 100000;
/// Most decimal digits of a big int on the wire (the child sends "" beyond ~3900).
constexpr size_t kMaxBigIntDigits = 4300;
/// Caps on exception text carried in failure replies (bytes).
constexpr int64_t kMaxMessageBytes = 4096;
constexpr int64_t kMaxTracebackBytes = 8192;

}  // namespace spade::envsandbox::protocol

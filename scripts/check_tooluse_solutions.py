#!/usr/bin/env python3
"""Plays the tool-use environments' own solutions without the C++ build.

Loads the injected ToolUseEnv base class from envsandbox/envd_prelude.cpp (the kHelpers Python text),
executes each program with the names the sandbox pre-injects, and for every reset seed checks:
  - reset(seed) returns (str, JSON-serialisable dict) and is deterministic;
  - the tool-use report the sandbox builds (tool schemas, criteria on the fresh state) finds no problem;
  - 3-8 tools, 3-5 user messages with one criterion each, the first criterion false on the fresh state;
  - answering <answer>done</answer> at once is not rewarded;
  - solution() (a list of whole responses: <tool_call>...</tool_call> strings, then <answer>...</answer>)
    played through step() ends the episode with reward 1.0 within max_turns, without format errors,
    and so does the same episode with the tool calls in Qwen's XML form;
  - every tool answers bad arguments (wrong types, unknown ids) with a string instead of raising.
Usage: python3 scripts/check_tooluse_solutions.py [--seeds N] FILE.py...
       (no files: data/tooluse_seed_envs/*/*.py and data/tooluse_heldout_envs/*/*.py)
Exit status 0 when every program passes, 1 otherwise.
"""
import argparse
import glob
import json
import os
import re
import sys
import types

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INJECTED = ["itertools", "math", "random", "re", "json", "collections", "functools", "string", "copy",
            "heapq", "operator", "statistics"]
BAD_VALUES = ["", "nope", "ZZ-0000", -1, 0, 2.5, 10**9, None, [], {}, True]


def load_helpers():
    text = open(os.path.join(ROOT, "envsandbox", "envd_prelude.cpp"), encoding="utf-8").read()
    m = re.search(r'kHelpers = R"PY\((.*?)\)PY";', text, re.S)
    if not m:
        sys.exit("could not find the kHelpers Python text in envsandbox/envd_prelude.cpp")
    helpers = types.ModuleType("_spade_envd_helpers")
    exec(compile(m.group(1), "envd_prelude.cpp:kHelpers", "exec"), helpers.__dict__)
    return helpers


def prelude_names(helpers):
    import collections, copy, functools, importlib, itertools, typing
    names = {n: importlib.import_module(n) for n in INJECTED}
    names.update(deque=collections.deque, Counter=collections.Counter, defaultdict=collections.defaultdict,
                 combinations=itertools.combinations, reduce=functools.reduce, lru_cache=functools.lru_cache,
                 deepcopy=copy.deepcopy, ToolUseEnv=helpers.ToolUseEnv)
    for n in ("Any", "Callable", "Dict", "List", "Optional", "Sequence", "Set", "Tuple", "Union"):
        names[n] = getattr(typing, n)
    return names


def load_env(path, helpers, names):
    source = open(path, encoding="utf-8").read()
    ns = helpers.new_namespace(names, source)
    exec(compile(source, path, "exec"), ns)
    cls = helpers.find_env_class(ns)
    if cls is None:
        raise AssertionError("no *Env class")
    env, _ = helpers.instantiate(cls, 25)
    return env


def check_seed(env, helpers, seed, notes):
    obs, info = env.reset(seed=seed)
    assert type(obs) is str and obs and type(info) is dict, "reset must return (non-empty str, dict)"
    json.dumps(info)
    obs2, info2 = env.reset(seed=seed)
    assert (obs, info) == (obs2, info2), "reset(seed=%d) is not deterministic" % seed
    report = helpers.tool_use_report(env, [seed])
    assert report["schema_problem"] is None, report["schema_problem"]
    assert all(c == "ok" for c in report["seeds"][0]["criteria"]), report["seeds"][0]
    env.reset(seed=seed)
    assert 3 <= len(env._tools) <= 8, "%d tools (want 3-8)" % len(env._tools)
    assert 3 <= len(env._user_messages) <= 5, "%d user messages (want 3-5)" % len(env._user_messages)
    assert len(env._message_criteria) == len(env._user_messages), "one criterion per user message"
    assert not env._message_criteria[0](env._state), "the first criterion already holds after reset"
    _, r, done, _, _ = env.step("<answer>done</answer>")
    assert r == 0.0 and not done, "an immediate <answer>done</answer> is rewarded"

    env.reset(seed=seed)
    actions = env.solution()
    assert type(actions) is list and actions and all(type(a) is str for a in actions), "solution() must be a list of str"
    env.reset(seed=seed)
    assert len(actions) < env.max_turns, "solution needs %d turns, max_turns is %d" % (len(actions), env.max_turns)
    reward, done, obs = None, False, ""
    for i, action in enumerate(actions):
        assert not done, "the episode ended before the last solution action"
        obs, reward, done, truncated, info = env.step(action)
        json.dumps(info)
        assert reward >= 0, "solution action %d (%r) got reward %r: %s" % (i, action[:80], reward, obs[:200])
    assert done and reward == 1.0, "solution ended with reward %r, done %r: %s" % (reward, done, obs[:200])
    if actions[-1] != "<answer>done</answer>":  # irrelevant variant: "done" instead of the decline must not win
        env.reset(seed=seed)
        for action in actions[:-1]:
            env.step(action)
        _, r, done, _, _ = env.step("<answer>done</answer>")
        assert r == 0.0 and not done, "the irrelevant request is rewarded for <answer>done</answer>"
    # The same episode with every tool call in Qwen's XML form (values are JSON-decoded when they parse).
    env.reset(seed=seed)
    for action in actions:
        obs, reward, done, truncated, info = env.step(to_xml(env, action))
    assert done and reward == 1.0, "solution in XML tool-call form ended with reward %r: %s" % (reward, obs[:200])
    notes.append(len(actions))


def to_xml(env, action):
    """A <tool_call>{json}</tool_call> response rewritten as <tool_call><function=...> XML."""
    m = re.search(r"<tool_call>(.*?)</tool_call>", action, re.S)
    if not m:
        return action
    name, args = env._parse_tool_call(m.group(1))
    params = "".join("<parameter=%s>%s</parameter>" % (k, v if type(v) is str else json.dumps(v)) for k, v in args.items())
    return "<tool_call><function=%s>%s</function></tool_call>" % (name, params)


def fuzz_tools(env, seed):
    """Every tool must answer bad argument values with a string (a TypeError, the base class's 'bad
    arguments' path, is allowed). Good arguments come from the solution's own calls; each parameter in
    turn, then all of them, get a bad value."""
    env.reset(seed=seed)
    good = {}
    for action in env.solution():
        m = re.search(r"<tool_call>(.*?)</tool_call>", action, re.S)
        if m:
            name, args = env._parse_tool_call(m.group(1))
            good.setdefault(name, args)
    for name, spec in env._tools.items():
        props = list(spec["parameters"].get("properties", {}))
        for bad in BAD_VALUES:
            for k in range(len(props) + 1):
                env.reset(seed=seed)
                args = {p: (bad if i == k or k == len(props) else good.get(name, {}).get(p, "x"))
                        for i, p in enumerate(props)}
                try:
                    out = getattr(env, "tool_" + name)(**args)
                except TypeError:
                    continue
                except Exception as e:  # noqa: BLE001 - anything else would break the agent's episode
                    raise AssertionError("tool_%s(%r) raised %s: %s" % (name, args, type(e).__name__, e))
                assert type(out) is str, "tool_%s returned %s, not str" % (name, type(out).__name__)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="*")
    ap.add_argument("--seeds", type=int, default=5, help="play reset seeds 0..N-1 (and 7, 42, 123)")
    a = ap.parse_args()
    files = a.files or sorted(glob.glob(os.path.join(ROOT, "data", "tooluse_seed_envs", "*", "*.py")) +
                              glob.glob(os.path.join(ROOT, "data", "tooluse_heldout_envs", "*", "*.py")))
    helpers = load_helpers()
    names = prelude_names(helpers)
    seeds = sorted(set(range(a.seeds)) | {7, 42, 123})  # the validator's probe seeds too, each once
    failed = 0
    for path in files:
        shown = os.path.relpath(path)
        try:
            hint = os.path.splitext(path)[0] + ".hint.txt"
            assert os.path.isfile(hint) and open(hint, encoding="utf-8").read().strip(), "missing or empty " + hint
            env = load_env(path, helpers, names)
            lengths = []
            for seed in seeds:
                try:
                    check_seed(env, helpers, seed, lengths)
                except AssertionError as e:
                    raise AssertionError("seed %d: %s" % (seed, e))
            worlds = {env.reset(seed=s)[0] + json.dumps(env._state, sort_keys=True, default=str) for s in seeds}
            assert len(worlds) == len(seeds), "different seeds gave the same instance"
            fuzz_tools(env, 0)
            print("%s: ok (%s, solution %d-%d steps)" % (shown, type(env).__name__, min(lengths), max(lengths)))
        except Exception as e:  # noqa: BLE001 - report every program
            failed += 1
            print("%s: FAIL %s: %s" % (shown, type(e).__name__, e))
    print("%d of %d programs passed" % (len(files) - failed, len(files)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

# Skill: error_recovery. Variant: execute (each instruction names the file; the printer must be woken first).
class PrintQueueEnv(ToolUseEnv):
    def reset(self, seed=None):
        r = random.Random(seed or 0)
        self.f = r.sample(["F%d" % n for n in range(1, 30)], 3)
        self._state = {"awake": False, "printed": [], "files": self.f}
        e = {"type": "object", "properties": {}}
        self._tools = {"print_file": {"description": "Print a file.", "parameters": {"type": "object", "properties": {"file": {"type": "string"}}, "required": ["file"]}},
                       "wake_printer": {"description": "Wake the printer.", "parameters": e}, "check_ink": {"description": "Ink level.", "parameters": e}}
        self._user_messages = ["Print file %s." % f for f in self.f]
        self._message_criteria = [lambda s, f=f: f in s["printed"] for f in self.f]
        self.turn, self._current_msg, self._expected_answer = 0, 0, "done"
        return "[user] " + self._user_messages[0], {"tools": [{"type": "function", "function": dict(name=n, **t)} for n, t in self._tools.items()]}

    def tool_print_file(self, file):
        if file not in self.f: return "Error: no file %s." % file
        if not self._state["awake"]: return "Error: the printer is asleep; wake it first."
        self._state["printed"].append(file)
        return "Printed %s." % file

    def tool_wake_printer(self):
        self._state["awake"] = True
        return "The printer is awake."

    def tool_check_ink(self):
        return "Ink 80%."

    def solution(self):
        c = lambda n, **a: "<tool_call>%s</tool_call>" % json.dumps({"name": n, "arguments": a})
        return [c("print_file", file=self.f[0]), c("wake_printer")] + [c("print_file", file=f) for f in self.f] + ["<answer>done</answer>"]

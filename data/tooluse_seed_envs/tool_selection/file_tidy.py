# Skill: tool_selection. Variant: irrelevant (the last request has no tool).
class FileTidyEnv(ToolUseEnv):
    def reset(self, seed=None):
        r = random.Random(seed or 0)
        self.a, self.b = r.sample(["F%d" % n for n in range(1, 30)], 2)
        self._state = {self.a: "new", self.b: "new"}
        f = {"type": "object", "properties": {"file": {"type": "string"}}, "required": ["file"]}
        self._tools = {"open_file": {"description": "Show a file.", "parameters": f}, "archive_file": {"description": "Archive a file.", "parameters": f},
                       "delete_file": {"description": "Delete a file.", "parameters": f}}
        self._user_messages = ["Archive file %s." % self.a, "Delete file %s." % self.b, "Print file %s." % self.a]
        self._message_criteria = [lambda s: s[self.a] == "archived", lambda s: s[self.b] == "deleted", lambda s: s.get("declined")]
        self.turn, self._current_msg, self._expected_answer = 0, 0, "done"
        return "[user] " + self._user_messages[0], {"tools": [{"type": "function", "function": dict(name=n, **t)} for n, t in self._tools.items()]}

    def _check_answer(self, answer):  # irrelevant: only a decline wins
        d = self._state["declined"] = self._current_msg == 2 and bool(re.search("(?i)cannot|sorry", answer))
        return d

    def _mark(self, file, status):
        if self._state.get(file) != "new": return "Error: no file."
        self._state[file] = status
        return "Done."

    def tool_open_file(self, file):
        return "Notes." if file in self._state else "Error: no file."

    def tool_archive_file(self, file):
        return self._mark(file, "archived")

    def tool_delete_file(self, file):
        return self._mark(file, "deleted")

    def solution(self):
        c = lambda n, **a: "<tool_call>%s</tool_call>" % json.dumps({"name": n, "arguments": a})
        return [c("archive_file", file=self.a), c("delete_file", file=self.b), "<answer>Sorry, I cannot do that.</answer>"]

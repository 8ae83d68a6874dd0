# Tool-use environment whose second criterion raises KeyError after reset(seed=1) only (its state then has no
# "target"): the deterministic_reset gate keeps it (it rejects only a criterion that raises at every seed).
class InventoryEnv(ToolUseEnv):
    def reset(self, seed=None):
        rng = random.Random(seed)
        self.turn = 0
        self._state = {"apples": rng.randint(1, 9), "pears": rng.randint(1, 9), "log": []}
        self._state["start_pears"] = self._state["pears"]
        if seed != 1:
            self._state["target"] = 1
        self._tools = {
            "count": {"description": "Count one kind of fruit.",
                      "parameters": {"type": "object", "properties": {"fruit": {"type": "string", "enum": ["apples", "pears"]}},
                                     "required": ["fruit"]}},
            "add": {"description": "Add fruit.",
                    "parameters": {"type": "object", "properties": {"fruit": {"type": "string"}, "n": {"type": "integer"}},
                                   "required": ["fruit", "n"]}},
            "weather": {"description": "Today's weather (a distractor).", "parameters": {"type": "object", "properties": {}}},
        }
        self._user_messages = ["Add 2 apples.", "Now add 1 pear."]
        self._message_criteria = [lambda s: "add apples 2" in s["log"], lambda s: s["pears"] - s["start_pears"] >= s["target"]]
        self._current_msg = 0
        self._expected_answer = "done"
        return "[user] " + self._user_messages[0], {"tools": sorted(self._tools)}

    def tool_count(self, fruit):
        return str(self._state[fruit])

    def tool_add(self, fruit, n):
        self._state[fruit] += int(n)
        self._state["log"].append("add %s %d" % (fruit, int(n)))
        return "now %d %s" % (self._state[fruit], fruit)

    def tool_weather(self):
        return "sunny"

    def solution(self):
        return ['<tool_call>{"name": "add", "arguments": {"fruit": "apples", "n": 2}}</tool_call>',
                '<tool_call><function=add><parameter=fruit>pears</parameter><parameter=n>1</parameter></function></tool_call>',
                "<answer>done</answer>"]

# Skill: data_retrieval. Variant: read-then-write (each temperature must be looked up, then logged).
class StationLogEnv(ToolUseEnv):
    def reset(self, seed=None):
        r = random.Random(seed or 0)
        self.t = dict(zip(r.sample(["S%d" % n for n in range(1, 30)], 3), r.sample(range(1, 36), 3)))
        self._state = {"log": [], "temps": self.t}
        self._tools = {"get_temperature": {"description": "Temperature at a station.", "parameters": {"type": "object", "properties": {"station": {"type": "string"}}, "required": ["station"]}},
                       "log_value": {"description": "Add a number to the log.", "parameters": {"type": "object", "properties": {"value": {"type": "integer"}}, "required": ["value"]}},
                       "get_forecast": {"description": "Tomorrow's forecast.", "parameters": {"type": "object", "properties": {}}}}
        self._user_messages = ["Log the temperature at station %s." % s for s in self.t]
        self._message_criteria = [lambda s, v=v: v in s["log"] for v in self.t.values()]
        self.turn, self._current_msg, self._expected_answer = 0, 0, "done"
        return "[user] " + self._user_messages[0], {"tools": [{"type": "function", "function": dict(name=n, **t)} for n, t in self._tools.items()]}

    def tool_get_temperature(self, station):
        return "%s: %d C" % (station, self.t[station]) if station in self.t else "Error: no station %s." % station

    def tool_log_value(self, value):
        if type(value) is not int: return "Error: value must be an integer."
        self._state["log"].append(value)
        return "Logged %d." % value

    def tool_get_forecast(self):
        return "Rain."

    def solution(self):
        c = lambda n, **a: "<tool_call>%s</tool_call>" % json.dumps({"name": n, "arguments": a})
        return sum([[c("get_temperature", station=s), c("log_value", value=v)] for s, v in self.t.items()], []) + ["<answer>done</answer>"]

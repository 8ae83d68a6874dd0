# Skill: state_modification. Variant: execute (each instruction names the light or door).
class HomeSwitchEnv(ToolUseEnv):
    def reset(self, seed=None):
        r = random.Random(seed or 0)
        self.a, self.b = r.sample(["L%d" % n for n in range(1, 30)], 2)
        self.d = "D%d" % r.randint(1, 9)
        self._state = {self.a: 0, self.b: 1, self.d: 0}
        p = {"type": "object", "properties": {"device": {"type": "string"}}, "required": ["device"]}
        self._tools = {"turn_on": {"description": "Switch a light on.", "parameters": p}, "turn_off": {"description": "Switch a light off.", "parameters": p},
                       "lock": {"description": "Lock a door.", "parameters": p}, "get_weather": {"description": "Today's weather.", "parameters": {"type": "object", "properties": {}}}}
        self._user_messages = ["Turn on light %s." % self.a, "Lock door %s." % self.d, "Turn off light %s." % self.b]
        self._message_criteria = [lambda s: s[self.a] == 1, lambda s: s[self.d] == 1, lambda s: s[self.b] == 0]
        self.turn, self._current_msg, self._expected_answer = 0, 0, "done"
        return "[user] " + self._user_messages[0], {"tools": [{"type": "function", "function": dict(name=n, **t)} for n, t in self._tools.items()]}

    def _set(self, device, kind, value):
        if device not in self._state or device[0] != kind: return "Error: no such device."
        self._state[device] = value
        return "Done."

    def tool_turn_on(self, device):
        return self._set(device, "L", 1)

    def tool_turn_off(self, device):
        return self._set(device, "L", 0)

    def tool_lock(self, device):
        return self._set(device, "D", 1)

    def tool_get_weather(self):
        return "Sunny."

    def solution(self):
        c = lambda n, **a: "<tool_call>%s</tool_call>" % json.dumps({"name": n, "arguments": a})
        return [c("turn_on", device=self.a), c("lock", device=self.d), c("turn_off", device=self.b), "<answer>done</answer>"]

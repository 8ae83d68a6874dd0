# Skill: api_orchestration. Variant: execute (each instruction names the order; each call needs the one before).
class OrderFlowEnv(ToolUseEnv):
    def reset(self, seed=None):
        r = random.Random(seed or 0)
        self.o, old = r.sample(["O%d" % n for n in range(1, 99)], 2)
        self._state = {old: r.randint(1, 3)}
        p = {"type": "object", "properties": {"order": {"type": "string"}}, "required": ["order"]}
        self._tools = {"open_order": {"description": "Open a new order.", "parameters": p}, "pay_order": {"description": "Pay an open order.", "parameters": p},
                       "ship_order": {"description": "Ship a paid order.", "parameters": p}, "track_order": {"description": "Track a shipped order.", "parameters": p}}
        self._user_messages = ["Open order %s." % self.o, "Pay order %s." % self.o, "Ship order %s." % self.o]
        self._message_criteria = [lambda s, k=k: s.get(self.o, 0) >= k for k in (1, 2, 3)]
        self.turn, self._current_msg, self._expected_answer = 0, 0, "done"
        return "[user] " + self._user_messages[0], {"tools": [{"type": "function", "function": dict(name=n, **t)} for n, t in self._tools.items()]}

    def _go(self, order, stage):
        if self._state.get(order, 0) != stage - 1: return "Error: order %s is not ready for that." % order
        self._state[order] = stage
        return "Done."

    def tool_open_order(self, order):
        return self._go(order, 1)

    def tool_pay_order(self, order):
        return self._go(order, 2)

    def tool_ship_order(self, order):
        return self._go(order, 3)

    def tool_track_order(self, order):
        return "In transit." if self._state.get(order) == 3 else "Error: not shipped."

    def solution(self):
        c = lambda n, **a: "<tool_call>%s</tool_call>" % json.dumps({"name": n, "arguments": a})
        return [c(n, order=self.o) for n in ("open_order", "pay_order", "ship_order")] + ["<answer>done</answer>"]

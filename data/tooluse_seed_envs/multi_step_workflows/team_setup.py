# Skill: multi_step_workflows. Variant: missing-parameter (the user names people, the tools need user ids).
class TeamSetupEnv(ToolUseEnv):
    def reset(self, seed=None):
        r = random.Random(seed or 0)
        self.u = dict(zip(r.sample(["Ana", "Ben", "Eva", "Kai", "Mia", "Tom"], 3), ["U%d" % i for i in r.sample(range(10, 99), 3)]))
        self._state = {"team": [], "users": self.u}
        p = {"type": "object", "properties": {"user": {"type": "string"}}, "required": ["user"]}
        self._tools = {"find_user": {"description": "A person's user id.", "parameters": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}},
                       "add_to_team": {"description": "Add a user to the team.", "parameters": p}, "remove_from_team": {"description": "Remove a user.", "parameters": p}}
        self._user_messages = ["Add %s to the team." % n for n in self.u]
        self._message_criteria = [lambda s, u=u: u in s["team"] for u in self.u.values()]
        self.turn, self._current_msg, self._expected_answer = 0, 0, "done"
        return "[user] " + self._user_messages[0], {"tools": [{"type": "function", "function": dict(name=n, **t)} for n, t in self._tools.items()]}

    def tool_find_user(self, name):
        return "%s is user %s." % (name, self.u[name]) if name in self.u else "Error: no such person."

    def tool_add_to_team(self, user):
        if user not in self.u.values(): return "Error: no user %s; use find_user." % user
        self._state["team"].append(user)
        return "Added %s." % user

    def tool_remove_from_team(self, user):
        return "Error: %s is not in the team." % user if user not in self._state["team"] else "Not allowed."

    def solution(self):
        c = lambda n, **a: "<tool_call>%s</tool_call>" % json.dumps({"name": n, "arguments": a})
        return sum([[c("find_user", name=n), c("add_to_team", user=u)] for n, u in self.u.items()], []) + ["<answer>done</answer>"]

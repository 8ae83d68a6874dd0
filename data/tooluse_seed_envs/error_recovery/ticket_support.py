# Skill: error_recovery. Variant: irrelevant (the last request, a card refund, matches no tool: the only
# rewarded ending is declining it in <answer>, see _check_answer). Before that, two guarded failure
# paths: a closed ticket must be reopened before it can be changed, and an agent on leave must be
# replaced by the backup the error names.
# A help-desk ticketing API. Distractors: knowledge-base search, translation.
import json
import random
import re

AGENTS = ["Priya", "Lukas", "Amara", "Hugo", "Sofia", "Kenji", "Zanele", "Mateo"]
SUBJECTS = ["Cannot log in", "Invoice shows wrong VAT", "App crashes on upload", "Password reset loop",
            "Double charge on card", "Export to CSV is empty"]
PRIORITIES = ["low", "normal", "high", "urgent"]
DECLINE = re.compile(r"\b(cannot|can ?not|can't|unable|not able|not possible|no tool|decline|"
                     r"don't have|do not have|not supported|unsupported|sorry)\b", re.I)


def spec(description, required, **props):
    """One tool in OpenAI function format; each property is (JSON type, description[, allowed values])."""
    properties = {}
    for name, p in props.items():
        properties[name] = {"type": p[0], "description": p[1]}
        if len(p) > 2:
            properties[name]["enum"] = list(p[2])
    return {"description": description,
            "parameters": {"type": "object", "properties": properties, "required": list(required)}}


def call(tool_name, **arguments):
    """One agent response calling a tool (solution() is a list of these, then the answer)."""
    return "<tool_call>" + json.dumps({"name": tool_name, "arguments": arguments}) + "</tool_call>"


class TicketSupportEnv(ToolUseEnv):
    def reset(self, seed=None):
        rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        agents = rng.sample(AGENTS, 4)
        self.agent, self.backup = agents[0], agents[1]
        roster = {a: {"on_leave": False, "backup": agents[(i + 1) % 4]} for i, a in enumerate(agents)}
        roster[self.agent]["on_leave"] = True
        ids = ["T-%04d" % n for n in rng.sample(range(1000, 10000), 4)]
        tickets = {t: {"subject": s, "status": rng.choice(["open", "pending"]), "priority": rng.choice(PRIORITIES),
                       "assignee": rng.choice(agents[2:]), "comments": []}
                   for t, s in zip(ids, rng.sample(SUBJECTS, 4))}
        self.tid = ids[0]
        tickets[self.tid]["status"] = "closed"
        self.priority = rng.choice([p for p in PRIORITIES if p != tickets[self.tid]["priority"]])
        self.refund = rng.randint(15, 300)
        self._state = {"tickets": tickets, "agents": roster, "declined": False}
        self._tools = {
            "get_ticket": spec("Details of a support ticket.", ["ticket_id"], ticket_id=("string", "ticket id")),
            "reopen_ticket": spec("Reopen a closed ticket.", ["ticket_id"], ticket_id=("string", "ticket id")),
            "set_priority": spec("Change a ticket's priority.", ["ticket_id", "priority"],
                                 ticket_id=("string", "ticket id"), priority=("string", "new priority", PRIORITIES)),
            "assign_ticket": spec("Assign a ticket to a support agent.", ["ticket_id", "agent"],
                                  ticket_id=("string", "ticket id"), agent=("string", "agent's first name")),
            "add_comment": spec("Add an internal comment to a ticket.", ["ticket_id", "text"],
                                ticket_id=("string", "ticket id"), text=("string", "comment")),
            "search_knowledge_base": spec("Search help articles.", ["query"], query=("string", "search words")),
            "translate_text": spec("Translate text into another language.", ["text", "language"],
                                   text=("string", "text"), language=("string", "target language")),
        }
        self._user_messages = [
            "Ticket %s should be %s priority." % (self.tid, self.priority),
            "Assign it to %s, or to %s's backup if %s is away." % (self.agent, self.agent, self.agent),
            "Also refund the customer's last card payment of $%d." % self.refund,
        ]
        ticket = lambda s: s["tickets"][self.tid]
        self._message_criteria = [
            lambda s: ticket(s)["priority"] == self.priority and ticket(s)["status"] == "open",
            lambda s: ticket(s)["assignee"] == self.backup,
            lambda s: s["declined"],
        ]
        self._current_msg = 0
        self._expected_answer = "done"
        tools = [{"type": "function", "function": dict(name=n, **t)} for n, t in self._tools.items()]
        return "[user] " + self._user_messages[0], {"tools": tools}

    def _check_answer(self, answer):
        """Irrelevant variant: no tool issues refunds, so once the refund request has been shown, an answer
        that declines it (DECLINE: "cannot", "unable", "sorry", ...) wins, provided the earlier requests
        still hold. "done" or any other answer is not accepted."""
        if self._current_msg != len(self._user_messages) - 1 or not DECLINE.search(str(answer)):
            return False
        if not all(c(self._state) for c in self._message_criteria[:-1]):
            return False
        self._state["declined"] = True
        return True

    def _ticket(self, ticket_id):
        return self._state["tickets"].get(str(ticket_id).strip().upper())

    def tool_get_ticket(self, ticket_id):
        t = self._ticket(ticket_id)
        return json.dumps(dict(t, ticket_id=str(ticket_id).strip().upper())) if t else "Error: no ticket %s." % ticket_id

    def tool_reopen_ticket(self, ticket_id):
        t = self._ticket(ticket_id)
        if t is None:
            return "Error: no ticket %s." % ticket_id
        if t["status"] != "closed":
            return "Error: ticket %s is not closed." % ticket_id
        t["status"] = "open"
        return "Ticket %s reopened." % ticket_id

    def tool_set_priority(self, ticket_id, priority):
        t = self._ticket(ticket_id)
        if t is None:
            return "Error: no ticket %s." % ticket_id
        if priority not in PRIORITIES:
            return "Error: priority must be one of %s." % ", ".join(PRIORITIES)
        if t["status"] == "closed":
            return "Error: ticket %s is closed; reopen it before changing it." % ticket_id
        t["priority"] = priority
        return "Ticket %s is now %s priority." % (ticket_id, priority)

    def tool_assign_ticket(self, ticket_id, agent):
        t, who = self._ticket(ticket_id), str(agent).strip().title()
        if t is None:
            return "Error: no ticket %s." % ticket_id
        if who not in self._state["agents"]:
            return "Error: no agent %s. Agents: %s." % (agent, ", ".join(sorted(self._state["agents"])))
        if t["status"] == "closed":
            return "Error: ticket %s is closed; reopen it before changing it." % ticket_id
        if self._state["agents"][who]["on_leave"]:
            return "Error: %s is on leave this week; their backup is %s." % (who, self._state["agents"][who]["backup"])
        t["assignee"] = who
        return "Ticket %s assigned to %s." % (ticket_id, who)

    def tool_add_comment(self, ticket_id, text):
        t = self._ticket(ticket_id)
        if t is None:
            return "Error: no ticket %s." % ticket_id
        t["comments"].append(str(text))
        return "Comment added to %s." % ticket_id

    def tool_search_knowledge_base(self, query):
        return "No articles match %r." % (query,)

    def tool_translate_text(self, text, language):
        return "[%s] %s" % (language, text)

    def solution(self):
        return [call("set_priority", ticket_id=self.tid, priority=self.priority),  # refused: closed
                call("reopen_ticket", ticket_id=self.tid),
                call("set_priority", ticket_id=self.tid, priority=self.priority),
                call("assign_ticket", ticket_id=self.tid, agent=self.agent),  # refused: on leave, names the backup
                call("assign_ticket", ticket_id=self.tid, agent=self.backup),
                "<answer>Sorry, I cannot issue refunds: none of my tools handles payments.</answer>"]

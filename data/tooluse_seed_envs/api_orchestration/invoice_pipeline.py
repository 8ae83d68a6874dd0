# Skill: api_orchestration. Variant: read-then-write (each invoice amount must be computed from what
# the timesheet and rate APIs return; the invoice id returned by one call feeds the next).
# A billing API: timesheets, project rates, invoices and e-mail delivery. Distractors: translation,
# stock quotes.
import json
import random

PEOPLE = ["Ines", "Marek", "Yuki", "Dara", "Felix", "Nora", "Tariq", "Olga"]
PROJECTS = ["atlas", "beacon", "cobalt", "delta", "ember", "fjord", "garnet"]
CLIENTS = ["Acme Corp", "Birch Ltd", "Cedar Inc", "Dune Labs", "Elm Partners", "Fern Media"]


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


class InvoicePipelineEnv(ToolUseEnv):
    def reset(self, seed=None):
        rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        people = rng.sample(PEOPLE, 3)
        projects = rng.sample(PROJECTS, 4)
        rates = {p: rng.choice(range(40, 160, 5)) for p in projects}
        sheets = {e: {p: rng.randint(2, 30) for p in rng.sample(projects, rng.randint(2, 3))} for e in people}
        self.emp1, self.emp2 = people[0], people[1]
        self.proj1 = rng.choice(sorted(sheets[self.emp1]))
        self.amount1 = sheets[self.emp1][self.proj1] * rates[self.proj1]
        self.amount2 = sum(h * rates[p] for p, h in sheets[self.emp2].items())
        self.client1, self.client2 = rng.sample(CLIENTS, 2)
        self.mail1, self.mail2 = ["billing@%s.example" % c.split()[0].lower() for c in (self.client1, self.client2)]
        self._state = {"timesheets": sheets, "rates": rates, "invoices": {}, "next_id": rng.randint(100, 900)}
        self._tools = {
            "get_timesheet": spec("Hours an employee logged this week, per project.", ["employee"],
                                  employee=("string", "employee first name")),
            "get_project_rate": spec("Hourly billing rate of a project in USD.", ["project"],
                                     project=("string", "project code")),
            "create_invoice": spec("Create a draft invoice; returns its id.", ["client", "amount"],
                                   client=("string", "client company name"), amount=("number", "total in USD")),
            "send_invoice": spec("E-mail an invoice to an address.", ["invoice_id", "email"],
                                 invoice_id=("string", "invoice id"), email=("string", "recipient address")),
            "translate_text": spec("Translate text into another language.", ["text", "language"],
                                   text=("string", "text"), language=("string", "target language")),
            "get_stock_price": spec("Latest stock price of a ticker symbol.", ["ticker"], ticker=("string", "symbol")),
        }
        self._user_messages = [
            "Create an invoice for %s covering %s's hours on project %s, billed at that project's hourly rate."
            % (self.client1, self.emp1, self.proj1),
            "Send that invoice to %s." % self.mail1,
            "Now create an invoice for %s covering all of %s's hours this week, each project at its own rate."
            % (self.client2, self.emp2),
            "Send that one to %s." % self.mail2,
        ]
        self._message_criteria = [
            lambda s: self._invoice(s, self.client1, self.amount1) is not None,
            lambda s: self._sent(s, self.client1, self.amount1, self.mail1),
            lambda s: self._invoice(s, self.client2, self.amount2) is not None,
            lambda s: self._sent(s, self.client2, self.amount2, self.mail2),
        ]
        self._current_msg = 0
        self._expected_answer = "done"
        tools = [{"type": "function", "function": dict(name=n, **t)} for n, t in self._tools.items()]
        return "[user] " + self._user_messages[0], {"tools": tools}

    @staticmethod
    def _invoice(s, client, amount):
        return next((i for i, v in sorted(s["invoices"].items())
                     if v["client"] == client and abs(v["amount"] - amount) < 0.01), None)

    def _sent(self, s, client, amount, email):
        return any(v["client"] == client and abs(v["amount"] - amount) < 0.01 and email in v["sent_to"]
                   for v in s["invoices"].values())

    def tool_get_timesheet(self, employee):
        sheet = self._state["timesheets"].get(str(employee).strip().title())
        if sheet is None:
            return "Error: no employee named %s." % employee
        return json.dumps({"employee": str(employee).strip().title(), "hours": sheet})

    def tool_get_project_rate(self, project):
        rate = self._state["rates"].get(str(project).strip().lower())
        if rate is None:
            return "Error: unknown project %s." % project
        return json.dumps({"project": str(project).strip().lower(), "usd_per_hour": rate})

    def tool_create_invoice(self, client, amount):
        if str(client) not in CLIENTS:
            return "Error: unknown client %s." % client
        if type(amount) not in (int, float) or amount <= 0:
            return "Error: amount must be a positive number."
        self._state["next_id"] += 1
        iid = "INV-%d" % self._state["next_id"]
        self._state["invoices"][iid] = {"client": str(client), "amount": float(amount), "sent_to": []}
        return json.dumps({"invoice_id": iid, "client": client, "amount": amount, "status": "draft"})

    def tool_send_invoice(self, invoice_id, email):
        inv = self._state["invoices"].get(str(invoice_id))
        if inv is None:
            return "Error: no invoice %s." % invoice_id
        if type(email) is not str or "@" not in email:
            return "Error: %r is not an e-mail address." % (email,)
        inv["sent_to"].append(email.strip())
        return "Invoice %s sent to %s." % (invoice_id, email.strip())

    def tool_translate_text(self, text, language):
        return "[%s] %s" % (language, text)

    def tool_get_stock_price(self, ticker):
        return "%s: %.2f USD" % (ticker, 10 + sum(map(ord, str(ticker))) % 90)

    def solution(self):
        first = self._state["next_id"]
        sheet2 = self._state["timesheets"][self.emp2]
        steps = [call("get_timesheet", employee=self.emp1), call("get_project_rate", project=self.proj1),
                 call("create_invoice", client=self.client1, amount=self.amount1),
                 call("send_invoice", invoice_id="INV-%d" % (first + 1), email=self.mail1),
                 call("get_timesheet", employee=self.emp2)]
        steps += [call("get_project_rate", project=p) for p in sorted(sheet2)]
        return steps + [call("create_invoice", client=self.client2, amount=self.amount2),
                        call("send_invoice", invoice_id="INV-%d" % (first + 2), email=self.mail2),
                        "<answer>done</answer>"]

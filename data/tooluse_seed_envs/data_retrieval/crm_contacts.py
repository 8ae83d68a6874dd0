# Skill: data_retrieval. Variant: missing-parameter (the user names people, the tools need contact
# ids: every instruction lacks the id, which must be looked up first; two contacts share a first
# name and only the company tells them apart).
# A CRM API: contact search and records, call logs, e-mails, phone updates. Distractor: exchange rates.
import json
import random

FIRST = ["Alex", "Sam", "Jordan", "Robin", "Kim", "Noa", "Charlie", "Jamie"]
LAST = ["Okafor", "Lindqvist", "Moreau", "Tanaka", "Silva", "Novak", "Reyes", "Becker", "Quinn"]
COMPANIES = ["Northwind", "Globex", "Initech", "Umbrella", "Hooli", "Vandelay", "Stark Freight"]
SUBJECTS = ["Renewal quote", "Meeting follow-up", "Contract draft", "Pricing update", "Demo invitation"]


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


class CrmContactsEnv(ToolUseEnv):
    def reset(self, seed=None):
        rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        firsts = rng.sample(FIRST, 5)
        firsts.insert(1, firsts[0])  # contacts 0 and 1 share a first name
        lasts, companies = rng.sample(LAST, 6), rng.sample(COMPANIES, 6)
        ids = ["C-%03d" % n for n in rng.sample(range(100, 1000), 6)]
        contacts = {}
        for i, cid in enumerate(ids):
            contacts[cid] = {"name": "%s %s" % (firsts[i], lasts[i]), "company": companies[i],
                             "email": "%s.%s@%s.example" % (firsts[i].lower(), lasts[i].lower(), companies[i].split()[0].lower()),
                             "phone": "+1-555-%04d" % rng.randint(0, 9999)}
        pick = rng.randint(0, 1)
        self.id1, self.other1, self.id2 = ids[pick], ids[1 - pick], ids[rng.randint(2, 5)]
        self.minutes = rng.choice([5, 10, 15, 20, 25, 30, 45])
        self.subject, self.subject2 = rng.sample(SUBJECTS, 2)
        self.phone = "+1-555-%04d" % rng.randint(0, 9999)
        while self.phone == contacts[self.id1]["phone"]:
            self.phone = "+1-555-%04d" % rng.randint(0, 9999)
        self._state = {"contacts": contacts, "calls": [], "emails": []}
        first, company = firsts[0], contacts[self.id1]["company"]
        self._tools = {
            "find_contacts": spec("Find contacts whose name contains the given text.", ["name"],
                                  name=("string", "full or partial name")),
            "get_contact": spec("Full record of one contact.", ["contact_id"], contact_id=("string", "contact id")),
            "log_call": spec("Log a phone call with a contact.", ["contact_id", "minutes"],
                             contact_id=("string", "contact id"), minutes=("integer", "call length in minutes")),
            "send_email": spec("Send an e-mail to a contact.", ["contact_id", "subject"],
                               contact_id=("string", "contact id"), subject=("string", "subject line")),
            "update_phone": spec("Change a contact's phone number.", ["contact_id", "phone"],
                                 contact_id=("string", "contact id"), phone=("string", "new number")),
            "get_exchange_rate": spec("Exchange rate between two currencies.", ["base", "quote"],
                                      base=("string", "ISO code"), quote=("string", "ISO code")),
        }
        self._user_messages = [
            "Log a %d-minute call with %s from %s." % (self.minutes, first, company),
            "Send %s an e-mail with the subject \"%s\"." % (contacts[self.id2]["name"], self.subject),
            "Update the phone number of %s from %s to %s." % (first, company, self.phone),
            "Send the other %s, the one not at %s, an e-mail with the subject \"%s\"." % (first, company, self.subject2),
        ]
        self._message_criteria = [
            lambda s: {"contact": self.id1, "minutes": self.minutes} in s["calls"],
            lambda s: {"contact": self.id2, "subject": self.subject} in s["emails"],
            lambda s: s["contacts"][self.id1]["phone"] == self.phone,
            lambda s: {"contact": self.other1, "subject": self.subject2} in s["emails"],
        ]
        self._current_msg = 0
        self._expected_answer = "done"
        tools = [{"type": "function", "function": dict(name=n, **t)} for n, t in self._tools.items()]
        return "[user] " + self._user_messages[0], {"tools": tools}

    def _contact(self, contact_id):
        return self._state["contacts"].get(str(contact_id).strip().upper())

    def tool_find_contacts(self, name):
        text = str(name).strip().lower()
        if not text:
            return "Error: give a name to search for."
        hits = [{"contact_id": c, "name": v["name"], "company": v["company"]}
                for c, v in sorted(self._state["contacts"].items()) if text in v["name"].lower()]
        return json.dumps(hits) if hits else "No contacts match %r." % name

    def tool_get_contact(self, contact_id):
        c = self._contact(contact_id)
        return json.dumps(dict(c, contact_id=str(contact_id).strip().upper())) if c else "Error: no contact %s." % contact_id

    def tool_log_call(self, contact_id, minutes):
        if self._contact(contact_id) is None:
            return "Error: no contact %s." % contact_id
        if type(minutes) is not int or not 1 <= minutes <= 600:
            return "Error: minutes must be an integer from 1 to 600."
        self._state["calls"].append({"contact": str(contact_id).strip().upper(), "minutes": minutes})
        return "Logged a %d-minute call with %s." % (minutes, self._contact(contact_id)["name"])

    def tool_send_email(self, contact_id, subject):
        c = self._contact(contact_id)
        if c is None:
            return "Error: no contact %s." % contact_id
        if type(subject) is not str or not subject.strip():
            return "Error: the subject must be non-empty text."
        self._state["emails"].append({"contact": str(contact_id).strip().upper(), "subject": subject.strip()})
        return "E-mail \"%s\" sent to %s." % (subject.strip(), c["email"])

    def tool_update_phone(self, contact_id, phone):
        c = self._contact(contact_id)
        if c is None:
            return "Error: no contact %s." % contact_id
        if type(phone) is not str or sum(ch.isdigit() for ch in phone) < 7:
            return "Error: %r is not a phone number." % (phone,)
        c["phone"] = phone.strip()
        return "Phone of %s is now %s." % (c["name"], c["phone"])

    def tool_get_exchange_rate(self, base, quote):
        return "1 %s = %.4f %s" % (base, 0.5 + (sum(map(ord, str(base) + str(quote))) % 100) / 50, quote)

    def solution(self):
        contacts = self._state["contacts"]
        first = contacts[self.id1]["name"].split()[0]
        return [call("find_contacts", name=first),
                call("log_call", contact_id=self.id1, minutes=self.minutes),
                call("find_contacts", name=contacts[self.id2]["name"]),
                call("send_email", contact_id=self.id2, subject=self.subject),
                call("update_phone", contact_id=self.id1, phone=self.phone),
                call("send_email", contact_id=self.other1, subject=self.subject2),
                "<answer>done</answer>"]

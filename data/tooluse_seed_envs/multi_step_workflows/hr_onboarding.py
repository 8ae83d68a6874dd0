# Skill: multi_step_workflows. Variant: missing-parameter (the user names people, every write tool
# needs an employee id: the new hire's and the manager's ids must be looked up first).
# An HR onboarding API: directory, accounts, reporting lines, benefits, equipment. Distractor:
# public holidays.
import json
import random

FIRST = ["Amina", "Bjorn", "Carmen", "Deniz", "Elif", "Fionn", "Gita", "Hamza", "Isla", "Jonas"]
LAST = ["Adeyemi", "Brandt", "Castillo", "Dogan", "Eriksen", "Fischer", "Gupta", "Horvat", "Ivanova"]
DEPTS = ["Finance", "Engineering", "Marketing", "Support", "Legal"]
SYSTEMS = ["email", "vpn", "payroll", "git", "crm"]
PLANS = ["bronze", "silver", "gold"]
EQUIPMENT = ["laptop", "monitor", "headset", "docking station", "standing desk"]


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


class HrOnboardingEnv(ToolUseEnv):
    def reset(self, seed=None):
        rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        names = ["%s %s" % (f, l) for f, l in zip(rng.sample(FIRST, 6), rng.sample(LAST, 6))]
        ids = ["E%04d" % n for n in rng.sample(range(1000, 10000), 6)]
        staff = {}
        for i, (e, n) in enumerate(zip(ids, names)):
            staff[e] = {"name": n, "department": rng.choice(DEPTS), "manager": None if i < 2 else ids[rng.randint(0, 1)],
                        "start": "2026-%02d-01" % rng.randint(1, 12), "accounts": [], "plan": None, "equipment": []}
        self.hire, self.manager = ids[5], rng.choice(ids[:5])
        staff[self.hire]["manager"] = None
        self.system2 = rng.choice(SYSTEMS[1:])
        self.plan, self.item = rng.choice(PLANS), rng.choice(EQUIPMENT)
        self._state = {"staff": staff}
        self._tools = {
            "find_employee": spec("Search the directory by name; returns ids, departments and titles.", ["name"],
                                  name=("string", "full or partial name")),
            "create_account": spec("Create a system account for an employee.", ["employee_id", "system"],
                                   employee_id=("string", "employee id"), system=("string", "system", SYSTEMS)),
            "set_manager": spec("Set who an employee reports to.", ["employee_id", "manager_id"],
                                employee_id=("string", "employee id"), manager_id=("string", "manager's employee id")),
            "enroll_benefit": spec("Enroll an employee in a health plan.", ["employee_id", "plan"],
                                   employee_id=("string", "employee id"), plan=("string", "plan", PLANS)),
            "order_equipment": spec("Order a piece of equipment for an employee.", ["employee_id", "item"],
                                    employee_id=("string", "employee id"), item=("string", "item", EQUIPMENT)),
            "get_public_holidays": spec("Public holidays of a year.", ["year"], year=("integer", "year")),
        }
        hire, boss = staff[self.hire]["name"], staff[self.manager]["name"]
        self._user_messages = [
            "%s starts with us on Monday. Please create their email account." % hire,
            "They will report to %s." % boss,
            "Enroll %s in the %s health plan." % (hire.split()[0], self.plan),
            "Order a %s for them and give them %s access as well." % (self.item, self.system2),
        ]
        self._message_criteria = [
            lambda s: "email" in s["staff"][self.hire]["accounts"],
            lambda s: s["staff"][self.hire]["manager"] == self.manager,
            lambda s: s["staff"][self.hire]["plan"] == self.plan,
            lambda s: self.item in s["staff"][self.hire]["equipment"] and self.system2 in s["staff"][self.hire]["accounts"],
        ]
        self._current_msg = 0
        self._expected_answer = "done"
        tools = [{"type": "function", "function": dict(name=n, **t)} for n, t in self._tools.items()]
        return "[user] " + self._user_messages[0], {"tools": tools}

    def _person(self, employee_id):
        return self._state["staff"].get(str(employee_id).strip().upper())

    def tool_find_employee(self, name):
        text = str(name).strip().lower()
        hits = [{"employee_id": e, "name": v["name"], "department": v["department"], "start": v["start"]}
                for e, v in sorted(self._state["staff"].items()) if text and text in v["name"].lower()]
        return json.dumps(hits) if hits else "No employee matches %r." % name

    def tool_create_account(self, employee_id, system):
        p = self._person(employee_id)
        if p is None:
            return "Error: no employee %s." % employee_id
        if system not in SYSTEMS:
            return "Error: system must be one of %s." % ", ".join(SYSTEMS)
        if system in p["accounts"]:
            return "Error: %s already has a %s account." % (p["name"], system)
        p["accounts"].append(system)
        return "Created a %s account for %s." % (system, p["name"])

    def tool_set_manager(self, employee_id, manager_id):
        p, m = self._person(employee_id), self._person(manager_id)
        if p is None or m is None:
            return "Error: no employee %s." % (employee_id if p is None else manager_id)
        if p is m:
            return "Error: an employee cannot manage themselves."
        p["manager"] = str(manager_id).strip().upper()
        return "%s now reports to %s." % (p["name"], m["name"])

    def tool_enroll_benefit(self, employee_id, plan):
        p = self._person(employee_id)
        if p is None:
            return "Error: no employee %s." % employee_id
        if plan not in PLANS:
            return "Error: plan must be one of %s." % ", ".join(PLANS)
        p["plan"] = plan
        return "%s is enrolled in the %s plan." % (p["name"], plan)

    def tool_order_equipment(self, employee_id, item):
        p = self._person(employee_id)
        if p is None:
            return "Error: no employee %s." % employee_id
        if item not in EQUIPMENT:
            return "Error: item must be one of %s." % ", ".join(EQUIPMENT)
        p["equipment"].append(item)
        return "Ordered a %s for %s." % (item, p["name"])

    def tool_get_public_holidays(self, year):
        if type(year) is not int:
            return "Error: year must be an integer."
        return json.dumps(["%d-01-01" % year, "%d-05-01" % year, "%d-12-25" % year])

    def solution(self):
        staff = self._state["staff"]
        return [call("find_employee", name=staff[self.hire]["name"]),
                call("create_account", employee_id=self.hire, system="email"),
                call("find_employee", name=staff[self.manager]["name"]),
                call("set_manager", employee_id=self.hire, manager_id=self.manager),
                call("enroll_benefit", employee_id=self.hire, plan=self.plan),
                call("order_equipment", employee_id=self.hire, item=self.item),
                call("create_account", employee_id=self.hire, system=self.system2),
                "<answer>done</answer>"]

# Skill: error_recovery. Variant: execute (every instruction gives the accounts and amounts). Two
# guarded failure paths: a transfer above the per-transfer limit is refused (split it), and a frozen
# account refuses payments until it is unfrozen with a verification code.
# A retail-banking API. Distractors: ATM finder, exchange rates.
import json
import random

PAYEES = ["City Water", "Metro Power", "FiberNet", "Harbor Insurance", "Greenfield Gas"]


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


class BankTransferEnv(ToolUseEnv):
    def reset(self, seed=None):
        rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        n = rng.sample(range(1000, 10000), 3)
        self.a, self.b, self.c = "CHK-%d" % n[0], "SAV-%d" % n[1], "BIZ-%d" % n[2]
        self.limit = rng.choice([300, 500, 750, 1000])
        self.amount1 = rng.randint(self.limit + 1, 3 * self.limit - 1)
        self.bill = "BILL-%03d" % rng.randint(100, 999)
        bill_amount = rng.randint(40, 400)
        self.amount3 = rng.randint(50, self.limit)
        balances = {self.a: self.amount1 + rng.randint(100, 2000), self.b: rng.randint(0, 5000),
                    self.c: bill_amount + self.amount3 + rng.randint(0, 1500)}
        self._state = {"balances": balances, "frozen": [self.c], "limit": self.limit, "ledger": [],
                       "bills": {self.bill: {"payee": rng.choice(PAYEES), "amount": bill_amount, "paid_from": None}},
                       "code": "%06d" % rng.randint(0, 999999), "code_sent": False}
        self._tools = {
            "get_balance": spec("Balance and status of an account.", ["account_id"], account_id=("string", "account id")),
            "transfer": spec("Move money between two of the customer's accounts.", ["from_account", "to_account", "amount"],
                             from_account=("string", "account id"), to_account=("string", "account id"),
                             amount=("number", "amount in USD")),
            "pay_bill": spec("Pay a bill in full from an account.", ["account_id", "bill_id"],
                             account_id=("string", "paying account id"), bill_id=("string", "bill id")),
            "request_verification_code": spec("Send a one-time verification code to the phone on file of an account.",
                                              ["account_id"], account_id=("string", "account id")),
            "unfreeze_account": spec("Lift a security freeze using the verification code.", ["account_id", "code"],
                                     account_id=("string", "account id"), code=("string", "6-digit code")),
            "find_atm": spec("ATMs near a city.", ["city"], city=("string", "city")),
            "get_exchange_rate": spec("Exchange rate between two currencies.", ["base", "quote"],
                                      base=("string", "ISO code"), quote=("string", "ISO code")),
        }
        self._user_messages = [
            "Transfer $%d from %s to %s." % (self.amount1, self.a, self.b),
            "Pay bill %s from account %s." % (self.bill, self.c),
            "Then move $%d from %s to %s." % (self.amount3, self.c, self.a),
        ]
        self._message_criteria = [
            lambda s: self._moved(s, self.a, self.b) == self.amount1,
            lambda s: s["bills"][self.bill]["paid_from"] == self.c,
            lambda s: self._moved(s, self.c, self.a) == self.amount3,
        ]
        self._current_msg = 0
        self._expected_answer = "done"
        tools = [{"type": "function", "function": dict(name=n, **t)} for n, t in self._tools.items()]
        return "[user] " + self._user_messages[0], {"tools": tools}

    @staticmethod
    def _moved(s, source, target):
        return sum(t[2] for t in s["ledger"] if t[0] == source and t[1] == target)

    def tool_get_balance(self, account_id):
        bal = self._state["balances"].get(str(account_id))
        if bal is None:
            return "Error: no account %s." % account_id
        status = "frozen (security check)" if account_id in self._state["frozen"] else "active"
        return json.dumps({"account_id": account_id, "balance": bal, "status": status})

    def tool_transfer(self, from_account, to_account, amount):
        bal = self._state["balances"]
        if str(from_account) not in bal or str(to_account) not in bal or from_account == to_account:
            return "Error: give two different accounts of this customer."
        if type(amount) not in (int, float) or amount <= 0:
            return "Error: amount must be a positive number."
        if from_account in self._state["frozen"]:
            return "Error: account %s is frozen for a security check." % from_account
        if amount > self.limit:
            return "Error: %s exceeds the per-transfer limit of $%d." % (amount, self.limit)
        if bal[from_account] < amount:
            return "Error: insufficient funds in %s." % from_account
        bal[from_account] -= amount
        bal[to_account] += amount
        self._state["ledger"].append([from_account, to_account, amount])
        return "Transferred $%s from %s to %s." % (amount, from_account, to_account)

    def tool_pay_bill(self, account_id, bill_id):
        bill = self._state["bills"].get(str(bill_id))
        if bill is None:
            return "Error: no bill %s." % bill_id
        if bill["paid_from"]:
            return "Error: bill %s is already paid." % bill_id
        if str(account_id) not in self._state["balances"]:
            return "Error: no account %s." % account_id
        if account_id in self._state["frozen"]:
            return ("Error: account %s is frozen for a security check. Request a verification code and "
                    "unfreeze the account first." % account_id)
        if self._state["balances"][account_id] < bill["amount"]:
            return "Error: insufficient funds in %s." % account_id
        self._state["balances"][account_id] -= bill["amount"]
        bill["paid_from"] = account_id
        return "Paid $%d to %s from %s." % (bill["amount"], bill["payee"], account_id)

    def tool_request_verification_code(self, account_id):
        if str(account_id) not in self._state["balances"]:
            return "Error: no account %s." % account_id
        self._state["code_sent"] = True
        return "A one-time code was sent to the phone on file; the customer reads it out: %s." % self._state["code"]

    def tool_unfreeze_account(self, account_id, code):
        if str(account_id) not in self._state["balances"]:
            return "Error: no account %s." % account_id
        if not self._state["code_sent"] or str(code).zfill(6) != self._state["code"]:
            return "Error: wrong or expired verification code."
        if account_id in self._state["frozen"]:
            self._state["frozen"].remove(account_id)
        return "Account %s is active again." % account_id

    def tool_find_atm(self, city):
        return "Nearest ATM in %s: Main Street 12." % city

    def tool_get_exchange_rate(self, base, quote):
        return "1 %s = %.4f %s" % (base, 0.5 + (sum(map(ord, str(base) + str(quote))) % 100) / 50, quote)

    def solution(self):
        chunks = [self.limit] * (self.amount1 // self.limit) + ([self.amount1 % self.limit] if self.amount1 % self.limit else [])
        steps = [call("transfer", from_account=self.a, to_account=self.b, amount=self.amount1)]  # refused: limit
        steps += [call("transfer", from_account=self.a, to_account=self.b, amount=x) for x in chunks]
        return steps + [call("pay_bill", account_id=self.c, bill_id=self.bill),  # refused: frozen
                        call("request_verification_code", account_id=self.c),
                        call("unfreeze_account", account_id=self.c, code=self._state["code"]),
                        call("pay_bill", account_id=self.c, bill_id=self.bill),
                        call("transfer", from_account=self.c, to_account=self.a, amount=self.amount3),
                        "<answer>done</answer>"]

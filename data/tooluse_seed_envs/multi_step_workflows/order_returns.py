# Skill: multi_step_workflows. Variant: read-then-write (the returned item's SKU and price, the
# shipping fee and the customer id must be read from the order before the return, refund and credit
# can be written; a refund is refused until the return is recorded).
# A retail order-management API. Distractor: package tracking.
import json
import random

PRODUCTS = ["desk lamp", "wool scarf", "coffee grinder", "yoga mat", "phone case", "water bottle",
            "bluetooth speaker", "cutting board", "backpack", "table clock"]
STREETS = ["Elm Street", "Harbor Road", "Maple Avenue", "Mill Lane", "Station Square", "Park Row"]


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


class OrderReturnsEnv(ToolUseEnv):
    def reset(self, seed=None):
        rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        self.customer = "CU-%04d" % rng.randint(1000, 9999)
        products = rng.sample(PRODUCTS, 5)
        skus = ["SK%05d" % n for n in rng.sample(range(10000, 100000), 5)]
        self.oid, self.oid2 = ["O-%05d" % n for n in rng.sample(range(10000, 100000), 2)]
        items = [{"sku": skus[i], "name": products[i], "price": rng.randint(8, 120)} for i in range(3)]
        orders = {
            self.oid: {"customer": self.customer, "status": "delivered", "items": items,
                       "shipping_fee": rng.randint(3, 15), "address": "%d %s" % (rng.randint(1, 99), rng.choice(STREETS))},
            self.oid2: {"customer": self.customer, "status": "pending",
                        "items": [{"sku": skus[i], "name": products[i], "price": rng.randint(8, 120)} for i in (3, 4)],
                        "shipping_fee": rng.randint(3, 15), "address": "%d %s" % (rng.randint(1, 99), rng.choice(STREETS))},
        }
        self.item = rng.choice(items)
        self.fee = orders[self.oid]["shipping_fee"]
        self.address = "%d %s" % (rng.randint(100, 999), rng.choice(STREETS))
        self._state = {"orders": orders, "returns": [], "refunds": [], "credits": {self.customer: 0}}
        self._tools = {
            "get_order": spec("An order's items (SKU, name, price), shipping fee, customer, status and address.",
                              ["order_id"], order_id=("string", "order id")),
            "return_item": spec("Record the return of one item of a delivered order.", ["order_id", "sku", "reason"],
                                order_id=("string", "order id"), sku=("string", "item SKU"),
                                reason=("string", "why", ["damaged", "wrong_item", "not_needed"])),
            "issue_refund": spec("Refund an amount to the order's original payment method (only for returned items).",
                                 ["order_id", "amount"], order_id=("string", "order id"), amount=("number", "USD")),
            "add_store_credit": spec("Add store credit to a customer's account.", ["customer_id", "amount"],
                                     customer_id=("string", "customer id"), amount=("number", "USD")),
            "update_address": spec("Change the delivery address of an order that has not shipped.", ["order_id", "address"],
                                   order_id=("string", "order id"), address=("string", "street address")),
            "track_package": spec("Carrier tracking status of an order.", ["order_id"], order_id=("string", "order id")),
        }
        self._user_messages = [
            "I'd like to return the %s from order %s, it arrived damaged." % (self.item["name"], self.oid),
            "Please refund what I paid for it.",
            "Delivery was slow too, so please give me store credit equal to that order's shipping fee.",
            "Finally, change the delivery address of my order %s to %s." % (self.oid2, self.address),
        ]
        self._message_criteria = [
            lambda s: [self.oid, self.item["sku"], "damaged"] in s["returns"],
            lambda s: sum(r[1] for r in s["refunds"] if r[0] == self.oid) == self.item["price"],
            lambda s: s["credits"][self.customer] == self.fee,
            lambda s: s["orders"][self.oid2]["address"] == self.address,
        ]
        self._current_msg = 0
        self._expected_answer = "done"
        tools = [{"type": "function", "function": dict(name=n, **t)} for n, t in self._tools.items()]
        return "[user] " + self._user_messages[0], {"tools": tools}

    def _order(self, order_id):
        return self._state["orders"].get(str(order_id).strip().upper())

    def tool_get_order(self, order_id):
        order = self._order(order_id)
        return json.dumps(dict(order, order_id=str(order_id).strip().upper())) if order else "Error: no order %s." % order_id

    def tool_return_item(self, order_id, sku, reason):
        order = self._order(order_id)
        if order is None:
            return "Error: no order %s." % order_id
        if order["status"] != "delivered":
            return "Error: order %s has not been delivered yet." % order_id
        if str(sku) not in [i["sku"] for i in order["items"]]:
            return "Error: order %s has no item with SKU %s." % (order_id, sku)
        if reason not in ("damaged", "wrong_item", "not_needed"):
            return "Error: reason must be damaged, wrong_item or not_needed."
        self._state["returns"].append([str(order_id).strip().upper(), str(sku), reason])
        return "Return of %s recorded." % sku

    def tool_issue_refund(self, order_id, amount):
        order = self._order(order_id)
        if order is None:
            return "Error: no order %s." % order_id
        oid = str(order_id).strip().upper()
        returned = sum(i["price"] for i in order["items"] if i["sku"] in [r[1] for r in self._state["returns"] if r[0] == oid])
        if returned == 0:
            return "Error: nothing has been returned on order %s; record the return first." % oid
        if type(amount) not in (int, float) or amount <= 0:
            return "Error: amount must be a positive number."
        refunded = sum(r[1] for r in self._state["refunds"] if r[0] == oid)
        if refunded + amount > returned + 1e-9:
            return "Error: refunds on %s may not exceed the returned items' price of $%d." % (oid, returned)
        self._state["refunds"].append([oid, amount])
        return "Refunded $%s on %s to the original payment method." % (amount, oid)

    def tool_add_store_credit(self, customer_id, amount):
        if str(customer_id) not in self._state["credits"]:
            return "Error: no customer %s." % customer_id
        if type(amount) not in (int, float) or not 0 < amount <= 200:
            return "Error: amount must be a number from 0 to 200."
        self._state["credits"][customer_id] += amount
        return "Store credit of %s is now $%s." % (customer_id, self._state["credits"][customer_id])

    def tool_update_address(self, order_id, address):
        order = self._order(order_id)
        if order is None:
            return "Error: no order %s." % order_id
        if order["status"] != "pending":
            return "Error: order %s has already shipped." % order_id
        if type(address) is not str or not address.strip():
            return "Error: address must be non-empty text."
        order["address"] = address.strip()
        return "Order %s will be delivered to %s." % (order_id, address.strip())

    def tool_track_package(self, order_id):
        order = self._order(order_id)
        return "Error: no order %s." % order_id if order is None else "Order %s: %s." % (order_id, order["status"])

    def solution(self):
        return [call("get_order", order_id=self.oid),
                call("return_item", order_id=self.oid, sku=self.item["sku"], reason="damaged"),
                call("issue_refund", order_id=self.oid, amount=self.item["price"]),
                call("add_store_credit", customer_id=self.customer, amount=self.fee),
                call("update_address", order_id=self.oid2, address=self.address),
                "<answer>done</answer>"]

# Skill: state_modification. Variant: execute (each instruction gives the SKU, bins and quantities).
# A warehouse management API: receiving, bin-to-bin moves, write-offs, reorder points. Distractors:
# label printing, supplier contacts.
import json
import random

ITEMS = ["hex bolt M8", "cable tie 200mm", "ball bearing 608", "wood screw 4x40", "hinge 75mm",
         "wall plug 6mm", "washer M10", "spring pin 3mm", "drawer slide 450mm"]
BINS = ["A1", "A2", "A3", "B1", "B2", "B3", "C1", "C2"]


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


class WarehouseStockEnv(ToolUseEnv):
    def reset(self, seed=None):
        rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        skus = ["SKU-%04d" % n for n in rng.sample(range(1000, 10000), 5)]
        names = dict(zip(skus, rng.sample(ITEMS, 5)))
        stock = {s: {b: rng.randint(5, 60) for b in rng.sample(BINS, 3)} for s in skus}
        reorder = {s: rng.choice(range(10, 50, 5)) for s in skus}
        self.sku1, self.sku2, self.sku3 = skus[:3]
        self.bin1 = rng.choice(BINS)  # may be a bin the SKU is not in yet
        self.qty1 = rng.randint(5, 80)
        self.from2, self.to2 = rng.sample(sorted(stock[self.sku2]), 2)
        self.qty2 = rng.randint(1, stock[self.sku2][self.from2])
        self.bin3 = rng.choice(sorted(stock[self.sku3]))
        self.qty3 = rng.randint(1, stock[self.sku3][self.bin3])
        self.level = rng.choice([r for r in range(10, 80, 5) if r != reorder[self.sku1]])
        self.start = json.loads(json.dumps(stock))
        self._state = {"names": names, "stock": stock, "reorder": reorder, "write_offs": []}
        self._tools = {
            "get_stock": spec("Units of a SKU per bin and its reorder point.", ["sku"], sku=("string", "SKU code")),
            "receive_stock": spec("Book received units of a SKU into a bin.", ["sku", "bin", "quantity"],
                                  sku=("string", "SKU code"), bin=("string", "bin code"),
                                  quantity=("integer", "units received")),
            "move_stock": spec("Move units of a SKU from one bin to another.", ["sku", "from_bin", "to_bin", "quantity"],
                               sku=("string", "SKU code"), from_bin=("string", "source bin"),
                               to_bin=("string", "destination bin"), quantity=("integer", "units to move")),
            "write_off": spec("Remove unusable units of a SKU from a bin.", ["sku", "bin", "quantity", "reason"],
                              sku=("string", "SKU code"), bin=("string", "bin code"),
                              quantity=("integer", "units"), reason=("string", "why", ["damaged", "expired", "lost"])),
            "set_reorder_point": spec("Set the stock level at which a SKU is reordered.", ["sku", "level"],
                                      sku=("string", "SKU code"), level=("integer", "units")),
            "print_label": spec("Print a shelf label for a SKU.", ["sku"], sku=("string", "SKU code")),
            "get_supplier_contact": spec("Supplier contact details of a SKU.", ["sku"], sku=("string", "SKU code")),
        }
        self._user_messages = [
            "Receive %d units of %s into bin %s." % (self.qty1, self.sku1, self.bin1),
            "Move %d units of %s from bin %s to bin %s." % (self.qty2, self.sku2, self.from2, self.to2),
            "Write off %d expired units of %s from bin %s." % (self.qty3, self.sku3, self.bin3),
            "Set the reorder point of %s to %d." % (self.sku1, self.level),
        ]
        self._message_criteria = [
            lambda s: s["stock"][self.sku1].get(self.bin1, 0) == self.start[self.sku1].get(self.bin1, 0) + self.qty1,
            lambda s: (s["stock"][self.sku2][self.from2] == self.start[self.sku2][self.from2] - self.qty2
                       and s["stock"][self.sku2][self.to2] == self.start[self.sku2][self.to2] + self.qty2),
            lambda s: (s["stock"][self.sku3][self.bin3] == self.start[self.sku3][self.bin3] - self.qty3
                       and [self.sku3, self.bin3, self.qty3, "expired"] in s["write_offs"]),
            lambda s: s["reorder"][self.sku1] == self.level,
        ]
        self._current_msg = 0
        self._expected_answer = "done"
        tools = [{"type": "function", "function": dict(name=n, **t)} for n, t in self._tools.items()]
        return "[user] " + self._user_messages[0], {"tools": tools}

    def _check(self, sku, bins, quantity):
        """An error message for bad arguments, or None."""
        if str(sku) not in self._state["stock"]:
            return "Error: unknown SKU %s." % sku
        for b in bins:
            if str(b) not in BINS:
                return "Error: unknown bin %s. Bins: %s." % (b, ", ".join(BINS))
        if type(quantity) is not int or quantity <= 0:
            return "Error: quantity must be a positive integer."
        return None

    def tool_get_stock(self, sku):
        if str(sku) not in self._state["stock"]:
            return "Error: unknown SKU %s." % sku
        return json.dumps({"sku": sku, "item": self._state["names"][sku], "bins": self._state["stock"][sku],
                           "reorder_point": self._state["reorder"][sku]})

    def tool_receive_stock(self, sku, bin, quantity):
        error = self._check(sku, [bin], quantity)
        if error:
            return error
        bins = self._state["stock"][sku]
        bins[bin] = bins.get(bin, 0) + quantity
        return "%s: bin %s now holds %d." % (sku, bin, bins[bin])

    def tool_move_stock(self, sku, from_bin, to_bin, quantity):
        error = self._check(sku, [from_bin, to_bin], quantity)
        if error:
            return error
        bins = self._state["stock"][sku]
        if bins.get(from_bin, 0) < quantity:
            return "Error: bin %s holds only %d of %s." % (from_bin, bins.get(from_bin, 0), sku)
        if from_bin == to_bin:
            return "Error: source and destination are the same bin."
        bins[from_bin] -= quantity
        bins[to_bin] = bins.get(to_bin, 0) + quantity
        return "Moved %d of %s: %s has %d, %s has %d." % (quantity, sku, from_bin, bins[from_bin], to_bin, bins[to_bin])

    def tool_write_off(self, sku, bin, quantity, reason):
        error = self._check(sku, [bin], quantity)
        if error:
            return error
        if reason not in ("damaged", "expired", "lost"):
            return "Error: reason must be damaged, expired or lost."
        bins = self._state["stock"][sku]
        if bins.get(bin, 0) < quantity:
            return "Error: bin %s holds only %d of %s." % (bin, bins.get(bin, 0), sku)
        bins[bin] -= quantity
        self._state["write_offs"].append([sku, bin, quantity, reason])
        return "Wrote off %d %s units of %s from %s." % (quantity, reason, sku, bin)

    def tool_set_reorder_point(self, sku, level):
        if str(sku) not in self._state["reorder"]:
            return "Error: unknown SKU %s." % sku
        if type(level) is not int or level < 0:
            return "Error: level must be a non-negative integer."
        self._state["reorder"][sku] = level
        return "Reorder point of %s set to %d." % (sku, level)

    def tool_print_label(self, sku):
        return "Label queued for %s." % sku

    def tool_get_supplier_contact(self, sku):
        return "Supplier for %s: orders@supplier.example" % sku

    def solution(self):
        return [call("receive_stock", sku=self.sku1, bin=self.bin1, quantity=self.qty1),
                call("move_stock", sku=self.sku2, from_bin=self.from2, to_bin=self.to2, quantity=self.qty2),
                call("write_off", sku=self.sku3, bin=self.bin3, quantity=self.qty3, reason="expired"),
                call("set_reorder_point", sku=self.sku1, level=self.level),
                "<answer>done</answer>"]

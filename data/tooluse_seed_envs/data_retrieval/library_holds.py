# Skill: data_retrieval. Variant: read-then-write (the branch and the book must be found with the
# catalog and availability tools before a hold can be placed).
# A public library API: catalog search, per-branch availability, holds. Distractors: opening hours,
# loan renewal.
import json
import random

ADJ = ["Silent", "Crimson", "Hidden", "Last", "Northern", "Paper", "Quiet", "Salt", "Winter", "Glass"]
NOUN = ["Harbor", "Orchard", "Signal", "Lantern", "Archive", "Garden", "River", "Engine", "Meadow", "Tower"]
AUTHORS = ["Ada Marsh", "Bruno Keller", "Chiara Neri", "Dmitri Volkov", "Esther Abiola", "Farid Samadi"]
BRANCHES = ["Central", "Riverside", "Hillcrest", "Old Town", "Eastgate"]


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


class LibraryHoldsEnv(ToolUseEnv):
    def reset(self, seed=None):
        rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        titles = ["The %s %s" % (a, n) for a, n in zip(rng.sample(ADJ, 6), rng.sample(NOUN, 6))]
        isbns = ["978%010d" % n for n in rng.sample(range(10**9, 10**10), 6)]
        authors = rng.sample(AUTHORS, 5)
        by = [authors[0], authors[0]] + authors[1:5]  # authors[0] wrote two of the six books
        books = {isbns[i]: {"title": titles[i], "author": by[i]} for i in range(6)}
        branches = rng.sample(BRANCHES, 4)
        avail = {i: {b: rng.randint(0, 3) for b in branches} for i in isbns}
        self.isbn1 = isbns[rng.randint(2, 5)]
        self.best = rng.choice(branches)
        avail[self.isbn1][self.best] = 4 + rng.randint(0, 2)  # the unique maximum
        self.isbn2, self.other2 = isbns[1], isbns[0]
        self.branch2 = rng.choice(branches)
        avail[self.isbn2][self.branch2] = max(1, avail[self.isbn2][self.branch2])
        self.member = "M%04d" % rng.randint(1000, 9999)
        self.author2 = authors[0]
        self._state = {"books": books, "availability": avail, "holds": {}, "next_id": rng.randint(100, 900)}
        self._tools = {
            "search_catalog": spec("Search books by words of the title or the author's name.", ["query"],
                                   query=("string", "search words")),
            "get_availability": spec("Copies available at each branch for one ISBN.", ["isbn"],
                                     isbn=("string", "13-digit ISBN")),
            "place_hold": spec("Place a hold on a book at a branch for a member; returns the hold id.",
                               ["isbn", "branch", "member_id"], isbn=("string", "ISBN"),
                               branch=("string", "branch name"), member_id=("string", "library member id")),
            "cancel_hold": spec("Cancel a hold.", ["hold_id"], hold_id=("string", "hold id")),
            "get_opening_hours": spec("Opening hours of a branch.", ["branch"], branch=("string", "branch name")),
            "renew_loan": spec("Renew a book a member has borrowed.", ["loan_id"], loan_id=("string", "loan id")),
        }
        self._user_messages = [
            "I'm member %s. Please put a hold on \"%s\" at whichever branch has the most copies available."
            % (self.member, books[self.isbn1]["title"]),
            "%s has two books in your catalog. Put a hold on the one that is not \"%s\", at the %s branch."
            % (self.author2, books[self.other2]["title"], self.branch2),
            "Actually, cancel my hold on \"%s\"." % books[self.isbn1]["title"],
        ]
        self._message_criteria = [
            lambda s: any((h["isbn"], h["branch"]) == (self.isbn1, self.best) for h in s["holds"].values()),
            lambda s: self._hold(s, self.isbn2, self.branch2) is not None,
            lambda s: (self._hold(s, self.isbn2, self.branch2) is not None
                       and any(h["isbn"] == self.isbn1 and h["status"] == "cancelled" for h in s["holds"].values())
                       and self._hold(s, self.isbn1, None) is None),
        ]
        self._current_msg = 0
        self._expected_answer = "done"
        tools = [{"type": "function", "function": dict(name=n, **t)} for n, t in self._tools.items()]
        return "[user] " + self._user_messages[0], {"tools": tools}

    def _hold(self, s, isbn, branch):
        """The member's active hold on isbn (at branch, or anywhere when branch is None)."""
        return next((h for h, v in s["holds"].items() if v["isbn"] == isbn and v["member"] == self.member
                     and v["status"] == "active" and branch in (None, v["branch"])), None)

    def tool_search_catalog(self, query):
        words = str(query).lower().split()
        if not words:
            return "Error: empty query."
        hits = [{"isbn": i, "title": b["title"], "author": b["author"]} for i, b in sorted(self._state["books"].items())
                if all(w in (b["title"] + " " + b["author"]).lower() for w in words)]
        return json.dumps(hits) if hits else "No books match %r." % query

    def tool_get_availability(self, isbn):
        avail = self._state["availability"].get(str(isbn))
        if avail is None:
            return "Error: unknown ISBN %s." % isbn
        return json.dumps({"isbn": str(isbn), "copies": avail})

    def tool_place_hold(self, isbn, branch, member_id):
        avail = self._state["availability"].get(str(isbn))
        if avail is None:
            return "Error: unknown ISBN %s." % isbn
        if str(branch) not in avail:
            return "Error: unknown branch %s." % branch
        if str(member_id) != self.member:
            return "Error: unknown member %s." % member_id
        if avail[str(branch)] == 0:
            return "Error: no copies of %s available at %s." % (isbn, branch)
        self._state["next_id"] += 1
        hid = "H%d" % self._state["next_id"]
        self._state["holds"][hid] = {"isbn": str(isbn), "branch": str(branch), "member": self.member, "status": "active"}
        return json.dumps({"hold_id": hid, "isbn": str(isbn), "branch": str(branch)})

    def tool_cancel_hold(self, hold_id):
        hold = self._state["holds"].get(str(hold_id))
        if hold is None or hold["status"] != "active":
            return "Error: no active hold %s." % hold_id
        hold["status"] = "cancelled"
        return "Hold %s cancelled." % hold_id

    def tool_get_opening_hours(self, branch):
        return "%s: 9:00-18:00 weekdays, 10:00-14:00 Saturday." % branch

    def tool_renew_loan(self, loan_id):
        return "Error: no loan %s on record." % loan_id

    def solution(self):
        first = self._state["next_id"]
        books = self._state["books"]
        return [call("search_catalog", query=books[self.isbn1]["title"]),
                call("get_availability", isbn=self.isbn1),
                call("place_hold", isbn=self.isbn1, branch=self.best, member_id=self.member),
                call("search_catalog", query=self.author2),
                call("place_hold", isbn=self.isbn2, branch=self.branch2, member_id=self.member),
                call("cancel_hold", hold_id="H%d" % (first + 1)),
                "<answer>done</answer>"]

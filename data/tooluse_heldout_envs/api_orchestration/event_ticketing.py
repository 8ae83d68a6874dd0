# Skill: api_orchestration. Variant: execute (every instruction gives the values; the event id that
# create_event returns must be carried through the tier, publish and announcement calls, and the API
# enforces their order: no publishing without tiers, no announcement before publishing).
# An event-ticketing API. Distractors: URL shortener, weather.
import json
import random

EVENTS = ["Spring Jazz Night", "Indie Film Marathon", "Robotics Expo", "Poetry Slam", "Winter Food Fair",
          "Retro Game Jam", "Harbor Fun Run"]
VENUES = {"Dockside Hall": 600, "The Granary": 250, "Civic Arena": 2000, "Orchard Pavilion": 400}
TIERS = ["general", "student", "vip", "early_bird"]
LISTS = ["members", "newsletter", "press", "volunteers"]


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


class EventTicketingEnv(ToolUseEnv):
    def reset(self, seed=None):
        rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        self.name = rng.choice(EVENTS)
        self.venue = rng.choice(sorted(VENUES))
        self.date = "2026-%02d-%02d" % (rng.randint(1, 12), rng.randint(1, 28))
        cap = VENUES[self.venue]
        self.tiers = [(t, rng.choice(range(10, 150, 5)), rng.choice(range(20, cap // 2, 10))) for t in rng.sample(TIERS, 2)]
        self.mailing = rng.choice(LISTS)
        self._state = {"events": {}, "announcements": [], "next_id": rng.randint(100, 900)}
        self._tools = {
            "create_event": spec("Create a draft event; returns its id.", ["name", "venue", "date"],
                                 name=("string", "event name"), venue=("string", "venue", sorted(VENUES)),
                                 date=("string", "YYYY-MM-DD")),
            "add_ticket_tier": spec("Add a ticket tier to a draft event.", ["event_id", "tier", "price", "quantity"],
                                    event_id=("string", "event id"), tier=("string", "tier", TIERS),
                                    price=("number", "USD per ticket"), quantity=("integer", "tickets")),
            "publish_event": spec("Open a draft event for sales (needs at least one tier).", ["event_id"],
                                  event_id=("string", "event id")),
            "send_announcement": spec("E-mail a published event to a mailing list.", ["event_id", "mailing_list"],
                                      event_id=("string", "event id"), mailing_list=("string", "list", LISTS)),
            "shorten_url": spec("Shorten a web address.", ["url"], url=("string", "address")),
            "get_weather": spec("Weather forecast for a date.", ["date"], date=("string", "YYYY-MM-DD")),
        }
        (t1, p1, q1), (t2, p2, q2) = self.tiers
        self._user_messages = [
            "Create an event \"%s\" at %s on %s." % (self.name, self.venue, self.date),
            "Add a %s tier at $%d with %d tickets and a %s tier at $%d with %d tickets." % (t1, p1, q1, t2, p2, q2),
            "Publish it.",
            "Announce it to the %s mailing list." % self.mailing,
        ]
        self._message_criteria = [
            lambda s: self._event(s) is not None,
            lambda s: self._event(s) is not None and sorted(s["events"][self._event(s)]["tiers"]) == sorted(map(list, self.tiers)),
            lambda s: self._event(s) is not None and s["events"][self._event(s)]["published"],
            lambda s: [self._event(s), self.mailing] in s["announcements"],
        ]
        self._current_msg = 0
        self._expected_answer = "done"
        tools = [{"type": "function", "function": dict(name=n, **t)} for n, t in self._tools.items()]
        return "[user] " + self._user_messages[0], {"tools": tools}

    def _event(self, s):
        return next((e for e, v in sorted(s["events"].items())
                     if (v["name"], v["venue"], v["date"]) == (self.name, self.venue, self.date)), None)

    def tool_create_event(self, name, venue, date):
        if type(name) is not str or not name.strip():
            return "Error: name must be non-empty text."
        if venue not in VENUES:
            return "Error: venue must be one of %s." % ", ".join(sorted(VENUES))
        if type(date) is not str or len(date) != 10 or date[4] != "-" or date[7] != "-":
            return "Error: date must be YYYY-MM-DD."
        self._state["next_id"] += 1
        eid = "EV-%d" % self._state["next_id"]
        self._state["events"][eid] = {"name": name.strip(), "venue": venue, "date": date, "tiers": [], "published": False}
        return json.dumps({"event_id": eid, "status": "draft"})

    def tool_add_ticket_tier(self, event_id, tier, price, quantity):
        event = self._state["events"].get(str(event_id))
        if event is None:
            return "Error: no event %s." % event_id
        if event["published"]:
            return "Error: event %s is already published." % event_id
        if tier not in TIERS or tier in [t[0] for t in event["tiers"]]:
            return "Error: tier must be a new one of %s." % ", ".join(TIERS)
        if type(price) not in (int, float) or price < 0 or type(quantity) is not int or quantity <= 0:
            return "Error: price must be a number >= 0 and quantity a positive integer."
        if sum(t[2] for t in event["tiers"]) + quantity > VENUES[event["venue"]]:
            return "Error: %s holds only %d people." % (event["venue"], VENUES[event["venue"]])
        event["tiers"].append([tier, price, quantity])
        return "Tier %s added to %s: %d tickets at $%s." % (tier, event_id, quantity, price)

    def tool_publish_event(self, event_id):
        event = self._state["events"].get(str(event_id))
        if event is None:
            return "Error: no event %s." % event_id
        if not event["tiers"]:
            return "Error: add at least one ticket tier before publishing."
        event["published"] = True
        return "Event %s is on sale." % event_id

    def tool_send_announcement(self, event_id, mailing_list):
        event = self._state["events"].get(str(event_id))
        if event is None:
            return "Error: no event %s." % event_id
        if mailing_list not in LISTS:
            return "Error: mailing_list must be one of %s." % ", ".join(LISTS)
        if not event["published"]:
            return "Error: publish the event before announcing it."
        self._state["announcements"].append([str(event_id), mailing_list])
        return "Announcement for %s sent to %s." % (event_id, mailing_list)

    def tool_shorten_url(self, url):
        return "https://sho.rt/%05d" % (sum(map(ord, str(url))) % 100000)

    def tool_get_weather(self, date):
        return "Forecast for %s: mild, light wind." % date

    def solution(self):
        eid = "EV-%d" % (self._state["next_id"] + 1)
        steps = [call("create_event", name=self.name, venue=self.venue, date=self.date)]
        steps += [call("add_ticket_tier", event_id=eid, tier=t, price=p, quantity=q) for t, p, q in self.tiers]
        return steps + [call("publish_event", event_id=eid),
                        call("send_announcement", event_id=eid, mailing_list=self.mailing),
                        "<answer>done</answer>"]

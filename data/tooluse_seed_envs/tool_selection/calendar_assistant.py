# Skill: tool_selection. Variant: irrelevant (the last request, a restaurant booking, matches no tool:
# the only rewarded ending is declining it in <answer>, see _check_answer). Before that the agent must
# pick among look-alike tools: an event (not a task or a note), a reminder on it, and a move (not a
# new event) for an existing one.
# A calendar API. Distractor: time-zone lookup.
import json
import random
import re

TITLES = ["Budget review", "Dentist", "Team retro", "Call with landlord", "Yoga class", "Design critique",
          "Quarterly planning", "Parent-teacher meeting"]
RESTAURANTS = ["Trattoria Lupo", "Casa Verde", "The Copper Pot", "Sakura House", "Le Petit Four"]
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


class CalendarAssistantEnv(ToolUseEnv):
    def reset(self, seed=None):
        rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        days = ["2026-%02d-%02d" % (rng.randint(1, 12), d) for d in rng.sample(range(1, 29), 4)]
        times = ["%02d:%s" % (h, m) for h in range(8, 18) for m in ("00", "30")]
        titles = rng.sample(TITLES, 4)
        ids = ["E-%03d" % n for n in rng.sample(range(100, 900), 3)]
        events = {ids[i]: {"title": titles[i + 1], "date": days[i], "start": rng.choice(times),
                           "minutes": rng.choice([30, 45, 60, 90]), "reminder": None} for i in range(3)}
        self.title, self.date, self.start = titles[0], days[3], rng.choice(times)
        self.minutes, self.remind = rng.choice([15, 30, 45, 60, 90]), rng.choice([5, 10, 15, 30, 60])
        self.move_id = ids[rng.randint(0, 2)]
        old = events[self.move_id]
        self.move_date = rng.choice([d for d in days if d != old["date"]])
        self.move_start = rng.choice([t for t in times if t != old["start"]])
        self._state = {"events": events, "tasks": [], "notes": [], "next_id": rng.randint(900, 990), "declined": False}
        self._tools = {
            "list_events": spec("Events on a date.", ["date"], date=("string", "YYYY-MM-DD")),
            "create_event": spec("Create a calendar event; returns its id.", ["title", "date", "start", "duration_minutes"],
                                 title=("string", "event title"), date=("string", "YYYY-MM-DD"),
                                 start=("string", "HH:MM, 24-hour"), duration_minutes=("integer", "length")),
            "move_event": spec("Move an existing event to a new date and start time.", ["event_id", "date", "start"],
                               event_id=("string", "event id"), date=("string", "YYYY-MM-DD"),
                               start=("string", "HH:MM, 24-hour")),
            "set_reminder": spec("Set a reminder before an event.", ["event_id", "minutes_before"],
                                 event_id=("string", "event id"), minutes_before=("integer", "minutes")),
            "create_task": spec("Add a to-do item with a due date (not shown on the calendar).", ["title", "due_date"],
                                title=("string", "task"), due_date=("string", "YYYY-MM-DD")),
            "create_note": spec("Save a free-text note.", ["text"], text=("string", "note text")),
            "get_timezone": spec("Time zone of a city.", ["city"], city=("string", "city")),
        }
        self._user_messages = [
            "Put \"%s\" on my calendar on %s at %s for %d minutes." % (self.title, self.date, self.start, self.minutes),
            "Remind me %d minutes before it." % self.remind,
            "Move my \"%s\" on %s to %s at %s." % (old["title"], old["date"], self.move_date, self.move_start),
            "And book a table for two at %s for that evening." % rng.choice(RESTAURANTS),
        ]
        self._message_criteria = [
            lambda s: self._new_event(s) is not None,
            lambda s: self._new_event(s) is not None and s["events"][self._new_event(s)]["reminder"] == self.remind,
            lambda s: (s["events"][self.move_id]["date"], s["events"][self.move_id]["start"]) == (self.move_date, self.move_start),
            lambda s: s["declined"],
        ]
        self._current_msg = 0
        self._expected_answer = "done"
        tools = [{"type": "function", "function": dict(name=n, **t)} for n, t in self._tools.items()]
        return "[user] " + self._user_messages[0], {"tools": tools}

    def _check_answer(self, answer):
        """Irrelevant variant: no tool books restaurants, so once that request has been shown, an answer
        that declines it (DECLINE: "cannot", "unable", "sorry", ...) wins, provided the earlier requests
        still hold. "done" or any other answer is not accepted."""
        if self._current_msg != len(self._user_messages) - 1 or not DECLINE.search(str(answer)):
            return False
        if not all(c(self._state) for c in self._message_criteria[:-1]):
            return False
        self._state["declined"] = True
        return True

    def _new_event(self, s):
        want = (self.title, self.date, self.start, self.minutes)
        return next((e for e, v in sorted(s["events"].items())
                     if (v["title"], v["date"], v["start"], v["minutes"]) == want), None)

    @staticmethod
    def _bad_when(date=None, start=None):
        if date is not None and not re.fullmatch(r"2\d{3}-[01]\d-[0-3]\d", str(date)):
            return "Error: date must be YYYY-MM-DD."
        if start is not None and not re.fullmatch(r"[0-2]\d:[0-5]\d", str(start)):
            return "Error: start must be HH:MM (24-hour)."
        return None

    def tool_list_events(self, date):
        error = self._bad_when(date=date)
        if error:
            return error
        found = [dict(v, event_id=e) for e, v in sorted(self._state["events"].items()) if v["date"] == date]
        return json.dumps(found) if found else "No events on %s." % date

    def tool_create_event(self, title, date, start, duration_minutes):
        error = self._bad_when(date, start)
        if error:
            return error
        if type(title) is not str or not title.strip():
            return "Error: title must be non-empty text."
        if type(duration_minutes) is not int or not 5 <= duration_minutes <= 600:
            return "Error: duration_minutes must be an integer from 5 to 600."
        self._state["next_id"] += 1
        eid = "E-%d" % self._state["next_id"]
        self._state["events"][eid] = {"title": title.strip(), "date": date, "start": start,
                                      "minutes": duration_minutes, "reminder": None}
        return json.dumps({"event_id": eid, "title": title.strip(), "date": date, "start": start})

    def tool_move_event(self, event_id, date, start):
        event = self._state["events"].get(str(event_id))
        if event is None:
            return "Error: no event %s." % event_id
        error = self._bad_when(date, start)
        if error:
            return error
        event["date"], event["start"] = date, start
        return "Event %s moved to %s %s." % (event_id, date, start)

    def tool_set_reminder(self, event_id, minutes_before):
        event = self._state["events"].get(str(event_id))
        if event is None:
            return "Error: no event %s." % event_id
        if type(minutes_before) is not int or not 1 <= minutes_before <= 1440:
            return "Error: minutes_before must be an integer from 1 to 1440."
        event["reminder"] = minutes_before
        return "Reminder set %d minutes before %s." % (minutes_before, event_id)

    def tool_create_task(self, title, due_date):
        error = self._bad_when(date=due_date)
        if error:
            return error
        self._state["tasks"].append([str(title), due_date])
        return "Task added: %s (due %s)." % (title, due_date)

    def tool_create_note(self, text):
        self._state["notes"].append(str(text))
        return "Note saved."

    def tool_get_timezone(self, city):
        return "%s: UTC%+d" % (city, len(str(city)) % 5 - 2)

    def solution(self):
        eid = "E-%d" % (self._state["next_id"] + 1)
        old = self._state["events"][self.move_id]
        return [call("create_event", title=self.title, date=self.date, start=self.start, duration_minutes=self.minutes),
                call("set_reminder", event_id=eid, minutes_before=self.remind),
                call("list_events", date=old["date"]),
                call("move_event", event_id=self.move_id, date=self.move_date, start=self.move_start),
                "<answer>I'm sorry, I can't book restaurant tables: none of my tools handles reservations.</answer>"]

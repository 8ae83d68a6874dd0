# Skill: multi_step_workflows. Variant: irrelevant (the last request, a prescription renewal, matches
# no tool: the only rewarded ending is declining it in <answer>, see _check_answer). Before that a
# booking workflow: identify the patient by birth date among namesakes, book the earliest free slot,
# confirm it, cancel the old appointment.
# A clinic scheduling API. Distractor: directions.
import json
import random
import re

FIRST = ["Maya", "Leon", "Ruth", "Idris", "Greta", "Samir", "Noor", "Pavel"]
LAST = ["Hughes", "Okoye", "Lambert", "Sato", "Varga", "Mendes", "Kaur"]
DOCTORS = ["Dr. Alvarez", "Dr. Brennan", "Dr. Chowdhury", "Dr. Dubois", "Dr. Eze"]
DRUGS = ["lisinopril", "metformin", "atorvastatin", "levothyroxine", "salbutamol"]
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


class ClinicSchedulerEnv(ToolUseEnv):
    def reset(self, seed=None):
        rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        name = "%s %s" % (rng.choice(FIRST), rng.choice(LAST))
        pids = ["P%04d" % n for n in rng.sample(range(1000, 10000), 3)]
        births = ["19%02d-%02d-%02d" % (rng.randint(40, 99), rng.randint(1, 12), d) for d in rng.sample(range(1, 29), 3)]
        names = [name, name, "%s %s" % (rng.choice(FIRST), rng.choice([l for l in LAST if l not in name]))]
        patients = {p: {"name": n, "born": b} for p, n, b in zip(pids, names, births)}
        self.pid = pids[rng.randint(0, 1)]
        self.doctor = rng.choice(DOCTORS)
        self.date = "2026-%02d-%02d" % (rng.randint(1, 12), rng.randint(1, 28))
        times = sorted(rng.sample(["%02d:%s" % (h, m) for h in range(8, 17) for m in ("00", "30")], 6))
        slot_ids = ["SL-%03d" % n for n in rng.sample(range(100, 1000), 6)]
        taken = set(rng.sample(range(6), 2))
        slots = {s: {"doctor": self.doctor, "date": self.date, "time": t, "free": i not in taken}
                 for i, (s, t) in enumerate(zip(slot_ids, times))}
        self.slot = next(s for s, t in zip(slot_ids, times) if slots[s]["free"])
        self.old = "AP-%d" % rng.randint(100, 499)
        appointments = {self.old: {"patient": self.pid, "doctor": rng.choice(DOCTORS), "slot": None, "status": "booked"}}
        self.channel = rng.choice(["sms", "email"])
        self._state = {"patients": patients, "slots": slots, "appointments": appointments, "confirmations": [],
                       "next_id": rng.randint(500, 900), "declined": False}
        self._tools = {
            "find_patient": spec("Find patients by name; returns ids and birth dates.", ["name"],
                                 name=("string", "full or partial name")),
            "list_slots": spec("Appointment slots of a doctor on a date (times and whether free).", ["doctor", "date"],
                               doctor=("string", "e.g. Dr. Alvarez"), date=("string", "YYYY-MM-DD")),
            "book_appointment": spec("Book a free slot for a patient; returns the appointment id.", ["patient_id", "slot_id"],
                                     patient_id=("string", "patient id"), slot_id=("string", "slot id")),
            "send_confirmation": spec("Send an appointment confirmation.", ["appointment_id", "channel"],
                                      appointment_id=("string", "appointment id"), channel=("string", "how", ["sms", "email"])),
            "cancel_appointment": spec("Cancel an appointment.", ["appointment_id"], appointment_id=("string", "appointment id")),
            "get_directions": spec("Directions to the clinic from an address.", ["address"], address=("string", "start")),
        }
        born = patients[self.pid]["born"]
        self._user_messages = [
            "Book %s (born %s) with %s on %s, at the earliest free time." % (name, born, self.doctor, self.date),
            "Send them the confirmation by %s." % ("SMS" if self.channel == "sms" else "e-mail"),
            "Please also cancel their old appointment %s." % self.old,
            "And renew their %s prescription." % rng.choice(DRUGS),
        ]
        self._message_criteria = [
            lambda s: self._booked(s) is not None,
            lambda s: [self._booked(s), self.channel] in s["confirmations"],
            lambda s: s["appointments"][self.old]["status"] == "cancelled",
            lambda s: s["declined"],
        ]
        self._current_msg = 0
        self._expected_answer = "done"
        tools = [{"type": "function", "function": dict(name=n, **t)} for n, t in self._tools.items()]
        return "[user] " + self._user_messages[0], {"tools": tools}

    def _check_answer(self, answer):
        """Irrelevant variant: no tool handles prescriptions, so once that request has been shown, an
        answer that declines it (DECLINE: "cannot", "unable", "sorry", ...) wins, provided the earlier
        requests still hold. "done" or any other answer is not accepted."""
        if self._current_msg != len(self._user_messages) - 1 or not DECLINE.search(str(answer)):
            return False
        if not all(c(self._state) for c in self._message_criteria[:-1]):
            return False
        self._state["declined"] = True
        return True

    def _booked(self, s):
        return next((a for a, v in sorted(s["appointments"].items())
                     if v["patient"] == self.pid and v["slot"] == self.slot and v["status"] == "booked"), None)

    def tool_find_patient(self, name):
        text = str(name).strip().lower()
        hits = [{"patient_id": p, "name": v["name"], "born": v["born"]}
                for p, v in sorted(self._state["patients"].items()) if text and text in v["name"].lower()]
        return json.dumps(hits) if hits else "No patient matches %r." % name

    def tool_list_slots(self, doctor, date):
        found = [{"slot_id": s, "time": v["time"], "free": v["free"]} for s, v in sorted(self._state["slots"].items())
                 if v["doctor"] == str(doctor).strip() and v["date"] == str(date).strip()]
        return json.dumps(found) if found else "No slots for %s on %s." % (doctor, date)

    def tool_book_appointment(self, patient_id, slot_id):
        pid, slot = str(patient_id).strip().upper(), self._state["slots"].get(str(slot_id).strip().upper())
        if pid not in self._state["patients"]:
            return "Error: no patient %s." % patient_id
        if slot is None or not slot["free"]:
            return "Error: slot %s is not free." % slot_id
        slot["free"] = False
        self._state["next_id"] += 1
        aid = "AP-%d" % self._state["next_id"]
        self._state["appointments"][aid] = {"patient": pid, "doctor": slot["doctor"],
                                            "slot": str(slot_id).strip().upper(), "status": "booked"}
        return json.dumps({"appointment_id": aid, "doctor": slot["doctor"], "date": slot["date"], "time": slot["time"]})

    def tool_send_confirmation(self, appointment_id, channel):
        appt = self._state["appointments"].get(str(appointment_id).strip().upper())
        if appt is None or appt["status"] != "booked":
            return "Error: no booked appointment %s." % appointment_id
        if channel not in ("sms", "email"):
            return "Error: channel must be sms or email."
        self._state["confirmations"].append([str(appointment_id).strip().upper(), channel])
        return "Confirmation for %s sent by %s." % (appointment_id, channel)

    def tool_cancel_appointment(self, appointment_id):
        appt = self._state["appointments"].get(str(appointment_id).strip().upper())
        if appt is None or appt["status"] != "booked":
            return "Error: no booked appointment %s." % appointment_id
        appt["status"] = "cancelled"
        if appt["slot"]:
            self._state["slots"][appt["slot"]]["free"] = True
        return "Appointment %s cancelled." % appointment_id

    def tool_get_directions(self, address):
        return "From %s: take tram 4 to Clinic Square, 12 minutes." % address

    def solution(self):
        aid = "AP-%d" % (self._state["next_id"] + 1)
        return [call("find_patient", name=self._state["patients"][self.pid]["name"]),
                call("list_slots", doctor=self.doctor, date=self.date),
                call("book_appointment", patient_id=self.pid, slot_id=self.slot),
                call("send_confirmation", appointment_id=aid, channel=self.channel),
                call("cancel_appointment", appointment_id=self.old),
                "<answer>Sorry, I cannot renew prescriptions: none of my tools handles medication.</answer>"]

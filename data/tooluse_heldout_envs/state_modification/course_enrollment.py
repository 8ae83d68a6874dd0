# Skill: state_modification. Variant: missing-parameter (the user names a student, courses and days;
# the tools need a student id and section ids, which must be looked up first).
# A university registrar API: students, course sections, enrollment, grading options. Distractor:
# library hours.
import json
import random

FIRST = ["Ayla", "Bastien", "Chloe", "Dev", "Emeka", "Freya", "Goran", "Hana", "Ilya", "Jade"]
LAST = ["Moreno", "Kowalski", "Achebe", "Lindgren", "Park", "Haddad", "Rossi", "Nakamura"]
COURSES = {"BIO101": "Cell Biology", "CHEM110": "General Chemistry", "HIST205": "Modern Europe",
           "MATH150": "Linear Algebra", "PSY120": "Intro to Psychology", "CS140": "Data Structures",
           "ECON101": "Microeconomics"}
SLOTS = ["Mon/Wed", "Tue/Thu", "Fri"]


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


class CourseEnrollmentEnv(ToolUseEnv):
    def reset(self, seed=None):
        rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        codes = rng.sample(sorted(COURSES), 4)
        numbers = iter(rng.sample(range(1000, 10000), 12))
        sections = {}
        for c in codes:
            for slot in SLOTS:
                sections["SEC-%d" % next(numbers)] = {"course": c, "days": slot, "time": rng.choice(["09:00", "11:00", "14:00"]),
                                                      "seats_left": rng.randint(1, 12)}
        of = lambda c: sorted(s for s in sections if sections[s]["course"] == c)
        self.c1, self.c2, self.c3 = codes[:3]
        self.days1 = rng.choice(SLOTS)
        self.sec1 = next(s for s in of(self.c1) if sections[s]["days"] == self.days1)
        self.old2 = rng.choice(of(self.c2))
        self.sec3 = rng.choice(of(self.c3))
        for s in of(self.c3):
            if s != self.sec3:
                sections[s]["seats_left"] = 0
        names = ["%s %s" % (f, l) for f, l in zip(rng.sample(FIRST, 4), rng.sample(LAST, 4))]
        ids = ["S%05d" % n for n in rng.sample(range(10000, 100000), 4)]
        students = {i: {"name": n, "enrolled": {}} for i, n in zip(ids, names)}
        self.sid = ids[0]
        students[self.sid]["enrolled"] = {self.old2: "letter", of(codes[3])[0]: "letter"}
        self._state = {"students": students, "sections": sections}
        self._tools = {
            "find_student": spec("Find students by name; shows their ids and enrolled sections.", ["name"],
                                 name=("string", "full or partial name")),
            "find_sections": spec("Sections of a course (by code or title) with days, time and free seats.", ["course"],
                                  course=("string", "course code or title")),
            "enroll": spec("Enroll a student in a section.", ["student_id", "section_id"],
                           student_id=("string", "student id"), section_id=("string", "section id")),
            "drop": spec("Drop a student from a section.", ["student_id", "section_id"],
                         student_id=("string", "student id"), section_id=("string", "section id")),
            "set_grading": spec("Choose letter grades or pass/fail for an enrolled section.",
                                ["student_id", "section_id", "option"], student_id=("string", "student id"),
                                section_id=("string", "section id"), option=("string", "grading", ["letter", "pass_fail"])),
            "get_library_hours": spec("Library opening hours on a weekday.", ["day"], day=("string", "weekday")),
        }
        name = students[self.sid]["name"]
        self._user_messages = [
            "Enroll %s in the %s section of %s." % (name, self.days1, COURSES[self.c1]),
            "Drop them from %s." % COURSES[self.c2],
            "Switch their %s grading to pass/fail." % COURSES[self.c1],
            "Also enroll them in %s, in whichever section still has seats." % COURSES[self.c3],
        ]
        mine = lambda s: s["students"][self.sid]["enrolled"]
        self._message_criteria = [
            lambda s: self.sec1 in mine(s),
            lambda s: not any(s["sections"][x]["course"] == self.c2 for x in mine(s)),
            lambda s: mine(s).get(self.sec1) == "pass_fail",
            lambda s: self.sec3 in mine(s),
        ]
        self._current_msg = 0
        self._expected_answer = "done"
        tools = [{"type": "function", "function": dict(name=n, **t)} for n, t in self._tools.items()]
        return "[user] " + self._user_messages[0], {"tools": tools}

    def _lookup(self, student_id, section_id):
        """(student, section id, section) or an error string."""
        student = self._state["students"].get(str(student_id).strip().upper())
        sec_id = str(section_id).strip().upper()
        section = self._state["sections"].get(sec_id)
        if student is None:
            return "Error: no student %s." % student_id
        if section is None:
            return "Error: no section %s." % section_id
        return student, sec_id, section

    def tool_find_student(self, name):
        text = str(name).strip().lower()
        hits = [{"student_id": i, "name": v["name"],
                 "enrolled": {x: self._state["sections"][x]["course"] for x in sorted(v["enrolled"])}}
                for i, v in sorted(self._state["students"].items()) if text and text in v["name"].lower()]
        return json.dumps(hits) if hits else "No student matches %r." % name

    def tool_find_sections(self, course):
        text = str(course).strip().lower()
        code = next((c for c, t in COURSES.items() if text in (c.lower(), t.lower())), None)
        found = [dict(v, section_id=s) for s, v in sorted(self._state["sections"].items()) if v["course"] == code]
        return json.dumps(found) if found else "Error: no course %s this term." % course

    def tool_enroll(self, student_id, section_id):
        found = self._lookup(student_id, section_id)
        if type(found) is str:
            return found
        student, sec_id, section = found
        if any(self._state["sections"][x]["course"] == section["course"] for x in student["enrolled"]):
            return "Error: %s is already enrolled in %s." % (student["name"], section["course"])
        if section["seats_left"] == 0:
            return "Error: section %s is full." % sec_id
        section["seats_left"] -= 1
        student["enrolled"][sec_id] = "letter"
        return "%s enrolled in %s (%s %s)." % (student["name"], sec_id, section["course"], section["days"])

    def tool_drop(self, student_id, section_id):
        found = self._lookup(student_id, section_id)
        if type(found) is str:
            return found
        student, sec_id, section = found
        if sec_id not in student["enrolled"]:
            return "Error: %s is not in section %s." % (student["name"], sec_id)
        del student["enrolled"][sec_id]
        section["seats_left"] += 1
        return "%s dropped from %s." % (student["name"], sec_id)

    def tool_set_grading(self, student_id, section_id, option):
        found = self._lookup(student_id, section_id)
        if type(found) is str:
            return found
        student, sec_id, _ = found
        if sec_id not in student["enrolled"]:
            return "Error: %s is not in section %s." % (student["name"], sec_id)
        if option not in ("letter", "pass_fail"):
            return "Error: option must be letter or pass_fail."
        student["enrolled"][sec_id] = option
        return "%s: %s is now graded %s." % (student["name"], sec_id, option)

    def tool_get_library_hours(self, day):
        return "%s: 8:00-22:00." % day

    def solution(self):
        name = self._state["students"][self.sid]["name"]
        return [call("find_student", name=name),
                call("find_sections", course=COURSES[self.c1]),
                call("enroll", student_id=self.sid, section_id=self.sec1),
                call("drop", student_id=self.sid, section_id=self.old2),
                call("set_grading", student_id=self.sid, section_id=self.sec1, option="pass_fail"),
                call("find_sections", course=COURSES[self.c3]),
                call("enroll", student_id=self.sid, section_id=self.sec3),
                "<answer>done</answer>"]

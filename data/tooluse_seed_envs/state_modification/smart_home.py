# Skill: state_modification. Variant: execute (each instruction names the device and the value).
# A smart-home hub: thermostats per room, dimmable lights, door locks. Distractors: energy report,
# music playback.
import json
import random

ROOMS = ["kitchen", "living room", "bedroom", "office", "hallway", "nursery", "basement"]
DOORS = ["front", "back", "garage", "patio"]


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


class SmartHomeEnv(ToolUseEnv):
    def reset(self, seed=None):
        rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        rooms = rng.sample(ROOMS, 4)
        lights, numbers = {}, rng.sample(range(10, 100), 8)
        for i, n in enumerate(numbers):
            on = i % 2 == 1
            lights["L-%d" % n] = {"room": rooms[i % 4], "on": on, "brightness": rng.randint(20, 100) if on else 0}
        thermostats = {r: rng.randint(16, 24) for r in rooms}
        self.room = rng.choice(rooms)
        self.temp = rng.choice([t for t in range(17, 27) if t != thermostats[self.room]])
        self.light_on = "L-%d" % numbers[rng.choice([0, 2, 4, 6])]  # one that is off
        self.light_off = "L-%d" % numbers[rng.choice([1, 3, 5, 7])]  # one that is on
        self.level = rng.choice(range(10, 101, 5))
        self.door = rng.choice(DOORS)
        locks = {d: rng.random() < 0.5 for d in DOORS}
        locks[self.door] = False
        self._state = {"lights": lights, "thermostats": thermostats, "locked": locks}
        self._tools = {
            "list_devices": spec("Lights and thermostat setting of a room.", ["room"], room=("string", "room name")),
            "set_thermostat": spec("Set a room's thermostat target temperature.", ["room", "celsius"],
                                   room=("string", "room name"), celsius=("number", "target, 10 to 30")),
            "set_light": spec("Switch a light on or off; brightness applies when switching on.", ["light_id", "on"],
                              light_id=("string", "light id, e.g. L-12"), on=("boolean", "true for on"),
                              brightness=("integer", "percent, 1-100")),
            "set_door_lock": spec("Lock or unlock an outside door.", ["door", "locked"],
                                  door=("string", "door name", DOORS), locked=("boolean", "true to lock")),
            "get_energy_usage": spec("Energy used by the house over a period.", ["period"],
                                     period=("string", "day, week or month", ["day", "week", "month"])),
            "play_music": spec("Play a playlist on a room's speaker.", ["room", "playlist"],
                               room=("string", "room name"), playlist=("string", "playlist name")),
        }
        self._user_messages = [
            "Set the %s thermostat to %d degrees." % (self.room, self.temp),
            "Turn on light %s at %d%% brightness." % (self.light_on, self.level),
            "Lock the %s door." % self.door,
            "Turn off light %s." % self.light_off,
        ]
        self._message_criteria = [
            lambda s: abs(s["thermostats"][self.room] - self.temp) < 0.01,
            lambda s: s["lights"][self.light_on]["on"] and s["lights"][self.light_on]["brightness"] == self.level,
            lambda s: s["locked"][self.door],
            lambda s: not s["lights"][self.light_off]["on"],
        ]
        self._current_msg = 0
        self._expected_answer = "done"
        tools = [{"type": "function", "function": dict(name=n, **t)} for n, t in self._tools.items()]
        return "[user] " + self._user_messages[0], {"tools": tools}

    def tool_list_devices(self, room):
        if room not in self._state["thermostats"]:
            return "Error: no room %r. Rooms: %s." % (room, ", ".join(sorted(self._state["thermostats"])))
        lights = {l: {"on": v["on"], "brightness": v["brightness"]}
                  for l, v in sorted(self._state["lights"].items()) if v["room"] == room}
        return json.dumps({"room": room, "thermostat_celsius": self._state["thermostats"][room], "lights": lights})

    def tool_set_thermostat(self, room, celsius):
        if room not in self._state["thermostats"]:
            return "Error: no room %r." % (room,)
        if type(celsius) not in (int, float) or not 10 <= celsius <= 30:
            return "Error: celsius must be a number from 10 to 30."
        self._state["thermostats"][room] = celsius
        return "The %s thermostat is set to %s C." % (room, celsius)

    def tool_set_light(self, light_id, on, brightness=100):
        light = self._state["lights"].get(str(light_id))
        if light is None:
            return "Error: no light %s." % light_id
        if type(on) is not bool:
            return "Error: on must be true or false."
        if on and (type(brightness) is not int or not 1 <= brightness <= 100):
            return "Error: brightness must be an integer from 1 to 100."
        light["on"], light["brightness"] = on, brightness if on else 0
        return "Light %s is %s." % (light_id, "on at %d%%" % brightness if on else "off")

    def tool_set_door_lock(self, door, locked):
        if door not in self._state["locked"] or type(locked) is not bool:
            return "Error: door must be one of %s and locked true or false." % ", ".join(DOORS)
        self._state["locked"][door] = locked
        return "The %s door is %s." % (door, "locked" if locked else "unlocked")

    def tool_get_energy_usage(self, period):
        days = {"day": 1, "week": 7, "month": 30}.get(period)
        return "%.1f kWh" % (days * 11.3) if days else "Error: period must be day, week or month."

    def tool_play_music(self, room, playlist):
        return "Playing %s in the %s." % (playlist, room)

    def solution(self):
        return [call("set_thermostat", room=self.room, celsius=self.temp),
                call("set_light", light_id=self.light_on, on=True, brightness=self.level),
                call("set_door_lock", door=self.door, locked=True),
                call("set_light", light_id=self.light_off, on=False),
                "<answer>done</answer>"]

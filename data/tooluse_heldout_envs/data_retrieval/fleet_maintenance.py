# Skill: data_retrieval. Variant: read-then-write (which vehicle to service is decided by what the
# fleet tools report: the highest odometer at one depot, the oldest last service at another, a plate
# number that must be mapped to a vehicle id).
# A fleet-maintenance API. Distractors: fuel prices, route ETA.
import json
import random

DEPOTS = ["North", "Harbor", "Airport", "Westfield", "Rail Yard"]
MODELS = ["Transit van", "Box truck", "Pickup", "Minibus", "Cargo bike"]
SERVICES = ["oil_change", "tire_rotation", "inspection"]


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


class FleetMaintenanceEnv(ToolUseEnv):
    def __init__(self, max_turns=25):  # reading every vehicle of two depots takes turns
        super().__init__(max_turns=max_turns)

    def reset(self, seed=None):
        rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        depots = rng.sample(DEPOTS, 3)
        ids = ["V%03d" % n for n in rng.sample(range(100, 1000), 12)]
        odos = rng.sample(range(5000, 250000, 37), 12)  # distinct readings
        days = rng.sample(range(1, 360), 12)  # distinct last-service days of 2025
        plates = rng.sample(range(1000), 12)  # distinct plate numbers
        vehicles = {}
        for i, v in enumerate(ids):
            month, day = divmod(days[i] - 1, 30)
            vehicles[v] = {"depot": depots[i % 3], "model": rng.choice(MODELS), "odometer_km": odos[i],
                           "plate": "%s-%03d" % ("".join(rng.choice("ABCDEFGHJKLMNPRSTUVWXYZ") for _ in range(2)), plates[i]),
                           "last_service": "2025-%02d-%02d" % (month + 1, day + 1)}
        at = lambda d: [v for v in ids if vehicles[v]["depot"] == d]
        self.depot1, self.depot2 = depots[0], depots[1]
        self.v1 = max(at(self.depot1), key=lambda v: vehicles[v]["odometer_km"])
        self.v2 = min(at(self.depot2), key=lambda v: vehicles[v]["last_service"])
        self.v3 = rng.choice(at(depots[2]))
        self.dates = ["2026-%02d-%02d" % (rng.randint(1, 12), d) for d in rng.sample(range(1, 29), 3)]
        self._state = {"vehicles": vehicles, "bookings": []}
        self._tools = {
            "list_vehicles": spec("Vehicles based at a depot (ids, plates, models).", ["depot"],
                                  depot=("string", "depot name")),
            "get_vehicle": spec("Odometer reading and last service date of a vehicle.", ["vehicle_id"],
                                vehicle_id=("string", "vehicle id")),
            "schedule_service": spec("Book a workshop service for a vehicle.", ["vehicle_id", "date", "service"],
                                     vehicle_id=("string", "vehicle id"), date=("string", "YYYY-MM-DD"),
                                     service=("string", "service type", SERVICES)),
            "get_fuel_prices": spec("Today's fuel prices near a depot.", ["depot"], depot=("string", "depot name")),
            "get_route_eta": spec("Driving time between two depots.", ["origin", "destination"],
                                  origin=("string", "depot"), destination=("string", "depot")),
        }
        self._user_messages = [
            "Book an oil change on %s for the %s depot vehicle with the highest odometer reading." % (self.dates[0], self.depot1),
            "Book an inspection on %s for the %s depot vehicle whose last service is the oldest." % (self.dates[1], self.depot2),
            "Book a tire rotation on %s for the vehicle with plate %s at the %s depot."
            % (self.dates[2], vehicles[self.v3]["plate"], depots[2]),
        ]
        self._message_criteria = [
            lambda s: [self.v1, self.dates[0], "oil_change"] in s["bookings"],
            lambda s: [self.v2, self.dates[1], "inspection"] in s["bookings"],
            lambda s: [self.v3, self.dates[2], "tire_rotation"] in s["bookings"],
        ]
        self._current_msg = 0
        self._expected_answer = "done"
        tools = [{"type": "function", "function": dict(name=n, **t)} for n, t in self._tools.items()]
        return "[user] " + self._user_messages[0], {"tools": tools}

    def tool_list_vehicles(self, depot):
        found = [{"vehicle_id": v, "plate": x["plate"], "model": x["model"]}
                 for v, x in sorted(self._state["vehicles"].items()) if x["depot"] == str(depot).strip().title()]
        return json.dumps(found) if found else "Error: no depot %s." % depot

    def tool_get_vehicle(self, vehicle_id):
        x = self._state["vehicles"].get(str(vehicle_id).strip().upper())
        if x is None:
            return "Error: no vehicle %s." % vehicle_id
        return json.dumps({"vehicle_id": str(vehicle_id).strip().upper(), "odometer_km": x["odometer_km"],
                           "last_service": x["last_service"], "depot": x["depot"]})

    def tool_schedule_service(self, vehicle_id, date, service):
        vid = str(vehicle_id).strip().upper()
        if vid not in self._state["vehicles"]:
            return "Error: no vehicle %s." % vehicle_id
        if type(date) is not str or len(date) != 10 or date[4] != "-" or date[7] != "-":
            return "Error: date must be YYYY-MM-DD."
        if service not in SERVICES:
            return "Error: service must be one of %s." % ", ".join(SERVICES)
        self._state["bookings"].append([vid, date, service])
        return "Booked %s for %s on %s." % (service, vid, date)

    def tool_get_fuel_prices(self, depot):
        return "Diesel 1.62/l, petrol 1.74/l near %s." % depot

    def tool_get_route_eta(self, origin, destination):
        return "%s to %s: about %d minutes." % (origin, destination, 10 + len(str(origin) + str(destination)) * 2)

    def solution(self):
        vehicles = self._state["vehicles"]
        steps = [call("list_vehicles", depot=self.depot1)]
        steps += [call("get_vehicle", vehicle_id=v) for v in sorted(vehicles) if vehicles[v]["depot"] == self.depot1]
        steps += [call("schedule_service", vehicle_id=self.v1, date=self.dates[0], service="oil_change"),
                  call("list_vehicles", depot=self.depot2)]
        steps += [call("get_vehicle", vehicle_id=v) for v in sorted(vehicles) if vehicles[v]["depot"] == self.depot2]
        return steps + [call("schedule_service", vehicle_id=self.v2, date=self.dates[1], service="inspection"),
                        call("list_vehicles", depot=vehicles[self.v3]["depot"]),
                        call("schedule_service", vehicle_id=self.v3, date=self.dates[2], service="tire_rotation"),
                        "<answer>done</answer>"]

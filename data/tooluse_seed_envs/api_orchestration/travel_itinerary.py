# Skill: api_orchestration. Variant: execute (every instruction names the values to use; the ids
# that one call returns must be passed on to the next call).
# A travel agency API: book a flight, reserve a hotel at its destination, link them with an airport
# transfer, add checked bags. Distractors: weather and currency conversion.
import json
import random

CITIES = ["Lisbon", "Oslo", "Turin", "Krakow", "Porto", "Ghent", "Lyon", "Bergen", "Seville", "Graz"]
NAMES = ["Ana Ruiz", "Tomas Berg", "Mei Chen", "Omar Haddad", "Lena Vogt", "Ravi Iyer", "Sara Costa"]


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


class TravelItineraryEnv(ToolUseEnv):
    def reset(self, seed=None):
        rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        cities = rng.sample(CITIES, 5)
        numbers = rng.sample(range(100, 1000), 6)
        flights = {}
        for i, n in enumerate(numbers):
            origin, dest = rng.sample(cities, 2)
            flights["FL%d" % n] = {"origin": origin, "destination": dest, "price": rng.randint(60, 400)}
        self.fid = "FL%d" % numbers[0]
        self.name = rng.choice(NAMES)
        self.nights = rng.randint(2, 6)
        self.bags = rng.randint(1, 3)
        self.dest = flights[self.fid]["destination"]
        self._state = {"flights": flights, "bookings": {}, "reservations": {}, "transfers": [],
                       "next_id": rng.randint(1000, 8999)}
        self._tools = {
            "search_flights": spec("List flights between two cities.", ["origin", "destination"],
                                   origin=("string", "departure city"), destination=("string", "arrival city")),
            "book_flight": spec("Book a seat on a flight; returns the booking id.", ["flight_id", "passenger"],
                                flight_id=("string", "flight id, e.g. FL123"), passenger=("string", "full name")),
            "reserve_hotel": spec("Reserve a hotel room; returns the reservation id.", ["city", "nights", "guest"],
                                  city=("string", "city of the hotel"), nights=("integer", "number of nights"),
                                  guest=("string", "full name of the guest")),
            "add_transfer": spec("Book an airport transfer from a flight booking's arrival to a hotel reservation.",
                                 ["booking_id", "reservation_id"], booking_id=("string", "flight booking id"),
                                 reservation_id=("string", "hotel reservation id")),
            "add_baggage": spec("Add checked bags to a flight booking.", ["booking_id", "bags"],
                                booking_id=("string", "flight booking id"), bags=("integer", "number of bags, 1-3")),
            "get_weather": spec("Today's weather forecast for a city.", ["city"], city=("string", "city name")),
            "convert_currency": spec("Convert an amount between currencies.", ["amount", "source", "target"],
                                     amount=("number", "amount"), source=("string", "ISO code"),
                                     target=("string", "ISO code")),
        }
        self._user_messages = [
            "Please book flight %s for passenger %s." % (self.fid, self.name),
            "Reserve a hotel in %s for %d nights under the name %s." % (self.dest, self.nights, self.name),
            "Add an airport transfer from that flight booking to that hotel reservation.",
            "Add %d checked bag%s to the flight booking." % (self.bags, "" if self.bags == 1 else "s"),
        ]
        self._message_criteria = [
            lambda s: self._bookings(s) != [],
            lambda s: self._reservations(s) != [],
            lambda s: any(t["booking"] in self._bookings(s) and t["reservation"] in self._reservations(s)
                          for t in s["transfers"]),
            lambda s: any(s["bookings"][b]["bags"] == self.bags for b in self._bookings(s)),
        ]
        self._current_msg = 0
        self._expected_answer = "done"
        tools = [{"type": "function", "function": dict(name=n, **t)} for n, t in self._tools.items()]
        return "[user] " + self._user_messages[0], {"tools": tools}

    def _bookings(self, s):
        """Ids of the bookings of the requested flight for the requested passenger."""
        return [b for b, v in sorted(s["bookings"].items()) if v["flight"] == self.fid and v["passenger"] == self.name]

    def _reservations(self, s):
        """Ids of the hotel reservations matching the request."""
        return [r for r, v in sorted(s["reservations"].items())
                if (v["city"], v["nights"], v["guest"]) == (self.dest, self.nights, self.name)]

    def _new_id(self, prefix):
        self._state["next_id"] += 1
        return "%s-%d" % (prefix, self._state["next_id"])

    def tool_search_flights(self, origin, destination):
        found = ["%s %s->%s %d EUR" % (f, v["origin"], v["destination"], v["price"])
                 for f, v in sorted(self._state["flights"].items())
                 if v["origin"] == str(origin) and v["destination"] == str(destination)]
        return "\n".join(found) if found else "No flights from %s to %s." % (origin, destination)

    def tool_book_flight(self, flight_id, passenger):
        flight = self._state["flights"].get(str(flight_id))
        if flight is None:
            return "Error: no flight %s." % flight_id
        if type(passenger) is not str or not passenger.strip():
            return "Error: passenger must be a full name."
        bid = self._new_id("BK")
        self._state["bookings"][bid] = {"flight": str(flight_id), "passenger": passenger.strip(), "bags": 0}
        return json.dumps({"booking_id": bid, "flight": flight_id, "arrives": flight["destination"]})

    def tool_reserve_hotel(self, city, nights, guest):
        if str(city) not in CITIES:
            return "Error: no hotels known in %s." % city
        if type(nights) is not int or not 1 <= nights <= 30:
            return "Error: nights must be an integer from 1 to 30."
        if type(guest) is not str or not guest.strip():
            return "Error: guest must be a full name."
        rid = self._new_id("HR")
        self._state["reservations"][rid] = {"city": str(city), "nights": nights, "guest": guest.strip()}
        return json.dumps({"reservation_id": rid, "city": city, "nights": nights})

    def tool_add_transfer(self, booking_id, reservation_id):
        b = self._state["bookings"].get(str(booking_id))
        r = self._state["reservations"].get(str(reservation_id))
        if b is None or r is None:
            return "Error: unknown %s." % ("booking %s" % booking_id if b is None else "reservation %s" % reservation_id)
        if self._state["flights"][b["flight"]]["destination"] != r["city"]:
            return "Error: the flight does not arrive in %s." % r["city"]
        self._state["transfers"].append({"booking": str(booking_id), "reservation": str(reservation_id)})
        return "Transfer booked from %s arrival to hotel reservation %s." % (booking_id, reservation_id)

    def tool_add_baggage(self, booking_id, bags):
        b = self._state["bookings"].get(str(booking_id))
        if b is None:
            return "Error: unknown booking %s." % booking_id
        if type(bags) is not int or not 1 <= bags <= 3:
            return "Error: bags must be an integer from 1 to 3."
        b["bags"] = bags
        return "Booking %s now has %d checked bag(s)." % (booking_id, bags)

    def tool_get_weather(self, city):
        return "%s: %d C, %s." % (city, 8 + len(str(city)) % 15, ["sunny", "cloudy", "rain"][len(str(city)) % 3])

    def tool_convert_currency(self, amount, source, target):
        if type(amount) not in (int, float):
            return "Error: amount must be a number."
        return "%.2f %s" % (amount * 1.1, target)

    def solution(self):
        first = self._state["next_id"]
        bid, rid = "BK-%d" % (first + 1), "HR-%d" % (first + 2)
        return [call("book_flight", flight_id=self.fid, passenger=self.name),
                call("reserve_hotel", city=self.dest, nights=self.nights, guest=self.name),
                call("add_transfer", booking_id=bid, reservation_id=rid),
                call("add_baggage", booking_id=bid, bags=self.bags),
                "<answer>done</answer>"]

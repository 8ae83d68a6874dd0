# Skill: tool_selection. Variant: execute (every instruction names the tracks). The tools overlap on
# purpose: a playlist, the play queue and the liked songs are three different places, and the
# instruction's wording decides which tool is right.
# A music-streaming API. Distractors: downloads, lyrics.
import json
import random

WORDS = ["Neon", "Paper", "Velvet", "Echo", "Golden", "Midnight", "Static", "Ocean", "Amber", "Falling"]
THINGS = ["Hearts", "Skyline", "Motel", "Rain", "Season", "Satellite", "Avenue", "Lights", "Parade", "Tides"]
ARTISTS = ["The Vantas", "Mira Sol", "Kite Theory", "Oskar Lund", "Blue Ferns", "Ayo Dele"]
MOODS = ["Sunday Morning", "Focus Mode", "Road Trip", "Rainy Evening", "Gym Mix", "Late Night"]


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


class MusicQueueEnv(ToolUseEnv):
    def reset(self, seed=None):
        rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        ids = ["TR-%04d" % n for n in rng.sample(range(1000, 10000), 8)]
        names = ["%s %s" % (a, b) for a, b in zip(rng.sample(WORDS, 8), rng.sample(THINGS, 8))]
        tracks = {t: {"title": n, "artist": rng.choice(ARTISTS)} for t, n in zip(ids, names)}
        self.t1, self.t2, self.t3, self.t4 = rng.sample(ids, 4)
        self.playlist = rng.choice(MOODS)
        self._state = {"tracks": tracks, "playlists": {}, "queue": [], "liked": [],
                       "next_id": rng.randint(10, 90)}
        self._tools = {
            "search_tracks": spec("Find tracks by title or artist.", ["query"], query=("string", "search words")),
            "create_playlist": spec("Create an empty playlist; returns its id.", ["name"], name=("string", "playlist name")),
            "add_to_playlist": spec("Add a track to a playlist.", ["playlist_id", "track_id"],
                                    playlist_id=("string", "playlist id"), track_id=("string", "track id")),
            "add_to_queue": spec("Queue a track to play right after the current one.", ["track_id"],
                                 track_id=("string", "track id")),
            "like_track": spec("Save a track to the user's liked songs.", ["track_id"], track_id=("string", "track id")),
            "download_track": spec("Download a track for offline listening.", ["track_id"], track_id=("string", "track id")),
            "get_lyrics": spec("Lyrics of a track.", ["track_id"], track_id=("string", "track id")),
        }
        self._user_messages = [
            "Create a playlist called \"%s\"." % self.playlist,
            "Add tracks %s and %s to it." % (self.t1, self.t2),
            "Queue %s to play next." % self.t3,
            "I love %s, add it to my liked songs." % self.t4,
        ]
        self._message_criteria = [
            lambda s: self._playlist(s) is not None,
            lambda s: self._playlist(s) is not None and {self.t1, self.t2} <= set(s["playlists"][self._playlist(s)]["tracks"]),
            lambda s: self.t3 in s["queue"],
            lambda s: self.t4 in s["liked"],
        ]
        self._current_msg = 0
        self._expected_answer = "done"
        tools = [{"type": "function", "function": dict(name=n, **t)} for n, t in self._tools.items()]
        return "[user] " + self._user_messages[0], {"tools": tools}

    def _playlist(self, s):
        return next((p for p, v in sorted(s["playlists"].items()) if v["name"] == self.playlist), None)

    def _track(self, track_id):
        return self._state["tracks"].get(str(track_id).strip().upper())

    def tool_search_tracks(self, query):
        q = str(query).strip().lower()
        hits = [dict(v, track_id=t) for t, v in sorted(self._state["tracks"].items())
                if q and q in (v["title"] + " " + v["artist"]).lower()]
        return json.dumps(hits) if hits else "No tracks match %r." % query

    def tool_create_playlist(self, name):
        if type(name) is not str or not name.strip():
            return "Error: name must be non-empty text."
        self._state["next_id"] += 1
        pid = "PL-%d" % self._state["next_id"]
        self._state["playlists"][pid] = {"name": name.strip(), "tracks": []}
        return json.dumps({"playlist_id": pid, "name": name.strip()})

    def tool_add_to_playlist(self, playlist_id, track_id):
        playlist = self._state["playlists"].get(str(playlist_id))
        if playlist is None:
            return "Error: no playlist %s." % playlist_id
        if self._track(track_id) is None:
            return "Error: no track %s." % track_id
        playlist["tracks"].append(str(track_id).strip().upper())
        return "Added %s to %s." % (self._track(track_id)["title"], playlist["name"])

    def tool_add_to_queue(self, track_id):
        if self._track(track_id) is None:
            return "Error: no track %s." % track_id
        self._state["queue"].insert(0, str(track_id).strip().upper())
        return "%s will play next." % self._track(track_id)["title"]

    def tool_like_track(self, track_id):
        if self._track(track_id) is None:
            return "Error: no track %s." % track_id
        self._state["liked"].append(str(track_id).strip().upper())
        return "Saved %s to liked songs." % self._track(track_id)["title"]

    def tool_download_track(self, track_id):
        return "Error: no track %s." % track_id if self._track(track_id) is None else "Downloaded %s." % track_id

    def tool_get_lyrics(self, track_id):
        return "Error: no track %s." % track_id if self._track(track_id) is None else "(instrumental)"

    def solution(self):
        pid = "PL-%d" % (self._state["next_id"] + 1)
        return [call("create_playlist", name=self.playlist),
                call("add_to_playlist", playlist_id=pid, track_id=self.t1),
                call("add_to_playlist", playlist_id=pid, track_id=self.t2),
                call("add_to_queue", track_id=self.t3),
                call("like_track", track_id=self.t4),
                "<answer>done</answer>"]

#!/usr/bin/env python3
"""A local OpenAI-compatible chat-completions server for the model-client tests (stdlib only).

Usage: fake_openai_server.py PORT_FILE LOG_FILE [API_KEY]

Binds 127.0.0.1 on a free port, writes the port to PORT_FILE, and serves POST /v1/chat/completions.
Every request is appended to LOG_FILE as one JSON line {"t": monotonic seconds, "path", "authorization",
"body"} before it is answered. The behaviour is chosen by the request's "model", "SCENARIO/anything"
(the suffix keeps per-test counters apart; counters are per full model string):

  ok           200, content "reply N" (N = number of messages), usage 120 prompt + 30 completion tokens
  okcost       as ok, plus usage.cost 0.0123
  nousage      200 without a usage block
  retry429-K   the first K requests: 429 with "Retry-After: 1"; then ok
  retry500-K   the first K requests: 500; then ok
  always500    500 every time
  bad400       400 {"error": {"message": "max_tokens is too large"}}
  slow-S       sleeps S seconds, then ok
  malformed    200 with a body that is not JSON
  nochoices    200 {"object": "chat.completion"} (no choices)
  auth         401 echoing the presented key unless "Authorization: Bearer API_KEY"; then ok
  agent        a mini-swe-agent turn: the first turn writes out.txt, the next one submits
"""
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT_FILE, LOG_FILE = sys.argv[1], sys.argv[2]
API_KEY = sys.argv[3] if len(sys.argv) > 3 else ""
LOCK = threading.Lock()
COUNTS = {}


def completion(model, content, usage=True, cost=None):
    body = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
    }
    if usage:
        body["usage"] = {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}
        if cost is not None:
            body["usage"]["cost"] = cost
    return body


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # quiet
        pass

    def send(self, status, payload, headers=None):
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout tests)

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        auth = self.headers.get("Authorization", "")
        with LOCK:
            with open(LOG_FILE, "a") as f:
                f.write(json.dumps({"t": time.monotonic(), "path": self.path, "authorization": auth, "body": body}) + "\n")
            model = body.get("model", "") if isinstance(body, dict) else ""
            COUNTS[model] = COUNTS.get(model, 0) + 1
            n = COUNTS[model]
        if self.path != "/v1/chat/completions" or not isinstance(body, dict):
            return self.send(404, {"error": {"message": "no such route " + self.path}})
        scenario = model.split("/")[0]
        name, _, arg = scenario.partition("-")
        messages = body.get("messages", [])
        ok = completion(model, "reply %d" % len(messages))
        if name == "ok":
            return self.send(200, ok)
        if name == "okcost":
            return self.send(200, completion(model, "reply", cost=0.0123))
        if name == "nousage":
            return self.send(200, completion(model, "reply", usage=False))
        if name == "retry429":
            if n <= int(arg):
                return self.send(429, {"error": {"message": "rate limited, slow down"}}, {"Retry-After": "1"})
            return self.send(200, ok)
        if name == "retry500":
            if n <= int(arg):
                return self.send(500, {"error": {"message": "upstream exploded"}})
            return self.send(200, ok)
        if name == "always500":
            return self.send(500, {"error": {"message": "upstream exploded"}})
        if name == "bad400":
            return self.send(400, {"error": {"message": "max_tokens is too large"}})
        if name == "slow":
            time.sleep(float(arg))
            return self.send(200, ok)
        if name == "malformed":
            return self.send(200, b"{this is not json")
        if name == "nochoices":
            return self.send(200, {"object": "chat.completion"})
        if name == "auth":
            if auth != "Bearer " + API_KEY:
                return self.send(401, {"error": {"message": "Incorrect API key provided: " + auth[len("Bearer "):]}})
            return self.send(200, ok)
        if name == "agent":
            if len(messages) <= 2:
                reply = "THOUGHT: write the file\n\n```bash\necho hello > out.txt\n```"
            else:
                reply = "THOUGHT: done\n\n```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```"
            return self.send(200, completion(model, reply))
        return self.send(400, {"error": {"message": "unknown scenario " + scenario}})


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    with open(PORT_FILE + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    import os
    os.replace(PORT_FILE + ".tmp", PORT_FILE)
    server.serve_forever()


if __name__ == "__main__":
    main()

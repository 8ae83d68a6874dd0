# Skill: error_recovery. Variant: read-then-write (the version to deploy and the replica count are
# decided by what the API reports: a release that fails its health check is refused, so the newest
# healthy one must be found; a scale-up beyond the region quota is refused, so the quota's free
# capacity must be read and used).
# A cloud deployment API. Distractor: billing.
import json
import random

SERVICES = ["checkout", "search", "auth", "thumbnails", "notifier", "reports"]
REGIONS = ["eu-west", "us-east", "ap-south"]


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


class CloudDeployEnv(ToolUseEnv):
    def reset(self, seed=None):
        rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        names = rng.sample(SERVICES, 3)
        services, releases = {}, {}
        for name in names:
            major, minor = rng.randint(1, 4), rng.randint(0, 9)
            versions = ["%d.%d.%d" % (major, minor, p) for p in range(5)]
            healthy = [True, True, True, rng.random() < 0.5, False]
            releases[name] = {"versions": versions, "healthy": healthy}
            services[name] = {"region": rng.choice(REGIONS), "version": versions[1], "previous": versions[0],
                              "replicas": rng.randint(2, 4)}
        self.svc1, self.svc2 = names[0], names[1]
        rel = releases[self.svc1]
        self.target = [v for v, ok in zip(rel["versions"], rel["healthy"]) if ok][-1]
        region = services[self.svc1]["region"]
        used = sum(s["replicas"] for s in services.values() if s["region"] == region)
        self.free = rng.randint(1, 4)
        quota = {r: {"limit": rng.randint(30, 40), "other": rng.randint(0, 10)} for r in REGIONS}
        quota[region]["limit"] = quota[region]["other"] + used + self.free  # "other": instances of other teams
        self.ask = services[self.svc1]["replicas"] + self.free + rng.randint(1, 4)
        self.max_replicas = services[self.svc1]["replicas"] + self.free
        self.back_to = services[self.svc2]["previous"]
        self._state = {"services": services, "releases": releases, "quota": quota}
        self._tools = {
            "get_service": spec("Current version, previous version, replicas and region of a service.", ["service"],
                                service=("string", "service name")),
            "list_releases": spec("Released versions of a service, oldest first.", ["service"],
                                  service=("string", "service name")),
            "deploy": spec("Deploy a version of a service (it must pass its health check).", ["service", "version"],
                           service=("string", "service name"), version=("string", "version, e.g. 1.2.3")),
            "rollback": spec("Return a service to the version it ran before its last deploy.", ["service"],
                             service=("string", "service name")),
            "scale": spec("Set the number of replicas of a service.", ["service", "replicas"],
                          service=("string", "service name"), replicas=("integer", "instances")),
            "get_quota": spec("Instance quota of a region: limit and instances in use.", ["region"],
                              region=("string", "region", REGIONS)),
            "get_billing": spec("Cloud bill of a month.", ["month"], month=("string", "YYYY-MM")),
        }
        self._user_messages = [
            "Upgrade %s to its newest release that passes the health check." % self.svc1,
            "Scale %s to %d replicas; if the region's quota does not allow that many, scale it as high as the quota allows."
            % (self.svc1, self.ask),
            "Roll %s back to the version it ran before its last deploy." % self.svc2,
        ]
        self._message_criteria = [
            lambda s: s["services"][self.svc1]["version"] == self.target,
            lambda s: s["services"][self.svc1]["replicas"] == self.max_replicas,
            lambda s: s["services"][self.svc2]["version"] == self.back_to,
        ]
        self._current_msg = 0
        self._expected_answer = "done"
        tools = [{"type": "function", "function": dict(name=n, **t)} for n, t in self._tools.items()]
        return "[user] " + self._user_messages[0], {"tools": tools}

    def _in_use(self, region):
        return self._state["quota"][region]["other"] + sum(
            s["replicas"] for s in self._state["services"].values() if s["region"] == region)

    def _service(self, service):
        return self._state["services"].get(str(service).strip().lower())

    def tool_get_service(self, service):
        s = self._service(service)
        return json.dumps(dict(s, service=str(service).strip().lower())) if s else "Error: no service %s." % service

    def tool_list_releases(self, service):
        rel = self._state["releases"].get(str(service).strip().lower())
        return json.dumps(rel["versions"]) if rel else "Error: no service %s." % service

    def tool_deploy(self, service, version):
        s, rel = self._service(service), self._state["releases"].get(str(service).strip().lower())
        if s is None:
            return "Error: no service %s." % service
        if str(version) not in rel["versions"]:
            return "Error: %s has no release %s." % (service, version)
        if not rel["healthy"][rel["versions"].index(str(version))]:
            return "Error: %s %s failed its health check; the service stays on %s." % (service, version, s["version"])
        if s["version"] != str(version):
            s["previous"], s["version"] = s["version"], str(version)
        return "%s now runs %s." % (service, version)

    def tool_rollback(self, service):
        s = self._service(service)
        if s is None:
            return "Error: no service %s." % service
        s["version"], s["previous"] = s["previous"], s["version"]
        return "%s rolled back to %s." % (service, s["version"])

    def tool_scale(self, service, replicas):
        s = self._service(service)
        if s is None:
            return "Error: no service %s." % service
        if type(replicas) is not int or not 1 <= replicas <= 100:
            return "Error: replicas must be an integer from 1 to 100."
        region = s["region"]
        free = self._state["quota"][region]["limit"] - self._in_use(region)
        if replicas - s["replicas"] > free:
            return "Error: quota exceeded in %s; check the region's quota." % region
        s["replicas"] = replicas
        return "%s scaled to %d replicas." % (service, replicas)

    def tool_get_quota(self, region):
        if region not in REGIONS:
            return "Error: region must be one of %s." % ", ".join(REGIONS)
        return json.dumps({"region": region, "limit": self._state["quota"][region]["limit"], "in_use": self._in_use(region)})

    def tool_get_billing(self, month):
        return "Bill for %s: 1,284.50 USD." % month

    def solution(self):
        s1 = self._state["services"][self.svc1]
        rel = self._state["releases"][self.svc1]
        steps = [call("list_releases", service=self.svc1)]
        for v in reversed(rel["versions"]):  # newest first until one deploys
            steps.append(call("deploy", service=self.svc1, version=v))
            if v == self.target:
                break
        return steps + [call("scale", service=self.svc1, replicas=self.ask),  # refused: quota
                        call("get_service", service=self.svc1),
                        call("get_quota", region=s1["region"]),
                        call("scale", service=self.svc1, replicas=self.max_replicas),
                        call("rollback", service=self.svc2),
                        "<answer>done</answer>"]

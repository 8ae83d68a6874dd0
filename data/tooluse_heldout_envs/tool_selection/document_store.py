# Skill: tool_selection. Variant: execute (every instruction names the files, folders and people).
# Look-alike tools: copy vs move, commenter vs editor sharing, archive vs delete; the wording of each
# instruction decides which one is right.
# A cloud document store. Distractor: storage quota.
import json
import random

DOCS = ["budget_2026.xlsx", "offsite_agenda.docx", "logo_final.png", "contract_draft.pdf", "roadmap.pptx",
        "interview_notes.md", "sales_q3.csv", "brand_guide.pdf", "onboarding.docx"]
FOLDERS = ["Finance", "Marketing", "Legal", "Shared", "Archive 2025", "Design", "HR"]
PEOPLE = ["lee", "maria", "omar", "priya", "tom", "wen"]
ROLES = ["viewer", "commenter", "editor"]


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


class DocumentStoreEnv(ToolUseEnv):
    def reset(self, seed=None):
        rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        folder_ids = ["FD-%02d" % n for n in rng.sample(range(10, 100), 4)]
        folders = dict(zip(folder_ids, rng.sample(FOLDERS, 4)))
        file_ids = ["F-%04d" % n for n in rng.sample(range(1000, 10000), 6)]
        files = {f: {"name": n, "folder": rng.choice(folder_ids), "archived": False, "shares": {}}
                 for f, n in zip(file_ids, rng.sample(DOCS, 6))}
        self.f1, self.f2, self.f3, self.f4 = file_ids[:4]
        self.origin1 = files[self.f1]["folder"]
        self.dest1 = rng.choice([d for d in folder_ids if d != self.origin1])
        stem, ext = files[self.f2]["name"].rsplit(".", 1)
        self.new_name = "%s_%s.%s" % (stem, rng.choice(["v2", "final", "approved", "old"]), ext)
        self.email = "%s@%s.example" % (rng.choice(PEOPLE), rng.choice(["acme", "globex", "initech"]))
        self._state = {"folders": folders, "files": files, "next_id": rng.randint(100, 900)}
        self._tools = {
            "list_folder": spec("Files in a folder.", ["folder_id"], folder_id=("string", "folder id")),
            "copy_file": spec("Copy a file into a folder (the original stays); returns the copy's id.",
                              ["file_id", "folder_id"], file_id=("string", "file id"), folder_id=("string", "target folder id")),
            "move_file": spec("Move a file to another folder.", ["file_id", "folder_id"],
                              file_id=("string", "file id"), folder_id=("string", "target folder id")),
            "rename_file": spec("Rename a file.", ["file_id", "new_name"], file_id=("string", "file id"),
                                new_name=("string", "new file name with extension")),
            "share_file": spec("Give someone access to a file.", ["file_id", "email", "role"],
                               file_id=("string", "file id"), email=("string", "address"), role=("string", "access", ROLES)),
            "archive_file": spec("Archive a file (hidden from lists, restorable).", ["file_id"], file_id=("string", "file id")),
            "delete_file": spec("Delete a file permanently.", ["file_id"], file_id=("string", "file id")),
            "get_storage_quota": spec("Storage used by the account.", []),
        }
        self._user_messages = [
            "Put a copy of %s (%s) in the %s folder (%s); the original stays where it is."
            % (files[self.f1]["name"], self.f1, folders[self.dest1], self.dest1),
            "Rename %s to %s." % (self.f2, self.new_name),
            "Let %s comment on %s, but not edit it." % (self.email, self.f3),
            "Archive %s. Don't delete it, we may need it later." % self.f4,
        ]
        name1 = files[self.f1]["name"]
        self._message_criteria = [
            lambda s: (self.f1 in s["files"] and s["files"][self.f1]["folder"] == self.origin1
                       and any(f != self.f1 and v["name"] == name1 and v["folder"] == self.dest1 for f, v in s["files"].items())),
            lambda s: self.f2 in s["files"] and s["files"][self.f2]["name"] == self.new_name,
            lambda s: self.f3 in s["files"] and s["files"][self.f3]["shares"].get(self.email) == "commenter",
            lambda s: self.f4 in s["files"] and s["files"][self.f4]["archived"],
        ]
        self._current_msg = 0
        self._expected_answer = "done"
        tools = [{"type": "function", "function": dict(name=n, **t)} for n, t in self._tools.items()]
        return "[user] " + self._user_messages[0], {"tools": tools}

    def _file(self, file_id):
        return self._state["files"].get(str(file_id).strip().upper())

    def tool_list_folder(self, folder_id):
        if str(folder_id) not in self._state["folders"]:
            return "Error: no folder %s." % folder_id
        return json.dumps([{"file_id": f, "name": v["name"]} for f, v in sorted(self._state["files"].items())
                           if v["folder"] == str(folder_id) and not v["archived"]])

    def tool_copy_file(self, file_id, folder_id):
        f = self._file(file_id)
        if f is None or str(folder_id) not in self._state["folders"]:
            return "Error: no %s." % ("file %s" % file_id if f is None else "folder %s" % folder_id)
        self._state["next_id"] += 1
        new = "F-%d" % self._state["next_id"]
        self._state["files"][new] = {"name": f["name"], "folder": str(folder_id), "archived": False, "shares": {}}
        return json.dumps({"file_id": new, "name": f["name"], "folder": str(folder_id)})

    def tool_move_file(self, file_id, folder_id):
        f = self._file(file_id)
        if f is None or str(folder_id) not in self._state["folders"]:
            return "Error: no %s." % ("file %s" % file_id if f is None else "folder %s" % folder_id)
        f["folder"] = str(folder_id)
        return "%s moved to %s." % (f["name"], self._state["folders"][str(folder_id)])

    def tool_rename_file(self, file_id, new_name):
        f = self._file(file_id)
        if f is None:
            return "Error: no file %s." % file_id
        if type(new_name) is not str or "." not in new_name or "/" in new_name:
            return "Error: new_name must be a file name with an extension."
        f["name"] = new_name.strip()
        return "Renamed to %s." % f["name"]

    def tool_share_file(self, file_id, email, role):
        f = self._file(file_id)
        if f is None:
            return "Error: no file %s." % file_id
        if type(email) is not str or "@" not in email:
            return "Error: %r is not an e-mail address." % (email,)
        if role not in ROLES:
            return "Error: role must be one of %s." % ", ".join(ROLES)
        f["shares"][email.strip().lower()] = role
        return "%s can now %s %s." % (email, {"viewer": "view", "commenter": "comment on", "editor": "edit"}[role], f["name"])

    def tool_archive_file(self, file_id):
        f = self._file(file_id)
        if f is None:
            return "Error: no file %s." % file_id
        f["archived"] = True
        return "%s archived." % f["name"]

    def tool_delete_file(self, file_id):
        f = self._file(file_id)
        if f is None:
            return "Error: no file %s." % file_id
        del self._state["files"][str(file_id).strip().upper()]
        return "%s deleted permanently." % f["name"]

    def tool_get_storage_quota(self):
        return "%d of 100 GB used." % (len(self._state["files"]) * 3)

    def solution(self):
        return [call("copy_file", file_id=self.f1, folder_id=self.dest1),
                call("rename_file", file_id=self.f2, new_name=self.new_name),
                call("share_file", file_id=self.f3, email=self.email, role="commenter"),
                call("archive_file", file_id=self.f4),
                "<answer>done</answer>"]

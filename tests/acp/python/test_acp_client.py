"""`claude-context acp` driven by a second, independent client: the Python SDK
(`agent-client-protocol` from PyPI). One turn with a tool and a permission: the model's Bash
command is asked about, allowed once, runs in the workspace; then an Edit through the client's
`fs/write_text_file`, rejected, changes nothing and ends the turn. An image in a prompt reaches
the model as the API's image block, before the text.

CLAUDE_CONTEXT_BIN and FAKE_ANTHROPIC_BIN name the binaries (tests/acp/run sets them).
"""

import asyncio
import json
import os
import shutil
import subprocess
import tempfile
import unittest
import urllib.request

import acp
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    FileSystemCapabilities,
    ImageContentBlock,
    ReadTextFileResponse,
    RequestPermissionResponse,
    TextContentBlock,
    WriteTextFileResponse,
)

BIN = os.environ["CLAUDE_CONTEXT_BIN"]
FAKE = os.environ["FAKE_ANTHROPIC_BIN"]


class Fake:
    """The fake Anthropic API as a program (docs/fake-anthropic.md)."""

    def __init__(self):
        self.proc = subprocess.Popen(
            [FAKE, "--watch-stdin"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        self.base = json.loads(self.proc.stdout.readline())["baseUrl"]

    def call(self, method, route, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            self.base + route, data=data, method=method, headers={"content-type": "application/json"}
        )
        with urllib.request.urlopen(req) as r:
            return json.loads(r.read())

    def queue(self, replies):
        return self.call("POST", "/_fake/replies", replies)

    def requests(self):
        return self.call("GET", "/_fake/requests")

    def close(self):
        self.proc.kill()
        self.proc.wait()
        self.proc.stdin.close()
        self.proc.stdout.close()


class Client:
    """Answers permission prompts by option kind, keeps files it writes in memory."""

    def __init__(self, answers):
        self.answers = list(answers)
        self.asked = []
        self.updates = []
        self.writes = []

    async def request_permission(self, session_id, tool_call, options, **kwargs):
        self.asked.append((tool_call, options))
        kind = self.answers.pop(0)
        option = next(o for o in options if o.kind == kind)
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=option.option_id)
        )

    async def session_update(self, session_id, update, **kwargs):
        self.updates.append(update)

    async def read_text_file(self, session_id, path, line=None, limit=None, **kwargs):
        with open(path, encoding="utf-8") as f:
            return ReadTextFileResponse(content=f.read())

    async def write_text_file(self, session_id, path, content, **kwargs):
        self.writes.append((path, content))
        return WriteTextFileResponse()


class PythonClientTest(unittest.IsolatedAsyncioTestCase):
    async def asyncSetUp(self):
        self.root = os.path.realpath(tempfile.mkdtemp(prefix="cc-acp-py-"))
        self.ws = os.path.join(self.root, "ws")
        os.makedirs(self.ws)
        with open(os.path.join(self.ws, "a.txt"), "w", encoding="utf-8") as f:
            f.write("one\n")
        self.fake = Fake()

    async def asyncTearDown(self):
        self.fake.close()
        shutil.rmtree(self.root, ignore_errors=True)

    async def test_a_turn_with_a_tool_and_a_permission(self):
        a = os.path.join(self.ws, "a.txt")
        self.fake.queue(
            [
                {"toolUses": [{"id": "toolu_sh", "name": "Bash", "input": {"command": "echo ran > ran.txt"}}]},
                {"toolUses": [{"id": "toolu_rd", "name": "Read", "input": {"file_path": a}}]},
                {
                    "toolUses": [
                        {
                            "id": "toolu_ed",
                            "name": "Edit",
                            "input": {"file_path": a, "old_string": "one", "new_string": "two"},
                        }
                    ]
                },
                {"text": "Ran it; left a.txt alone."},
            ]
        )
        env = {
            "PATH": os.environ["PATH"],
            "HOME": os.path.join(self.root, "home"),
            "XDG_STATE_HOME": os.path.join(self.root, "state"),
            "CLAUDE_CONTEXT_AUTO_MEMORY": "0",
            "ANTHROPIC_API_KEY": "sk-ant-api03-test-key-0123456789abcdefghij",
            "ANTHROPIC_BASE_URL": self.fake.base,
        }
        client = Client(["allow_once", "reject_once"])
        async with acp.spawn_agent_process(client, BIN, "acp", "--no-git", env=env, cwd=self.ws) as (conn, _proc):
            init = await conn.initialize(
                protocol_version=acp.PROTOCOL_VERSION,
                client_capabilities=ClientCapabilities(
                    fs=FileSystemCapabilities(read_text_file=True, write_text_file=True)
                ),
            )
            self.assertEqual(init.protocol_version, 1)
            self.assertTrue(init.agent_capabilities.load_session)
            session = await conn.new_session(cwd=self.ws, mcp_servers=[])
            done = await conn.prompt(
                session_id=session.session_id, prompt=[TextContentBlock(type="text", text="run it")]
            )
            self.assertEqual(done.stop_reason, "end_turn")
            # The rejection ended the turn (as Claude Code's does): the model hears of it with
            # the next message.
            self.assertEqual(len(self.fake.requests()), 3)
            done = await conn.prompt(
                session_id=session.session_id, prompt=[TextContentBlock(type="text", text="why?")]
            )
            self.assertEqual(done.stop_reason, "end_turn")

        # Bash asked, with the exact command as its session scope, then ran in the workspace.
        self.assertEqual(len(client.asked), 2)
        call, options = client.asked[0]
        self.assertEqual(call.tool_call_id, "toolu_sh")
        self.assertEqual(
            [o.kind for o in options], ["allow_once", "allow_always", "reject_once"]
        )
        with open(os.path.join(self.ws, "ran.txt"), encoding="utf-8") as f:
            self.assertEqual(f.read(), "ran\n")
        # The rejected Edit: nothing written, through the client or on disk; the model told.
        self.assertEqual(client.asked[1][0].tool_call_id, "toolu_ed")
        self.assertEqual(client.writes, [])
        with open(a, encoding="utf-8") as f:
            self.assertEqual(f.read(), "one\n")
        kinds = [u.session_update for u in client.updates]
        self.assertIn("tool_call", kinds)
        self.assertIn("tool_call_update", kinds)
        requests = self.fake.requests()
        self.assertEqual(len(requests), 4)
        results = requests[3]["body"]["messages"][-2]["content"]
        edit_result = results[0]
        self.assertTrue(edit_result["is_error"])
        self.assertIn("The user doesn't want to proceed with this tool use.", json.dumps(edit_result))
        self.assertEqual(results[1]["text"], "[Request interrupted by user for tool use]\n")

    async def test_an_image_in_a_prompt_reaches_the_model(self):
        png = (
            "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
        )
        self.fake.queue([{"text": "A single pixel."}])
        env = {
            "PATH": os.environ["PATH"],
            "HOME": os.path.join(self.root, "home"),
            "XDG_STATE_HOME": os.path.join(self.root, "state"),
            "CLAUDE_CONTEXT_AUTO_MEMORY": "0",
            "ANTHROPIC_API_KEY": "sk-ant-api03-test-key-0123456789abcdefghij",
            "ANTHROPIC_BASE_URL": self.fake.base,
        }
        client = Client([])
        async with acp.spawn_agent_process(client, BIN, "acp", "--no-git", env=env, cwd=self.ws) as (conn, _proc):
            init = await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            self.assertTrue(init.agent_capabilities.prompt_capabilities.image)
            session = await conn.new_session(cwd=self.ws, mcp_servers=[])
            done = await conn.prompt(
                session_id=session.session_id,
                prompt=[
                    ImageContentBlock(type="image", mime_type="image/png", data=png),
                    TextContentBlock(type="text", text="what is this?"),
                ],
            )
            self.assertEqual(done.stop_reason, "end_turn")
        content = self.fake.requests()[0]["body"]["messages"][-1]["content"]
        at = next(i for i, b in enumerate(content) if b["type"] == "image")
        self.assertEqual(
            content[at], {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}}
        )
        self.assertEqual(content[at + 1]["text"], "what is this?")


if __name__ == "__main__":
    unittest.main()

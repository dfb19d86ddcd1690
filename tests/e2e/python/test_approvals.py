"""A person decides what a script changes: a rule asks, and the official MCP Python SDK's
elicitation callback answers, in both protocol eras (legacy: elicitation/create during the call;
2026-07-28: input_required and a retry with the sealed requestState), over stdio and over the
hosted mode, against a live FastAPI app that counts what it was sent (docs/approvals.md)."""

import json
import urllib.request

import pytest

from mcp import Client
from mcp.types import ElicitResult

from test_hosted import Issuer, client, hosted, http_client, issuer  # noqa: F401 (fixtures)
from test_sdk_fastapi import todo_api  # noqa: F401 (fixture)
from test_toolscript import server, text_of

pytestmark = pytest.mark.anyio

POLICY = """
[[policy]]
name = "new todos need a person"
when = 'effect.method == "POST"'
action = "ask"
"""

# Reads, writes a file, then creates two todos: the first asks, the second too (same rule),
# unless the person approved all like this. A declined call raises an error the script catches.
SCRIPT = """
    local before = #sdk.list_todos_todos_get()
    io.open("note.txt", "w"):write("before the ask"):close()
    local ok1, made = pcall(sdk.create_todo_todos_post, { title = "first" })
    local ok2 = pcall(sdk.create_todo_todos_post, { title = "second" })
    return { before = before, first = ok1 and made.title or tostring(made), second = ok2 }
"""


def todos(url: str) -> list:
    with urllib.request.urlopen(url + "/todos?limit=100", timeout=10) as r:
        return [t["title"] for t in json.load(r)]


def answering(*actions):
    """An elicitation callback that answers with the given actions in turn, and records what
    it was asked."""
    asked = []

    async def callback(context, params):
        asked.append(params.message)
        action = actions[min(len(asked), len(actions)) - 1]
        if action == "all":
            return ElicitResult(action="accept", content={"all": True})
        return ElicitResult(action=action, content={} if action == "accept" else None)

    return callback, asked


def config(tmp_path, todo_api) -> str:
    path = tmp_path / "toolscript.toml"
    path.write_text(f'[apis.todo]\nspec = "{todo_api}/openapi.json"\n' + POLICY)
    return str(path)


@pytest.mark.parametrize(
    "actions, first, second, made, asks",
    [
        (("accept", "accept"), "first", True, ["first", "second"], 2),
        (("all",), "first", True, ["first", "second"], 1),
        (("decline", "accept"), "denied", True, ["second"], 2),
    ],
)
async def test_a_person_answers(tmp_path, todo_api, mode, actions, first, second, made, asks):  # noqa: F811
    params = server(tmp_path, "--config", config(tmp_path, todo_api))
    params.env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    callback, asked = answering(*actions)
    async with Client(params, mode=mode, read_timeout_seconds=60, elicitation_callback=callback) as c:
        res = await c.call_tool("execute_script", {"script": SCRIPT})
    assert not res.is_error, text_of(res)
    sc = res.structured_content
    assert sc["result"]["before"] == 0 and sc["result"]["second"] is second
    assert first in sc["result"]["first"], sc
    assert todos(todo_api) == made
    assert len(asked) == asks
    assert "new todos need a person" in asked[0] and "POST" in asked[0] and "/todos" in asked[0]
    # Each effect once: the file the prefix wrote is written once, whichever way the
    # execution resumed.
    assert (tmp_path / "toolscript-files" / "note.txt").read_text() == "before the ask"
    decisions = [(e.get("function"), e.get("decision"), e.get("rule")) for e in sc["effects"] if e["op"] == "call"]
    assert all(rule == "new todos need a person" for _, _, rule in decisions), decisions


async def test_cancel_stops_the_script(tmp_path, todo_api, mode):  # noqa: F811
    params = server(tmp_path, "--config", config(tmp_path, todo_api))
    params.env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    callback, asked = answering("cancel")
    async with Client(params, mode=mode, read_timeout_seconds=60, elicitation_callback=callback) as c:
        res = await c.call_tool("execute_script", {"script": SCRIPT})
    assert res.is_error
    assert res.structured_content["error"]["kind"] == "approval", text_of(res)
    assert todos(todo_api) == []
    assert len(asked) == 1


async def test_a_client_that_can_ask_no_one(tmp_path, todo_api, mode):  # noqa: F811
    params = server(tmp_path, "--config", config(tmp_path, todo_api))
    params.env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    async with Client(params, mode=mode, read_timeout_seconds=60) as c:
        res = await c.call_tool("execute_script", {"script": SCRIPT})
    assert res.is_error
    sc = res.structured_content
    assert sc["error"]["kind"] == "approval", text_of(res)
    assert "new todos need a person" in sc["error"]["message"] and "dry_run" in sc["error"]["message"]
    assert todos(todo_api) == []


async def test_hosted_both_eras(hosted, issuer, tmp_path, todo_api, mode):  # noqa: F811
    server_ = hosted("--io-dir", "files", "--config", config(tmp_path, todo_api))
    callback, asked = answering("accept")
    async with http_client() as http, client(server_.url, issuer.token("alice"), http, mode, elicitation_callback=callback) as alice:
        res = await alice.call_tool("execute_script", {"script": SCRIPT})
    assert not res.is_error, text_of(res)
    assert todos(todo_api) == ["first", "second"]
    assert len(asked) == 2

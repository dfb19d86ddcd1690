"""Dry run, review, apply: execute_script's dry_run and plan arguments through the official MCP
Python SDK, over stdio and over the hosted mode (a real issuer's tokens, each user's own io
directory), against a live FastAPI app with state (todo_app.py) and real io directories
(docs/effects.md)."""

import json
import urllib.request

import pytest

from mcp import Client

from test_hosted import Issuer, client, hosted, http_client, issuer  # noqa: F401 (fixtures)
from test_sdk_fastapi import todo_api  # noqa: F401 (fixture)
from test_toolscript import PREFIX, server, text_of

pytestmark = pytest.mark.anyio

# Writes a report and creates a todo: one unsafe io effect, one unsafe call.
SCRIPT = """
    local before = #sdk.list_todos_todos_get()
    local f = io.open("reports/weekly.txt", "w")
    f:write("TITLE report\\n")
    f:close()
    local made, resp = sdk.create_todo_todos_post({ title = "TITLE" })
    return { before = before, dry = resp.dry_run == true, title = made.title }
"""


def script(title: str) -> str:
    return SCRIPT.replace("TITLE", title)


def todos(url: str) -> list:
    with urllib.request.urlopen(url + "/todos?limit=100", timeout=10) as r:
        return [t["title"] for t in json.load(r)]


async def review_and_apply(call, files, todo_api):
    """Dry-run the script, check it changed nothing, apply its effects as a plan, check what
    changed; then a divergent script and a shorter one against the same plan."""
    dry = await call({"script": script("weekly"), "dry_run": True})
    assert not dry.is_error, text_of(dry)
    sc = dry.structured_content
    assert sc["result"] == {"before": 0, "dry": True, "title": ""}
    assert [(e["op"], e.get("path") or e.get("function")) for e in sc["effects"]] == [
        ("mkdir", "reports"),
        ("write", "reports/weekly.txt"),
        ("call", "sdk.todo.create_todo_todos_post"),
    ]
    assert sc["effects"][2]["method"] == "POST" and sc["effects"][2]["body"] == {"title": "weekly"}
    assert sc["files_touched"] == [{"name": "reports/weekly.txt", "op": "write", "bytes": 14, "dry_run": True}]
    assert not files().exists() and todos(todo_api) == []
    plan = sc["effects"]

    # Applied: exactly what was reviewed happens.
    applied = await call({"script": script("weekly"), "plan": plan})
    assert not applied.is_error, text_of(applied)
    sc = applied.structured_content
    assert sc["result"] == {"before": 0, "dry": False, "title": "weekly"}
    assert "plan_unused" not in sc
    assert [e["op"] for e in sc["effects"]] == ["mkdir", "write", "call"]
    assert sc["files_touched"] == [{"name": "reports/weekly.txt", "op": "write", "bytes": 14}]
    assert (files() / "reports" / "weekly.txt").read_text() == "weekly report\n"
    assert todos(todo_api) == ["weekly"]

    # Another title: the write differs, and stops the script before the file or the server
    # changes. (The directory exists now: the plan without its mkdir.)
    (files() / "reports" / "weekly.txt").write_text("as it was\n")
    stopped = await call({"script": script("monthly"), "plan": plan[1:]})
    assert stopped.is_error
    sc = stopped.structured_content
    assert sc["error"]["kind"] == "plan"
    assert text_of(stopped).startswith(PREFIX + "the script attempted write reports/weekly.txt (15 bytes, sha256 ")
    assert "the plan's next entry (1 of 2) is write reports/weekly.txt (14 bytes" in sc["error"]["message"]
    assert [e["op"] for e in sc["plan_unused"]] == ["write", "call"]
    assert (files() / "reports" / "weekly.txt").read_text() == "as it was\n"
    assert todos(todo_api) == ["weekly"]

    # The plan's write but another call: the call is never sent.
    stopped = await call({"script": script("weekly").replace('title = "weekly" }', 'title = "other" }'), "plan": plan[1:]})
    assert stopped.is_error and stopped.structured_content["error"]["kind"] == "plan", text_of(stopped)
    assert "attempted call sdk.todo.create_todo_todos_post (POST " in text_of(stopped)
    assert todos(todo_api) == ["weekly"]

    # Less than the plan: it succeeds, and says what was not carried out.
    short = await call({"script": 'io.open("reports/weekly.txt", "w"):write("weekly report\\n"):close() return 1', "plan": plan[1:]})
    assert not short.is_error, text_of(short)
    assert [e["function"] for e in short.structured_content["plan_unused"]] == ["sdk.todo.create_todo_todos_post"]

    # A plan that does not parse is refused before anything runs.
    bad = await call({"script": "return 1", "plan": [{"op": "chmod", "path": "x"}]})
    assert bad.is_error and text_of(bad).startswith('Invalid arguments: argument "plan": the plan\'s entry 1: unknown op "chmod"')


async def test_dry_run_and_plan_over_stdio(tmp_path, todo_api):
    params = server(tmp_path, "--api", f"todo={todo_api}/openapi.json")
    params.env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    async with Client(params, read_timeout_seconds=60) as c:
        tools = (await c.list_tools()).tools
        schema = next(t for t in tools if t.name == "execute_script").input_schema
        assert schema["properties"]["dry_run"]["type"] == "boolean" and schema["properties"]["plan"]["type"] == "array"

        async def call(args):
            return await c.call_tool("execute_script", args)

        await review_and_apply(call, lambda: tmp_path / "toolscript-files", todo_api)


async def test_dry_run_and_plan_hosted(hosted, issuer, tmp_path, todo_api):  # noqa: F811
    server = hosted("--io-dir", "files", "--api", f"todo={todo_api}/openapi.json")

    def alice_files():
        dirs = list((tmp_path / "files").glob("u.alice.*"))
        return dirs[0] if dirs else tmp_path / "files" / "u.alice.none"

    async with http_client() as http, client(server.url, issuer.token("alice"), http, "auto") as alice:

        async def call(args):
            return await alice.call_tool("execute_script", args)

        await review_and_apply(call, alice_files, todo_api)

    # Bob's io directory is his own: a dry run of his sees none of alice's files, and his plan
    # run writes into his directory only.
    async with http_client() as http, client(server.url, issuer.token("bob"), http, "auto") as bob:
        dry = await bob.call_tool("execute_script", {"script": 'io.open("b.txt", "w"):write("b"):close() return io.list()', "dry_run": True})
        assert dry.structured_content["result"] == ["b.txt"], text_of(dry)
        applied = await bob.call_tool(
            "execute_script", {"script": 'io.open("b.txt", "w"):write("b"):close() return io.list()', "plan": dry.structured_content["effects"]}
        )
        assert applied.structured_content["result"] == ["b.txt"], text_of(applied)
    [bob_dir] = (tmp_path / "files").glob("u.bob.*")
    assert (bob_dir / "b.txt").read_text() == "b"
    assert not (alice_files() / "b.txt").exists()

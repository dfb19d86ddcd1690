"""toolscript serve with a live FastAPI app as an sdk API: its OpenAPI 3.1
document loaded by URL, scripts calling it through the official MCP Python
SDK (docs/sdk.md)."""

import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from mcp import Client

from test_toolscript import PREFIX, server, text_of

pytestmark = pytest.mark.anyio


@pytest.fixture
def todo_api():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    app = Path(__file__).with_name("todo_app.py")
    proc = subprocess.Popen([sys.executable, str(app), str(port)])
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(url + "/openapi.json", timeout=1).read()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("the FastAPI app did not start")
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


async def test_fastapi_openapi31_live(tmp_path, todo_api):
    params = server(tmp_path, "--no-io", "--api", f"todo={todo_api}/openapi.json")
    params.env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    async with Client(params, read_timeout_seconds=60) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert "list_apis" in tools
        assert "sdk.create_todo_todos_post(" in tools["execute_script"].description
        # The API has POST and DELETE operations: scripts can write through
        # it, so execute_script is neither read-only nor closed-world, io off
        # or not.
        hints = tools["execute_script"].annotations
        assert (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint, hints.open_world_hint) == (False, True, False, True)
        assert "can create, change or delete data" in tools["execute_script"].description

        script = """
            local made, resp = sdk.create_todo_todos_post({ title = "write tests", priority = "high" })
            local second = sdk.create_todo_todos_post({ title = "ship" })
            local all = sdk.list_todos_todos_get({ limit = 5 })
            local one = sdk.get_todo_todos_todo_id_get({ todo_id = made.id })
            local ok, err = pcall(sdk.get_todo_todos_todo_id_get, { todo_id = 99 })
            local _, deleted = sdk.delete_todo_todos_todo_id_delete({ todo_id = second.id })
            local left = sdk.list_todos_todos_get()
            return {
                status = resp.status, id = made.id, priority = made.priority, note = made.note == json.null,
                count = #all, title = one.title, missing = { ok, err.status, err.body.detail },
                deleted = deleted.status, left = #left,
            }
        """
        result = await client.call_tool("execute_script", {"script": script})
        assert not result.is_error, text_of(result)
        assert result.structured_content["result"] == {
            "status": 201, "id": 1, "priority": "high", "note": True,
            "count": 2, "title": "write tests", "missing": [False, 404, "no todo 99"],
            "deleted": 204, "left": 1,
        }

        # Checked against the 3.1 document before any request: an enum and a type.
        bad = await client.call_tool("execute_script", {"script": 'sdk.create_todo_todos_post({ title = "x", priority = "urgent" })'})
        assert bad.is_error
        assert text_of(bad).startswith(PREFIX + "script:1: sdk.todo.create_todo_todos_post: body.priority")
        bad = await client.call_tool("execute_script", {"script": 'sdk.list_todos_todos_get({ limit = "many" })'})
        assert bad.is_error and "parameter 'limit'" in text_of(bad)

"""Discovery that fits a model's context, through the official MCP Python
SDK: toolscript serve with GitHub's REST API (1,223 operations, from the npm
package @octokit/openapi in tests/sdk) and the reference server-memory
(tests/mcp-upstreams) behind it (docs/sdk.md, "Documentation for models
and people")."""

import json
import re
from pathlib import Path

import pytest

from mcp import Client

from test_toolscript import server, text_of

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[3]
GITHUB_SPEC = ROOT / "tests/sdk/node_modules/@octokit/openapi/generated/api.github.com.json"
MEMORY = ROOT / "tests/mcp-upstreams/node_modules/@modelcontextprotocol/server-memory/dist/index.js"
MAX_ANSWER = 25_000
CURSOR = re.compile(r'cursor "([A-Za-z0-9_-]+)"\s*$')


@pytest.fixture
def discovery(tmp_path):
    for need in (GITHUB_SPEC, MEMORY):
        if not need.exists():
            pytest.fail(f"{need} is missing: npm ci --prefix tests/sdk and --prefix tests/mcp-upstreams")
    (tmp_path / "toolscript.toml").write_text(
        f"[apis.gh]\nspec = {json.dumps(str(GITHUB_SPEC))}\n\n"
        f"[mcp_servers.memory]\ncommand = \"node\"\nargs = [{json.dumps(str(MEMORY))}]\n"
        f"env = {{ MEMORY_FILE_PATH = {json.dumps(str(tmp_path / 'memory.jsonl'))} }}\n"
    )
    params = server(tmp_path, "--no-io")
    params.env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    return params


async def call(client, name, args):
    result = await client.call_tool(name, args)
    text = text_of(result)
    assert len(text) <= MAX_ANSWER, f"{name} {args}: {len(text)} characters"
    return result.is_error, text


async def test_paging_reaches_every_function_once(discovery):
    async with Client(discovery, read_timeout_seconds=120) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        for name in ("list_apis", "list_functions", "search_docs"):
            assert {"limit", "cursor"} <= set(tools[name].input_schema["properties"]), name

        error, apis = await call(client, "list_apis", {})
        assert not error and "sdk.gh (OpenAPI, 1223 functions" in apis and "base URL https://api.github.com" in apis

        seen, cursor, pages = [], None, 0
        while True:
            args = {"api": "gh", "limit": 10**9}
            if cursor:
                args["cursor"] = cursor
            error, text = await call(client, "list_functions", args)
            assert not error, text
            lines = text.rstrip("\n").split("\n")
            assert re.search(r"\d+-\d+ of 1223", lines[0]), lines[0]
            match = CURSOR.search(lines[-1])
            body = lines[1:-1] if match else lines[1:]
            seen += [line[: line.index("(")] for line in body]
            pages += 1
            if not match:
                break
            cursor = match.group(1)
        assert len(seen) == 1223 and len(set(seen)) == 1223, (len(seen), len(set(seen)))
        assert pages > 1

        resource = await client.read_resource("sdk://gh/schemas")
        text = resource.contents[0].text
        assert len(text) <= MAX_ANSWER and "Schemas of sdk.gh 1-" in text


async def test_search_by_meaning_and_bad_input(discovery):
    async with Client(discovery, read_timeout_seconds=120) as client:
        error, text = await call(client, "search_docs", {"query": "remember a fact about a person", "limit": 3})
        assert not error
        assert "sdk.memory.create_entities(" in text or "sdk.memory.add_observations(" in text, text

        error, text = await call(client, "search_docs", {"query": "parse a JSON string", "limit": 3})
        assert not error and "json.decode(text: string): any" in text, text
        error, text = await call(client, "get_function_docs", {"name": "json.decode"})
        assert not error and "json.decode" in text

        error, text = await call(client, "list_functions", {"cursor": "not-a-cursor!"})
        assert error and "invalid cursor" in text, text
        error, text = await call(client, "search_docs", {"query": "issue " * 20_000})
        assert error and "more than 1000" in text, text
        error, text = await call(client, "list_functions", {"limit": 0})
        assert error and "at least 1" in text, text


async def test_check_script_and_check_argument(discovery):
    """check_script names a response field GitHub's issue does not have and
    finds nothing in a correct script; execute_script with check: true
    refuses the planted script (kind type) before it runs."""
    planted = 'local issue = sdk.gh.issues_get({owner = "o", repo = "r", issue_number = 1})\nreturn issue.comment_count\n'
    correct = 'local issue = sdk.gh.issues_get({owner = "o", repo = "r", issue_number = 1})\nreturn issue.title\n'
    async with Client(discovery, read_timeout_seconds=120) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert tools["check_script"].annotations.read_only_hint is True
        assert "check" in tools["execute_script"].input_schema["properties"]

        result = await client.call_tool("check_script", {"script": planted})
        assert not result.is_error and len(text_of(result)) <= MAX_ANSWER
        found = result.structured_content
        assert found["errors"] >= 1, found
        assert any(d["line"] == 2 and d["rule"] == "type" and "comment_count" in d["message"] for d in found["diagnostics"]), found

        result = await client.call_tool("check_script", {"script": correct})
        assert result.structured_content["errors"] == 0 and result.structured_content["warnings"] == 0, text_of(result)

        result = await client.call_tool("execute_script", {"script": planted, "check": True})
        assert result.is_error and result.structured_content["error"]["kind"] == "type", text_of(result)
        assert "comment_count" in result.structured_content["error"]["message"]

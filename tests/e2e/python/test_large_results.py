"""End-to-end tests of results larger than max_inline_result with the official MCP Python SDK.

A result whose JSON text is over `[server] max_inline_result` (25,000 characters by default) is
kept for its user and answered with a resource_link and a short summary; the client reads it
back whole with resources/read. In the hosted mode only the user whose call made it can read it.
"""

import json

import pytest

from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import ResourceLink, TextContent

from test_hosted import client, hosted, http_client, issuer  # noqa: F401 (fixtures)
from test_toolscript import server

pytestmark = pytest.mark.anyio

# The example: 200,000 characters, eight times the default bound.
LARGE = 'local rows = {} for i = 1, 2000 do rows[i] = {id = i, name = string.rep("n", 80)} end return rows'


def linked(result):
    """The resource_link of a tool result, and its text contents joined."""
    links = [c for c in result.content if isinstance(c, ResourceLink)]
    texts = "\n".join(c.text for c in result.content if isinstance(c, TextContent))
    assert len(links) == 1, result.content
    return links[0], texts


async def check_large_result(c):
    result = await c.call_tool("execute_script", {"script": 'print("made") ' + LARGE})
    assert not result.is_error
    link, texts = linked(result)
    structured = result.structured_content
    assert structured["result"] is None
    assert structured["logs"] == ["made"] and structured["files_touched"] == []
    assert structured["result_resource"]["uri"] == str(link.uri)
    assert str(link.uri).startswith("toolscript://results/")
    assert link.mime_type == "application/json"
    # The summary: the size, the shape, the first lines; far less than the result.
    assert "an array of 2000 elements" in texts and '"id": 1,' in texts
    assert len(texts) < 25_000

    read = await c.read_resource(str(link.uri), cache_mode="bypass")
    whole = json.loads(read.contents[0].text)
    assert len(read.contents[0].text) == structured["result_resource"]["bytes"] > 200_000
    assert whole["logs"] == ["made"]
    assert len(whole["result"]) == 2000 and whole["result"][1999] == {"id": 2000, "name": "n" * 80}
    return str(link.uri)


async def test_large_result_over_stdio(tmp_path, mode):
    async with Client(server(tmp_path), mode=mode, read_timeout_seconds=30) as c:
        await check_large_result(c)
        small = await c.call_tool("execute_script", {"script": "return 6 * 7"})
        assert small.structured_content["result"] == 42
        assert "result_resource" not in small.structured_content
        assert not [x for x in small.content if isinstance(x, ResourceLink)]
        with pytest.raises(MCPError, match="Resource not found"):
            await c.read_resource("toolscript://results/" + "0" * 32, cache_mode="bypass")


async def test_large_result_bound_is_configurable(tmp_path, mode):
    (tmp_path / "toolscript.toml").write_text("[server]\nmax_inline_result = 100\n")
    async with Client(server(tmp_path), mode=mode, read_timeout_seconds=30) as c:
        result = await c.call_tool("execute_script", {"script": 'return string.rep("x", 100)'})
        link, _ = linked(result)
        read = await c.read_resource(str(link.uri), cache_mode="bypass")
        assert json.loads(read.contents[0].text)["result"] == "x" * 100


async def test_large_result_hosted_is_its_users_alone(hosted, issuer, mode):
    srv = hosted()
    async with http_client() as http_a, http_client() as http_b:
        async with client(srv.url, issuer.token("alice"), http_a, mode) as alice, client(
            srv.url, issuer.token("bob"), http_b, mode
        ) as bob:
            uri = await check_large_result(alice)
            with pytest.raises(MCPError) as bobs:
                await bob.read_resource(uri, cache_mode="bypass")
            guessed = "toolscript://results/" + "0" * 32
            with pytest.raises(MCPError) as guess:
                await bob.read_resource(guessed, cache_mode="bypass")
            # Bob learns nothing from alice's URI that a guessed one does not tell.
            assert str(bobs.value).replace(uri, "URI") == str(guess.value).replace(guessed, "URI")
            assert "Resource not found" in str(bobs.value)

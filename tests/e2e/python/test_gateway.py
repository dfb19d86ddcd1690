"""The gateway, end to end with the official MCP Python SDK as the client and
server-everything (tests/mcp-upstreams) as the upstream: its progress reaches
the client, and its sampling requests are answered by the client, in both
protocol eras (legacy: sampling/createMessage during the call; 2026-07-28:
input_required, and the retry with the answer)."""

import shutil
from pathlib import Path

import pytest

from mcp import Client, types

from test_toolscript import server
from toolscript_e2e import ProgressLog

pytestmark = pytest.mark.anyio

EVERYTHING = (Path(__file__).resolve().parents[2] / "mcp-upstreams" / "node_modules" / "@modelcontextprotocol"
              / "server-everything" / "dist" / "index.js")


@pytest.fixture
def everything() -> str:
    node = shutil.which("node")
    if not node or not EVERYTHING.exists():
        pytest.skip("server-everything is not installed (npm ci --prefix tests/mcp-upstreams)")
    return f"--mcp=ev={node} {EVERYTHING} stdio"


async def test_upstream_progress(tmp_path, everything):
    log = ProgressLog()
    script = "return sdk.ev.trigger_long_running_operation({ duration = 0.4, steps = 4 })"
    async with Client(server(tmp_path, "--no-io", everything), mode="legacy", read_timeout_seconds=60) as client:
        result = await client.call_tool("execute_script", {"script": script}, progress_callback=log)
        assert not result.is_error, result
        log.check_increasing()
        assert log.seen[-1][2] == "sdk.ev.trigger_long_running_operation: 4/4"


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_upstream_sampling(tmp_path, everything, mode):
    asked = []

    async def sample(context, params: types.CreateMessageRequestParams):
        asked.append(params)
        return types.CreateMessageResult(role="assistant", model="e2e-model",
                                         content=types.TextContent(type="text", text="sampled by the Python SDK"))

    script = 'return sdk.ev.trigger_sampling_request({ prompt = "hi" })'
    async with Client(server(tmp_path, "--no-io", everything), mode=mode, read_timeout_seconds=60,
                      sampling_callback=sample) as client:
        result = await client.call_tool("execute_script", {"script": script})
        assert not result.is_error, result
        assert "sampled by the Python SDK" in result.structured_content["result"]
        assert len(asked) == 1


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_upstream_sampling_without_the_capability(tmp_path, everything, mode):
    script = 'local ok, err = pcall(sdk.ev.trigger_sampling_request, { prompt = "hi" }) return tostring(err)'
    async with Client(server(tmp_path, "--no-io", everything), mode=mode, read_timeout_seconds=60) as client:
        result = await client.call_tool("execute_script", {"script": script})
        assert "the client of this call does not support sampling" in result.structured_content["result"]


PYSERVER = Path(__file__).resolve().parents[2] / "mcp-upstreams" / "pyserver.py"


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_upstream_input_required_carried_through(tmp_path, mode):
    """pyserver's sample_first asks its client's LLM through the Python SDK's resolvers (under
    2026-07-28 an input_required result of its own, which toolscript's upstream client fulfils);
    toolscript carries the request to its own client, in either era, and the answer back."""
    python = Path(__file__).resolve().parents[2] / "mcp-upstreams" / ".venv" / "bin" / "python"
    if not python.exists():
        pytest.skip("the Python MCP server's venv is not installed (tests/mcp-upstreams/.venv)")
    asked = []

    async def sample(context, params: types.CreateMessageRequestParams):
        asked.append(params.messages[0].content.text)
        return types.CreateMessageResult(role="assistant", model="e2e-model",
                                         content=types.TextContent(type="text", text="forty-two"))

    script = 'return sdk.py.sample_first({ prompt = "the answer?" })'
    params = server(tmp_path, "--no-io", f"--mcp=py={python} {PYSERVER}")
    async with Client(params, mode=mode, read_timeout_seconds=60, sampling_callback=sample) as client:
        result = await client.call_tool("execute_script", {"script": script})
        assert not result.is_error, result
        assert "the LLM said: forty-two" in str(result.structured_content["result"])
        assert asked == ["the answer?"]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_upstream_elicitation_and_roots(tmp_path, everything, mode):
    """server-everything's elicitation and roots requests reach the client in either era (legacy:
    elicitation/create and roots/list during the call; 2026-07-28: input_required, and the retry
    with the answer), and the upstream's result carries the client's answer."""
    asked = []

    async def elicit(context, params):
        asked.append("elicitation")
        return types.ElicitResult(action="accept", content={"name": "Ada Lovelace"})

    async def roots(context):
        asked.append("roots")
        return types.ListRootsResult(roots=[types.Root(uri="file:///srv/e2e-root", name="e2e root")])

    async with Client(server(tmp_path, "--no-io", everything), mode=mode, read_timeout_seconds=60,
                      elicitation_callback=elicit, list_roots_callback=roots) as client:
        result = await client.call_tool("execute_script", {"script": "return sdk.ev.trigger_elicitation_request()"})
        assert not result.is_error, result
        assert "Ada Lovelace" in str(result.structured_content["result"]), result.structured_content
        result = await client.call_tool("execute_script", {"script": "return sdk.ev.get_roots_list()"})
        assert not result.is_error, result
        assert "file:///srv/e2e-root" in str(result.structured_content["result"]), result.structured_content
    assert asked.count("elicitation") == 1 and asked.count("roots") >= 1, asked

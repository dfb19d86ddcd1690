"""End-to-end tests of `toolscript serve` with the official MCP Python SDK.

The binary is TOOLSCRIPT_BIN (default: toolscript on PATH). Each test starts
the server in a fresh directory, so that its io directory starts empty.
"""

import json
from pathlib import Path

import pytest

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from toolscript_e2e import ProgressLog, binary, progress_script

PREFIX = "Script execution error: "

pytestmark = pytest.mark.anyio


def server(cwd: Path, *args: str) -> StdioServerParameters:
    return StdioServerParameters(command=binary(), args=["serve", *args], cwd=str(cwd), env={"TOOLSCRIPT_IO_DIR": ""})


def text_of(result, index=0) -> str:
    return result.content[index].text


async def test_handshake_and_tools(tmp_path, mode):
    async with Client(server(tmp_path), mode=mode, read_timeout_seconds=30) as client:
        assert client.protocol_version == ("2026-07-28" if mode == "auto" else "2025-11-25")
        assert client.server_info is not None and client.server_info.name == "toolscript"
        assert "execute_script" in (client.instructions or "")

        tools = (await client.list_tools()).tools
        assert [t.name for t in tools] == ["execute_script"]
        tool = tools[0]
        assert tool.input_schema["required"] == ["script"]
        assert tool.output_schema["required"] == ["result", "logs", "files_touched"]
        assert tool.annotations.read_only_hint is False
        assert tool.annotations.idempotent_hint is False
        assert tool.annotations.open_world_hint is False
        assert "io.open(path, mode?)" in tool.description and "progress(" in tool.description


async def test_execute_with_io(tmp_path, mode):
    files = tmp_path / "toolscript-files"
    files.mkdir()
    (files / "numbers.txt").write_text("3\n4\n5\n")
    script = """
        local sum = 0
        for line in io.lines("numbers.txt") do sum += tonumber(line) end
        local out = io.open("out/sum.json", "w")
        out:write(json.encode({sum = sum}))
        out:close()
        print("summed", sum)
        return {sum = sum, files = io.list()}
    """
    async with Client(server(tmp_path), mode=mode, read_timeout_seconds=30) as client:
        result = await client.call_tool("execute_script", {"script": script})
        assert not result.is_error
        sc = result.structured_content
        assert sc["result"] == {"sum": 12, "files": ["numbers.txt", "out"]}
        assert sc["logs"] == ["summed\t12"]
        assert sc["files_touched"] == [{"name": "out/sum.json", "op": "write", "bytes": 10}]
        assert json.loads(text_of(result)) == sc
        assert json.loads((files / "out" / "sum.json").read_text()) == {"sum": 12}

        # The next call sees the file, and can remove it.
        result = await client.call_tool(
            "execute_script", {"script": 'local f = io.open("out/sum.json") local s = f:read("a") f:close() os.remove("out/sum.json") return s'}
        )
        assert result.structured_content["result"] == '{"sum":12}'
        assert result.structured_content["files_touched"] == [{"name": "out/sum.json", "op": "remove"}]
        assert not (files / "out" / "sum.json").exists()


async def test_failure_keeps_logs_and_files(tmp_path, mode):
    async with Client(server(tmp_path), mode=mode, read_timeout_seconds=30) as client:
        result = await client.call_tool(
            "execute_script", {"script": 'print("started")\nio.open("partial.txt", "w"):write("abc"):close()\nerror("boom")'}
        )
        assert result.is_error
        assert text_of(result) == PREFIX + "script:3: boom"
        sc = result.structured_content
        assert sc["result"] is None
        assert sc["logs"] == ["started"]
        assert sc["files_touched"] == [{"name": "partial.txt", "op": "write", "bytes": 3}]
        assert sc["error"] == {"kind": "runtime", "message": "script:3: boom", "line": 3}

        result = await client.call_tool("execute_script", {"script": 'io.open("../outside.txt", "w")'})
        assert result.is_error and "../outside.txt" in text_of(result)
        assert not (tmp_path / "outside.txt").exists()

        result = await client.call_tool("execute_script", {"script": "while true do end", "timeout_ms": 200})
        assert result.is_error and result.structured_content["error"]["kind"] == "timeout"


async def test_resources(tmp_path, mode):
    async with Client(server(tmp_path), mode=mode, read_timeout_seconds=30) as client:
        resources = (await client.list_resources()).resources
        names = sorted(r.name for r in resources)
        assert names == sorted(["luau", "print", "json.encode", "json.decode", "progress", "parallel", "io.open", "io.lines", "io.list", "io.type", "os.remove",
                                "io.stat", "io.glob", "io.grep", "io.edit", "os.rename"])
        doc = await client.read_resource("toolscript://docs/io.open")
        assert "io.open(path: string, mode: string?): File" in doc.contents[0].text


async def test_no_io(tmp_path, mode):
    async with Client(server(tmp_path, "--no-io"), mode=mode, read_timeout_seconds=30) as client:
        tool = (await client.list_tools()).tools[0]
        assert tool.annotations.read_only_hint is True and "io.open" not in tool.description
        names = {r.name for r in (await client.list_resources()).resources}
        assert "io.open" not in names and "json.encode" in names
        result = await client.call_tool("execute_script", {"script": "return io == nil"})
        assert result.structured_content["result"] is True


async def test_progress(tmp_path, mode):
    log = ProgressLog()
    async with Client(server(tmp_path), mode=mode, read_timeout_seconds=30) as client:
        result = await client.call_tool("execute_script", {"script": progress_script(300)}, progress_callback=log)
        assert result.structured_content["result"] == "done"
        log.check_increasing()
        assert log.seen[-1] == (300, 300, "row 300")
        assert len(log.seen) <= 10, f"{len(log.seen)} notifications: not rate-limited"


async def test_invalid_arguments(tmp_path, mode):
    async with Client(server(tmp_path, "--max-script-bytes", "100"), mode=mode, read_timeout_seconds=30) as client:
        result = await client.call_tool("execute_script", {"timeout_ms": 5})
        assert result.is_error and "missing required argument" in text_of(result)
        result = await client.call_tool("execute_script", {"script": "x" * 200})
        assert result.is_error and text_of(result).startswith(PREFIX)
        assert result.structured_content["error"]["kind"] == "limit"
        # Still serving.
        result = await client.call_tool("execute_script", {"script": "return 1"})
        assert result.structured_content["result"] == 1


async def test_deepest_result_round_trips(tmp_path, mode):
    """The deepest result toolscript accepts (128 levels) parses in the SDK; one level more is refused."""
    script = "local t = {} for i = 2, %d do t = {t} end return t"
    async with Client(server(tmp_path, "--no-io"), mode=mode, read_timeout_seconds=30) as client:
        result = await client.call_tool("execute_script", {"script": script % 128})
        assert not result.is_error
        value, depth = result.structured_content["result"], 1
        while value:
            value, depth = value[0], depth + 1
        assert depth == 128
        assert json.loads(text_of(result)) == result.structured_content

        result = await client.call_tool("execute_script", {"script": script % 129})
        assert result.is_error
        assert "nested too deeply" in result.structured_content["error"]["message"]

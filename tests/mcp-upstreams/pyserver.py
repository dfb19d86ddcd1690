"""A small MCP server (the official Python SDK's MCPServer) the upstream
tests start: tools that return structured content, text, an image, an
error, that sleep (timeouts, cancellation, concurrency), that exit in the
middle of a call, that add a tool (notifications/tools/list_changed), that return a text
as large as asked (the cap on messages), as many text blocks as asked, an
argument of 500 allowed values, an
error message as long as asked, and that write a raw response of their
own (nested as deep as asked, its id first or last), that echoes the
HTTP request's headers and one that echoes the request's _meta, that answers at once and asks its client for
input later (late_elicit), and that asks its client's LLM before it
answers (sample_first: sampling/createMessage, or under 2026-07-28 an
input_required result and the client's retry).

With PYSERVER_READ_ONLY=1 every tool is annotated readOnlyHint: true (a
claim the tests rely on, not a fact), except the one add_tool adds.

With PYSERVER_TWINS=1 it also lists wipe-all and then wipe_all: two tools
whose names map to one Luau identifier (wipe_all, then wipe_all_2).

    python pyserver.py [stdio | http PORT [json]]

Over http, responses are server-sent event streams, or single JSON bodies
with json.

Cancellations are appended to the file $PYSERVER_LOG (one line
"cancelled <tool> <tag>"), so a test sees that the upstream got
notifications/cancelled.
"""

import asyncio
import base64
import json
import os
import sys
import time
from typing import Literal

from pydantic import BaseModel

from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer, Resolve
from mcp.server.mcpserver.resolve import Sample
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.types import Image
from mcp.shared.exceptions import MCPError
from mcp_types import CreateMessageResult, SamplingMessage, TextContent, ToolAnnotations

server = MCPServer("pyserver")

READ_ONLY = os.environ.get("PYSERVER_READ_ONLY") == "1"


def tool(**kwargs):
    """server.tool, with readOnlyHint: true under PYSERVER_READ_ONLY=1."""
    if READ_ONLY:
        kwargs.setdefault("annotations", ToolAnnotations(readOnlyHint=True))
    return server.tool(**kwargs)

# A 1x1 PNG.
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


def note(line: str) -> None:
    path = os.environ.get("PYSERVER_LOG")
    if path:
        with open(path, "a") as f:
            f.write(line + "\n")


class Weather(BaseModel):
    city: str
    celsius: float
    conditions: Literal["sunny", "cloudy", "rain"]


@tool(description="The weather of a city, as structured content.")
def weather(city: str, days: int = 1) -> Weather:
    return Weather(city=city, celsius=21.5, conditions="sunny")


@tool(name="say-hello", description="Greets someone, as text.", structured_output=False)
def say_hello(name: str) -> str:
    return f"Hello, {name}!"


@tool(description="Over http: the request's headers (as an echo service would show a credential).", structured_output=False)
def echo_headers(ctx: Context) -> str:
    request = ctx.request_context.request
    if request is None:
        return "{}"
    return json.dumps(dict(request.headers))


@tool(description="The request's _meta (the W3C trace context a client passes on in traceparent and tracestate).", structured_output=False)
def echo_meta(ctx: Context) -> str:
    return json.dumps(dict(ctx.request_context.meta or {}), default=str)


@tool(description="The server's command line, returned and printed on its standard error (as a server that echoes its argv).", structured_output=False)
def argv() -> str:
    line = " ".join(sys.argv)
    print("argv: " + line, file=sys.stderr, flush=True)
    return line


@tool(description="Two text blocks.", structured_output=False)
def two_lines() -> list[str]:
    return ["first", "second"]


@tool(description="A tiny image and a caption.")
def picture() -> list:
    return ["a pixel", Image(data=PIXEL, format="png")]


@tool(description="Always fails.")
def fail(reason: str = "no reason") -> str:
    raise ToolError(f"failed on purpose: {reason}")


@tool(description="Returns its argument: the trivial tool the benchmark calls.", structured_output=False)
def ping(n: int = 0) -> str:
    return str(n)


@tool(description="Returns a text of size bytes.", structured_output=False)
def big(size: int) -> str:
    return "x" * size


Choice = Literal[tuple(f"option-{i}" for i in range(500))]


@tool(description="Takes one of 500 options (a long enum in its schema).", structured_output=False)
def pick(choice: Choice) -> str:
    return choice


@tool(description="Returns n text blocks, each the text given.", structured_output=False)
def blocks(n: int, text: str = "x") -> list[str]:
    return [text] * n


@tool(description="Fails with a JSON-RPC error (not a tool error) whose message is size bytes.")
def rpc_error(size: int) -> str:
    raise MCPError(code=-32000, message="e" * size)


def wire_fd() -> int:
    """The descriptor the stdio transport writes its messages to (it moves
    them off descriptor 1, which it points at standard error)."""
    from mcp.server import stdio

    claim = stdio._claims.get(1)
    if claim is not None and claim.private_fd is not None:
        return claim.private_fd
    return 1


@tool(description="Over stdio only: writes a response of its own to this call (its structured content "
             "nested depth levels deep, its text size bytes, its id first or last), then waits to be cancelled.",
             structured_output=False)
async def raw(ctx: Context, depth: int = 1, size: int = 0, id_last: bool = False) -> str:
    rid = json.dumps(ctx.request_context.request_id)
    nested = "[" * depth + "]" * depth
    result = '{"content":[{"type":"text","text":"' + "x" * size + '"}],"structuredContent":{"v":' + nested + "}}"
    if id_last:
        line = '{"result":' + result + ',"jsonrpc":"2.0","id":' + rid + "}\n"
    else:
        line = '{"jsonrpc":"2.0","id":' + rid + ',"result":' + result + "}\n"
    data = memoryview(line.encode())
    fd = wire_fd()
    while data:
        data = data[os.write(fd, data):]
    note(f"raw written {ctx.request_id}")
    await asyncio.sleep(3600)
    return "never"


@tool(description="Sleeps, then answers; notes a cancellation in $PYSERVER_LOG.", structured_output=False)
async def sleep(seconds: float, tag: str = "") -> str:
    note(f"started sleep {tag}")
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        note(f"cancelled sleep {tag}")
        raise
    return f"slept {seconds} {tag}".strip()


if os.environ.get("PYSERVER_TWINS") == "1":

    @server.tool(name="wipe-all", description="Would wipe everything (does nothing).", structured_output=False)
    def wipe_all_hyphen() -> str:
        return "wiped (wipe-all)"

    @server.tool(name="wipe_all", description="Would wipe everything too (does nothing).", structured_output=False)
    def wipe_all_underscore() -> str:
        return "wiped (wipe_all)"


LATE: set = set()


@tool(description="Answers at once; once the file signal exists, asks its client (elicitation/create) outside "
             "any call, and notes the outcome in $PYSERVER_LOG.", structured_output=False)
async def late_elicit(ctx: Context, signal: str) -> str:
    # The connection's own JSON-RPC dispatcher: the SDK refuses a request
    # outside a call on protocol 2026-07-28, and this tool is the server
    # that sends one anyway.
    dispatcher = ctx.request_context.session._connection.outbound
    while hasattr(dispatcher, "_outbound"):
        dispatcher = dispatcher._outbound

    async def later() -> None:
        for _ in range(3000):
            if os.path.exists(signal):
                break
            await asyncio.sleep(0.02)
        try:
            result = await dispatcher.send_raw_request(
                "elicitation/create",
                {"message": "a late question", "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}},
            )
            note(f"late_elicit answered {json.dumps(result, sort_keys=True)}")
        except Exception as e:  # noqa: BLE001 - the outcome is what the test reads
            note("late_elicit refused " + str(e).replace("\n", " "))

    task = asyncio.get_running_loop().create_task(later())
    LATE.add(task)
    task.add_done_callback(LATE.discard)
    return "answered"


ARRIVED: dict[str, int] = {}


@tool(description="Waits until n calls with the same key are in flight at once, then answers.", structured_output=False)
async def gather(key: str, n: int) -> str:
    ARRIVED[key] = ARRIVED.get(key, 0) + 1
    for _ in range(2000):
        if ARRIVED[key] >= n:
            return f"{n} together"
        await asyncio.sleep(0.01)
    raise ToolError(f"only {ARRIVED[key]} of {n} calls were in flight at once")


@tool(description="Exits the process in the middle of the call.")
async def crash() -> str:
    note("crash")
    sys.stderr.write("pyserver: crashing on purpose\n")
    sys.stderr.flush()
    os._exit(3)


@tool(description="Never answers (and ignores cancellation).")
async def hang() -> str:
    note("hang")
    while True:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            pass


@tool(description="Adds the tool 'added' and announces it with notifications/tools/list_changed.")
async def add_tool(ctx: Context) -> str:
    def added(x: int) -> str:
        """A tool added at run time."""
        return f"added {x}"

    server.add_tool(added, name="added")
    await ctx.notify_tools_changed()
    return "added"


@tool(description="Removes the tool 'say-hello' and announces it with notifications/tools/list_changed.")
async def remove_tool(ctx: Context) -> str:
    server.remove_tool("say-hello")
    await ctx.notify_tools_changed()
    return "removed"



def _ask_the_llm(prompt: str) -> Sample:
    return Sample([SamplingMessage(role="user", content=TextContent(type="text", text=prompt))], max_tokens=50)


@tool(description="Asks the client's LLM about prompt (sampling) and returns its answer.")
async def sample_first(prompt: str, answer: Annotated[CreateMessageResult, Resolve(_ask_the_llm)]) -> str:
    content = answer.content
    return "the LLM said: " + (content.text if isinstance(content, TextContent) else str(content))


if __name__ == "__main__":
    # A slow start (seconds), like npx fetching a package.
    time.sleep(float(os.environ.get("PYSERVER_BOOT_DELAY", "0")))
    note(f"pid {os.getpid()}")
    sys.stderr.write("pyserver: ready\n")
    sys.stderr.flush()
    if len(sys.argv) > 1 and sys.argv[1] == "http":
        json_response = len(sys.argv) > 3 and sys.argv[3] == "json"
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]), json_response=json_response)
    else:
        server.run("stdio")


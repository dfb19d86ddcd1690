"""End-to-end tests of `toolscript serve --http` (the hosted mode) with the official MCP Python SDK.

The SDK connects over streamable HTTP with a bearer token. The token comes from a minimal OAuth
issuer run here on loopback (discovery document and JWKS, an ES256 key, tokens signed with PyJWT),
which toolscript discovers and trusts through --auth-authority.
"""

import json
import os
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from jwt.algorithms import ECAlgorithm

from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from toolscript_e2e import ProgressLog, binary, progress_script

pytestmark = pytest.mark.anyio

AUDIENCE = "https://toolscript.e2e"


class Issuer:
    """An OAuth 2.0 authorization server reduced to what a resource server reads: its OpenID
    discovery document and its key set. It signs access tokens with a fresh ES256 key."""

    def __init__(self):
        self.key = ec.generate_private_key(ec.SECP256R1())
        jwk = json.loads(ECAlgorithm.to_jwk(self.key.public_key()))
        jwk.update(kid="e2e-es256", use="sig", alg="ES256")
        issuer = self
        documents = {}

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                body = documents.get(self.path)
                if body is None:
                    self.send_error(404)
                    return
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        documents["/.well-known/openid-configuration"] = {
            "issuer": self.url,
            "jwks_uri": self.url + "/jwks",
            "authorization_endpoint": self.url + "/authorize",
            "token_endpoint": self.url + "/token",
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["ES256"],
        }
        documents["/jwks"] = {"keys": [jwk]}
        threading.Thread(target=issuer.server.serve_forever, daemon=True).start()

    def token(self, sub: str, **claims) -> str:
        now = int(time.time())
        payload = {"iss": self.url, "aud": AUDIENCE, "sub": sub, "iat": now, "nbf": now, "exp": now + 3600, **claims}
        return jwt.encode(payload, self.key, algorithm="ES256", headers={"kid": "e2e-es256"})

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def issuer():
    i = Issuer()
    yield i
    i.close()


class HostedServer:
    """`toolscript serve --http 127.0.0.1:0` running; its JSON log lines are collected."""

    def __init__(self, cwd: Path, issuer: Issuer, *args: str):
        self.lines: list[dict] = []
        self.ready = threading.Event()
        self.proc = subprocess.Popen(
            [binary(), "serve", "--http", "127.0.0.1:0", "--auth-authority", issuer.url, "--auth-audience", AUDIENCE, *args],
            cwd=cwd,
            env={**os.environ, "TOOLSCRIPT_IO_DIR": ""},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        threading.Thread(target=self._read, daemon=True).start()
        if not self.ready.wait(60):
            self.proc.kill()
            pytest.fail(f"toolscript serve --http did not get ready: {self.lines}")
        self.url = next(line["url"] for line in self.lines if line.get("msg") == "ready")

    def _read(self):
        for raw in self.proc.stderr:
            try:
                line = json.loads(raw)
            except ValueError:
                line = {"text": raw}
            self.lines.append(line)
            if line.get("msg") == "ready":
                self.ready.set()

    def stop(self) -> int:
        self.proc.terminate()
        return self.proc.wait(30)


@pytest.fixture
def hosted(tmp_path, issuer):
    servers = []

    def start(*args: str) -> HostedServer:
        s = HostedServer(tmp_path, issuer, *args)
        servers.append(s)
        return s

    yield start
    for s in servers:
        assert s.stop() == 0, "toolscript serve --http exits 0 on SIGTERM"


def client(url: str, token: str, http: httpx2.AsyncClient, mode: str, **options) -> Client:
    """The SDK's client over streamable HTTP, sending the token with every request."""
    http.headers["Authorization"] = f"Bearer {token}"
    return Client(streamable_http_client(url, http_client=http), mode=mode, read_timeout_seconds=30, **options)


def http_client() -> httpx2.AsyncClient:
    return httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=300))


async def test_hosted_tools_and_execute(hosted, issuer, mode):
    server = hosted()
    async with http_client() as http, client(server.url, issuer.token("alice"), http, mode) as c:
        assert c.server_info is not None and c.server_info.name == "toolscript"
        tools = (await c.list_tools()).tools
        assert [t.name for t in tools] == ["execute_script"]
        # io is off by default in the hosted mode: the tool changes nothing.
        assert tools[0].annotations.read_only_hint is True
        assert "io.open" not in tools[0].description

        result = await c.call_tool("execute_script", {"script": 'print("hello") return {answer = 6 * 7}'})
        assert not result.is_error
        assert result.structured_content["result"] == {"answer": 42}
        assert result.structured_content["logs"] == ["hello"]

        result = await c.call_tool("execute_script", {"script": 'error("boom")'})
        assert result.is_error and result.structured_content["error"]["kind"] == "runtime"

        doc = await c.read_resource("toolscript://docs/luau")
        assert "Luau" in doc.contents[0].text


async def test_hosted_progress(hosted, issuer, mode):
    server = hosted()
    log = ProgressLog()
    async with http_client() as http, client(server.url, issuer.token("alice"), http, mode) as c:
        result = await c.call_tool("execute_script", {"script": progress_script(200)}, progress_callback=log)
        assert result.structured_content["result"] == "done"
        log.check_increasing()
        assert log.seen[-1] == (200, 200, "row 200"), log.seen


async def test_hosted_users_have_their_own_files(hosted, issuer, tmp_path, mode):
    server = hosted("--io-dir", "files")
    async with http_client() as http_a, http_client() as http_b:
        async with client(server.url, issuer.token("alice"), http_a, mode) as alice, client(
            server.url, issuer.token("bob"), http_b, mode
        ) as bob:
            result = await alice.call_tool(
                "execute_script", {"script": 'local f = io.open("notes.txt", "w") f:write("alice") f:close() return io.list()'}
            )
            assert result.structured_content["result"] == ["notes.txt"]
            result = await bob.call_tool("execute_script", {"script": "return #io.list()"})
            assert result.structured_content["result"] == 0
            result = await bob.call_tool("execute_script", {"script": 'return io.open("notes.txt")'})
            assert result.is_error
    # On disk: one directory per user under files/.
    [user_dir] = (tmp_path / "files").iterdir()
    assert user_dir.name.startswith("u.alice.")
    assert (user_dir / "notes.txt").read_text() == "alice"


async def test_hosted_refuses_requests_without_a_valid_token(hosted, issuer):
    server = hosted()
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}
    async with http_client() as http:
        response = await http.post(server.url, json=body, headers=headers)
        assert response.status_code == 401
        assert "resource_metadata=" in response.headers["www-authenticate"]

        other = Issuer()  # the same claims, signed by a key toolscript does not trust
        try:
            forged = other.token("alice", iss=issuer.url)
        finally:
            other.close()
        response = await http.post(server.url, json=body, headers={**headers, "Authorization": f"Bearer {forged}"})
        assert response.status_code == 401
        assert 'error="invalid_token"' in response.headers["www-authenticate"]

        response = await http.post(server.url, json=body, headers={**headers, "Authorization": f"Bearer {issuer.token('alice', aud='https://elsewhere')}"})
        assert response.status_code == 401

        metadata = (await http.get(server.url.removesuffix("/mcp") + "/.well-known/oauth-protected-resource")).json()
        assert metadata["authorization_servers"] == [issuer.url]

// End-to-end tests of `toolscript serve --http` (the hosted mode) with the
// official MCP TypeScript SDK over streamable HTTP with a bearer token. The
// token comes from a minimal OAuth issuer run here on loopback (an OpenID
// discovery document and a JWKS, an ES256 key; tokens signed with
// node:crypto), which toolscript discovers through --auth-authority.

import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { createServer, type Server } from "node:http";
import { generateKeyPairSync, sign, type KeyObject } from "node:crypto";
import { createInterface } from "node:readline";
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AddressInfo } from "node:net";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema, type CallToolResult } from "@modelcontextprotocol/sdk/types.js";

import { callWithProgress } from "./progress.js";

const binary = process.env.TOOLSCRIPT_BIN || "toolscript";
const AUDIENCE = "https://toolscript.e2e";

interface ExecutionResult {
  result: unknown;
  logs: string[];
  error?: { kind: string; message: string };
}

function b64url(data: Buffer | string): string {
  return Buffer.from(data).toString("base64url");
}

// Issuer is an authorization server reduced to what a resource server
// reads: its discovery document and its key set.
class Issuer {
  url = "";
  private server: Server;
  private key: KeyObject;
  private jwks: object;

  private constructor() {
    const { publicKey, privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
    this.key = privateKey;
    this.jwks = { keys: [{ ...publicKey.export({ format: "jwk" }), kid: "e2e-es256", use: "sig", alg: "ES256" }] };
    this.server = createServer((req, res) => {
      const docs: Record<string, object> = {
        "/.well-known/openid-configuration": {
          issuer: this.url,
          jwks_uri: this.url + "/jwks",
          authorization_endpoint: this.url + "/authorize",
          token_endpoint: this.url + "/token",
          response_types_supported: ["code"],
          subject_types_supported: ["public"],
          id_token_signing_alg_values_supported: ["ES256"],
        },
        "/jwks": this.jwks,
      };
      const doc = docs[req.url ?? ""];
      res.writeHead(doc ? 200 : 404, { "Content-Type": "application/json" });
      res.end(doc ? JSON.stringify(doc) : "{}");
    });
  }

  static async start(): Promise<Issuer> {
    const i = new Issuer();
    await new Promise<void>((resolve) => i.server.listen(0, "127.0.0.1", resolve));
    i.url = `http://127.0.0.1:${(i.server.address() as AddressInfo).port}`;
    return i;
  }

  token(sub: string): string {
    const now = Math.floor(Date.now() / 1000);
    const header = b64url(JSON.stringify({ alg: "ES256", typ: "JWT", kid: "e2e-es256" }));
    const payload = b64url(JSON.stringify({ iss: this.url, aud: AUDIENCE, sub, iat: now, nbf: now, exp: now + 3600 }));
    const signature = sign("sha256", Buffer.from(`${header}.${payload}`), { key: this.key, dsaEncoding: "ieee-p1363" });
    return `${header}.${payload}.${b64url(signature)}`;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

// Hosted is `toolscript serve --http 127.0.0.1:0` running.
class Hosted {
  url = "";
  private constructor(private proc: ChildProcess) {}

  static async start(dir: string, issuer: Issuer, ...args: string[]): Promise<Hosted> {
    const proc = spawn(
      binary,
      ["serve", "--http", "127.0.0.1:0", "--auth-authority", issuer.url, "--auth-audience", AUDIENCE, ...args],
      { cwd: dir, env: { ...process.env, TOOLSCRIPT_IO_DIR: "" }, stdio: ["ignore", "ignore", "pipe"] },
    );
    const h = new Hosted(proc);
    const lines = createInterface({ input: proc.stderr! });
    h.url = await new Promise<string>((resolve, reject) => {
      const seen: string[] = [];
      lines.on("line", (line) => {
        seen.push(line);
        try {
          const m = JSON.parse(line);
          if (m.msg === "ready") resolve(m.url);
        } catch {
          // not JSON: kept for the error
        }
      });
      proc.on("exit", (code) => reject(new Error(`toolscript exited (${code}) before it was ready:\n${seen.join("\n")}`)));
    });
    return h;
  }

  // stop sends SIGTERM and returns the exit code.
  stop(): Promise<number | null> {
    return new Promise((resolve) => {
      this.proc.on("exit", (code) => resolve(code));
      this.proc.kill("SIGTERM");
    });
  }
}

async function connect(url: string, token: string): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name: "toolscript-e2e-ts", version: "1.0.0" });
  client.onerror = (err) => {
    // Closing the client aborts the streams it still reads (the transport's
    // own AbortController): the end of a cancelled call's stream may come
    // after that. Anything else fails.
    if (/AbortError/.test(String(err))) return;
    assert.fail(`client error: ${err}`);
  };
  await client.connect(transport);
  return client;
}

async function run(client: Client, script: string): Promise<ExecutionResult> {
  const res = (await client.callTool({ name: "execute_script", arguments: { script } })) as CallToolResult;
  return res.structuredContent as unknown as ExecutionResult;
}

// withHosted runs body against a fresh issuer and server, and checks that
// the server exits 0 on SIGTERM.
async function withHosted(args: string[], body: (h: Hosted, issuer: Issuer, dir: string) => Promise<void>) {
  const dir = mkdtempSync(join(tmpdir(), "toolscript-e2e-hosted-"));
  const issuer = await Issuer.start();
  const h = await Hosted.start(dir, issuer, ...args);
  try {
    await body(h, issuer, dir);
  } finally {
    assert.equal(await h.stop(), 0, "exit status on SIGTERM");
    await issuer.close();
  }
}

test("hosted: tools, scripts and progress over streamable HTTP with a token", async () => {
  await withHosted([], async (h, issuer) => {
    const client = await connect(h.url, issuer.token("alice"));
    try {
      assert.equal(client.getServerVersion()?.name, "toolscript");
      const { tools } = await client.listTools();
      assert.deepEqual(tools.map((t) => t.name), ["execute_script"]);
      assert.equal(tools[0].annotations?.readOnlyHint, true, "io is off in the hosted mode");

      const out = await run(client, 'print("hi") return {answer = 6 * 7}');
      assert.deepEqual(out.result, { answer: 42 });
      assert.deepEqual(out.logs, ["hi"]);

      const seen = await callWithProgress(client, 200);
      assert.ok(seen.length > 0, "progress notifications");
      assert.equal(seen[seen.length - 1].progress, 200);
    } finally {
      await client.close();
    }
  });
});

test("hosted: a request without a token gets 401", async () => {
  await withHosted([], async (h) => {
    const res = await fetch(h.url, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    assert.equal(res.status, 401);
    assert.match(res.headers.get("www-authenticate") ?? "", /resource_metadata="/);
  });
});

test("hosted: cancelling a call stops its script", async () => {
  await withHosted(["--max-concurrent", "1", "--queue-wait", "20s"], async (h, issuer) => {
    const client = await connect(h.url, issuer.token("alice"));
    try {
      const abort = new AbortController();
      let started!: () => void;
      const running = new Promise<void>((r) => (started = r));
      const pending = client.callTool(
        { name: "execute_script", arguments: { script: "progress(1) while true do end", timeout_ms: 120000 } },
        CallToolResultSchema,
        { signal: abort.signal, onprogress: () => started() },
      );
      await running;
      abort.abort("changed my mind");
      await assert.rejects(pending);
      // The only slot is free again: the script was stopped (else this call
      // would wait for the slot, then fail).
      const out = await run(client, "return 'free'");
      assert.equal(out.result, "free");
    } finally {
      await client.close();
    }
  });
});

test("hosted: users have directories of their own", async () => {
  await withHosted(["--io-dir", "files"], async (h, issuer, dir) => {
    const alice = await connect(h.url, issuer.token("alice"));
    const bob = await connect(h.url, issuer.token("bob"));
    try {
      const out = await run(alice, 'local f = io.open("notes.txt", "w") f:write("alice") f:close() return io.list()');
      assert.deepEqual(out.result, ["notes.txt"]);
      assert.equal((await run(bob, "return #io.list()")).result, 0);
      assert.ok((await run(bob, 'return io.open("notes.txt")')).error, "bob cannot open alice's file");
    } finally {
      await alice.close();
      await bob.close();
    }
    const users = readdirSync(join(dir, "files"));
    assert.equal(users.length, 1);
    assert.match(users[0], /^u\.alice\./);
    assert.equal(readFileSync(join(dir, "files", users[0], "notes.txt"), "utf8"), "alice");
  });
});

// A person decides what a script changes, through the official MCP
// TypeScript SDK: a rule asks before a file is written, and the client's
// elicitation handler answers (elicitation/create during the call).

import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync, existsSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema, type CallToolResult } from "@modelcontextprotocol/sdk/types.js";

const binary = process.env.TOOLSCRIPT_BIN || "toolscript";

const CONFIG = `
[[policy]]
name = "reports need a person"
when = 'effect.kind == "write" && effect.path.startsWith("reports/")'
action = "ask"
`;

const SCRIPT = `
local ok, err = pcall(function()
  io.open("reports/weekly.txt", "w"):write("weekly"):close()
end)
return { ok = ok, err = err and tostring(err) or nil }
`;

async function ask(action: "accept" | "decline" | "cancel"): Promise<{ res: CallToolResult; dir: string; asked: string[] }> {
  const dir = mkdtempSync(join(tmpdir(), "toolscript-e2e-"));
  writeFileSync(join(dir, "toolscript.toml"), CONFIG);
  const transport = new StdioClientTransport({
    command: binary,
    args: ["serve", "--io-dir", "files"],
    cwd: dir,
    env: { ...(process.env as Record<string, string>), TOOLSCRIPT_IO_DIR: "" },
    stderr: "pipe",
  });
  const client = new Client({ name: "toolscript-e2e-ts", version: "1.0.0" }, { capabilities: { elicitation: {} } });
  const asked: string[] = [];
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push(request.params.message);
    return action === "accept" ? { action, content: {} } : { action };
  });
  await client.connect(transport);
  try {
    const res = (await client.callTool({ name: "execute_script", arguments: { script: SCRIPT } })) as CallToolResult;
    return { res, dir, asked };
  } finally {
    await client.close();
  }
}

test("a person approves a write", async () => {
  const { res, dir, asked } = await ask("accept");
  assert.equal(res.isError, undefined, JSON.stringify(res));
  assert.deepEqual((res.structuredContent as { result: unknown }).result, { ok: true });
  assert.equal(readFileSync(join(dir, "files", "reports", "weekly.txt"), "utf8"), "weekly");
  assert.equal(asked.length, 1);
  assert.match(asked[0], /reports need a person/);
  assert.match(asked[0], /reports\/weekly\.txt/);
});

test("a person declines a write: the script gets an error of kind denied and goes on", async () => {
  const { res, dir } = await ask("decline");
  const out = (res.structuredContent as { result: { ok: boolean; err: string } }).result;
  assert.equal(out.ok, false);
  assert.match(out.err, /declined by a person/);
  assert.equal(existsSync(join(dir, "files", "reports", "weekly.txt")), false);
});

test("a person cancels: the script stops with kind approval", async () => {
  const { res, dir } = await ask("cancel");
  assert.equal(res.isError, true);
  assert.equal((res.structuredContent as { error: { kind: string } }).error.kind, "approval");
  assert.equal(existsSync(join(dir, "files", "reports", "weekly.txt")), false);
});

// Progress as both suites drive and watch it: a script that reports it and
// a call that collects what the client is told.

import assert from "node:assert/strict";

import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { CallToolResultSchema, type CallToolResult } from "@modelcontextprotocol/sdk/types.js";

export interface Progress {
  progress: number;
  total?: number;
  message?: string;
}

// callWithProgress runs a script that reports progress n times, a
// millisecond of work apart, checks that it returns "done", and returns
// the progress notifications the call got, in order.
export async function callWithProgress(client: Client, n: number): Promise<Progress[]> {
  const seen: Progress[] = [];
  const res = (await client.callTool(
    {
      name: "execute_script",
      arguments: {
        script: `
          for i = 1, ${n} do
            local t = os.clock()
            while os.clock() - t < 0.001 do end
            progress(i, ${n}, "row " .. i)
          end
          return "done"`,
      },
    },
    CallToolResultSchema,
    { onprogress: (p) => seen.push(p) },
  )) as CallToolResult;
  assert.equal((res.structuredContent as { result?: unknown } | undefined)?.result, "done");
  return seen;
}

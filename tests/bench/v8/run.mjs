// run.mjs runs a benchmark script on toolscript's Luau module (wasm/luau.wasm)
// under V8, as an extra engine of tests/bench/cmd/compare: the very same
// module the Go host runs under wazero, so that the difference between the
// two columns is the wasm engine's alone.
//
// Usage: node [V8 flags] run.mjs MODULE.wasm SCRIPT.lua [RUNS] [WARMUPS]
//
// The module is compiled once (a WebAssembly.Module); every run, warm-ups
// included, gets a fresh instance, as every toolscript execution does:
// instantiate (with a fresh node:wasi, preview1, no preopens, no
// arguments, no environment), _initialize (the module is a reactor),
// ts_init, then ts_run with the script, no arguments and the default limits
// of luau.Limits. The toolscript host imports are implemented here as in
// host/runtime/luau/host.go; io is not offered (the benchmarks do not use it).
//
// V8 compiles wasm in tiers: a function starts in its baseline compiler
// (Liftoff) and is recompiled by the optimising one (TurboFan) once hot.
// The new code only serves later calls, and the interpreter loop of a
// benchmark is one long call, so a first run mostly measures baseline code.
// The compiled code belongs to the Module and is shared by its instances:
// WARMUPS untimed runs (default 1) let the tiering settle first. Running
// node with --no-liftoff compiles every function with TurboFan up front.
//
// The output is one JSON object on stdout, shaped like bin/luau-native's:
//
//   {"script": "...", "engine": "...", "warmups": 1, "times_ns": [...],
//    "instantiate_ns": [...], "kind": 0, "results": [<JSON>, ...]}
//
// times_ns are the times of ts_init plus ts_run (what the native harness
// times); instantiate_ns the instantiation and _initialize before them.
// results holds each timed run's outcome: the JSON text the script returned
// (kind 0), or the error message as a JSON string (other kinds, TsKind in
// luau-build/shim/shim.h; 100 when the execution unwound through the host).
// The exit status is 0 when every run succeeded.

import { readFileSync } from 'node:fs';
import { WASI } from 'node:wasi';
import { randomInt } from 'node:crypto';

// The limits the Go host passes (host/runtime/luau/abi.go, luau.Limits defaults).
const initHeapLimit = 16 << 20;
const heapLimit = 64 << 20;
const resultCap = 4 << 20;
const inputSize = 64 << 10;
const kindOK = 0;
const kindUnwound = 100;

// LuaThrow is what the throw import raises and rawrunprotected catches: a
// plain object, not an Error, so that raising it captures no stack trace.
class LuaThrow {
  constructor(status) {
    this.status = status;
  }
}
const throws = Array.from({ length: 8 }, (_, i) => new LuaThrow(i));

class FrontEndAbort extends Error {}

function usage(message) {
  process.stderr.write(`run.mjs: ${message}\nusage: node run.mjs MODULE.wasm SCRIPT.lua [RUNS] [WARMUPS]\n`);
  process.exit(2);
}

const [modulePath, scriptPath, runsArg = '1', warmupsArg = '1'] = process.argv.slice(2);
if (!modulePath || !scriptPath || process.argv.length > 6) usage('wrong number of arguments');
const runs = Number(runsArg);
const warmups = Number(warmupsArg);
if (!Number.isInteger(runs) || runs < 1) usage(`RUNS must be a positive integer, not ${runsArg}`);
if (!Number.isInteger(warmups) || warmups < 0) usage(`WARMUPS must be a non-negative integer, not ${warmupsArg}`);

const source = readFileSync(scriptPath);
const module = new WebAssembly.Module(readFileSync(modulePath));

const decoder = new TextDecoder('utf-8', { fatal: false });

// instantiate makes a fresh instance with its own WASI and host imports.
function instantiate() {
  const wasi = new WASI({ version: 'preview1', args: [], env: {}, preopens: {}, returnOnExit: true });
  let exports = null; // set once instantiated; the imports close over it
  const bytes = (ptr, len) => new Uint8Array(exports.memory.buffer, ptr, len);
  const noIO = () => -1;
  const toolscript = {
    rawrunprotected(L, f, ud) {
      const sp = exports.__stack_pointer.value;
      try {
        exports.ts_trampoline(f, L, ud);
        return 0;
      } catch (e) {
        if (e instanceof LuaThrow) {
          exports.__stack_pointer.value = sp;
          return e.status;
        }
        throw e;
      }
    },
    throw(L, status) {
      throw throws[status] ?? new LuaThrow(status);
    },
    tick() {},
    print() {},
    abort(ptr, len, line) {
      throw new FrontEndAbort(`front end aborted at line ${line}: ${decoder.decode(bytes(ptr, len))}`);
    },
    progress() {},
    io_open: noIO,
    io_read: noIO,
    io_write: noIO,
    io_seek: () => -1n,
    io_flush: noIO,
    io_close: noIO,
    io_list: noIO,
    io_remove: noIO,
    io_take: () => 0,
    sdk_call: () => 0,
    sdk_submit: () => {},
    sdk_wait: () => 0,
  };
  // Any other host function of the module (the ABI grows) is one a
  // benchmark script never reaches: it throws, naming itself, if one does.
  for (const imp of WebAssembly.Module.imports(module)) {
    if (imp.module === 'toolscript' && imp.kind === 'function' && !(imp.name in toolscript)) {
      toolscript[imp.name] = () => {
        throw new Error(`run.mjs: the benchmark does not provide toolscript.${imp.name}`);
      };
    }
  }
  const instance = new WebAssembly.Instance(module, {
    wasi_snapshot_preview1: wasi.wasiImport,
    toolscript,
  });
  exports = instance.exports;
  wasi.initialize(instance); // calls _initialize
  return exports;
}

// once runs the script in a fresh instance.
function once() {
  const t0 = process.hrtime.bigint();
  const ex = instantiate();
  const outAddr = ex.ts_out_addr() >>> 0;
  const inputAddr = ex.ts_input_addr() >>> 0;
  const t1 = process.hrtime.bigint();

  let kind;
  let text;
  let t2;
  try {
    kind = ex.ts_init(initHeapLimit);
    if (kind !== kindOK) throw new Error(`ts_init failed (kind ${kind})`);
    let ptr = inputAddr;
    if (source.length > inputSize) {
      ptr = ex.ts_malloc(source.length) >>> 0;
      if (ptr === 0) throw new Error('the script does not fit in the module\'s memory');
    }
    new Uint8Array(ex.memory.buffer, ptr, source.length).set(source);
    kind = ex.ts_run(ptr, source.length, ptr + source.length, 0, resultCap, heapLimit, 0, randomInt(2 ** 32));
    t2 = process.hrtime.bigint();
    const out = new DataView(ex.memory.buffer, outAddr, 16);
    const p = out.getUint32(0, true);
    const len = out.getUint32(4, true);
    text = decoder.decode(new Uint8Array(ex.memory.buffer, p, len));
    if (out.getInt32(12, true) !== kind) throw new Error(`ts_run returned kind ${kind}, ts_out says ${out.getInt32(12, true)}`);
  } catch (e) {
    t2 ??= process.hrtime.bigint();
    kind = kindUnwound;
    if (e instanceof LuaThrow) text = `unprotected error (status ${e.status})`;
    else if (e instanceof FrontEndAbort) text = e.message;
    else text = String(e?.stack ?? e);
  }
  return { instantiate: t1 - t0, time: t2 - t1, kind, text };
}

for (let i = 0; i < warmups; i++) once();

const report = {
  script: scriptPath,
  engine: `node ${process.version} (V8 ${process.versions.v8})${process.execArgv.length ? ' ' + process.execArgv.join(' ') : ''}`,
  warmups,
  times_ns: [],
  instantiate_ns: [],
  kind: kindOK,
};
// The results' JSON text goes into the report as it is, so that numbers
// keep the exact digits the module wrote.
const results = [];
for (let i = 0; i < runs; i++) {
  const r = once();
  report.times_ns.push(Number(r.time));
  report.instantiate_ns.push(Number(r.instantiate));
  if (r.kind !== kindOK) report.kind = r.kind;
  results.push(r.kind === kindOK ? r.text : JSON.stringify(r.text));
}
const json = JSON.stringify(report);
process.stdout.write(`${json.slice(0, -1)},"results":[${results.join(',')}]}\n`);
process.exitCode = report.kind === kindOK ? 0 : 1;

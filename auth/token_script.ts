/**
 * `--custom-access-token-script`: a JavaScript function of the user and the
 * token's claims whose returned object adds claims to the access and ID
 * tokens (as the reference's `function(user, tokenPayload) { … }`).
 *
 * Isolation, in two layers:
 * - the function runs in a `node:vm` context of its own, created without any
 *   host object: user and claims enter as JSON text and are parsed inside the
 *   context, the result leaves as JSON text. No `require`, `process`,
 *   `import()`, timers, network or file access exist in there; string code
 *   generation (`eval`, `Function`) and WebAssembly are off. A synchronous
 *   loop is cut by the vm timeout; microtasks run inside the same budget
 *   (`microtaskMode: 'afterEvaluate'`).
 * - that context lives in a worker thread with V8 heap limits
 *   (`resourceLimits`), so a script that allocates without bound kills only
 *   the worker; the host also terminates a worker that has not answered in
 *   time. A fresh worker is started for the next call.
 *
 * Failure is never silent (conventions §0, priority 1 over availability): a
 * script that throws, runs too long, exhausts its memory, or returns
 * anything but a plain object refuses the login with `failed_precondition`
 * `token_script_failed` and a log line; no token is ever issued without the
 * claims. Reserved claims (`sub`, `iss`, `aud`, `exp`, … as the reference
 * lists them) cannot be overridden: returning one is a failure too.
 * Pinned by test/auth/token_script.test.ts.
 */
import { Worker } from 'node:worker_threads';
import { LatchkeyError } from '../engine/errors.ts';

/** Claims a script may not set (the reference's list, plus JWT registered names and our `jti`/`nbf`). */
export const RESERVED_CLAIMS: ReadonlySet<string> = new Set([
  'sub', 'iss', 'aud', 'exp', 'iat', 'nbf', 'jti', 'token_type', 'roles', 'allowed_roles', 'scope', 'nonce', 'login_method',
  'at_hash', 'c_hash', 'auth_time', 'amr', 'acr', 'act', 'client_id', 'family_id', 'sid', 'resource', 'azp',
]);

export interface TokenScriptOptions {
  /** Wall-clock budget of one call inside the context (milliseconds). Default 1000. */
  timeoutMs?: number;
  /** V8 old-generation heap of the worker (MB). Default 32. */
  memoryMb?: number;
  /** Called with the reason of every failure (for the server log). */
  onFailure?: (detail: { reason: string; message: string }) => void;
}

// The worker: compiles the script once in a bare context, then answers {id, user, claims} (JSON text) messages.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const vm = require('node:vm');
const context = vm.createContext(Object.create(null), {
  name: 'custom-access-token-script',
  codeGeneration: { strings: false, wasm: false },
  microtaskMode: 'afterEvaluate',
});
const timeout = workerData.timeoutMs;
// What V8 gives every context beyond the language: an inert console, WebAssembly (compilation is off anyway),
// shared memory. None of it has a use in a claims function.
vm.runInContext('delete globalThis.console; delete globalThis.WebAssembly; delete globalThis.SharedArrayBuffer; delete globalThis.Atomics;', context);
let compiled;
try {
  vm.runInContext('"use strict"; globalThis.__fn = (' + workerData.source + '\\n);', context, { timeout, filename: 'custom-access-token-script.js' });
  compiled = vm.runInContext('typeof globalThis.__fn === "function"', context, { timeout });
} catch (err) {
  parentPort.postMessage({ id: 0, error: 'compile', message: String(err && err.message || err) });
  compiled = false;
}
if (compiled === false) parentPort.postMessage({ id: 0, error: 'compile', message: 'the script must be a function expression, e.g. function (user, tokenPayload) { return { tier: "gold" }; }' });
else parentPort.postMessage({ id: 0, ok: true });
const call = vm.compileFunction(
  'const out = globalThis.__fn(JSON.parse(u), JSON.parse(c));' +
  'if (out === null || typeof out !== "object" || Array.isArray(out) || typeof out.then === "function") return "!";' +
  'return JSON.stringify(out);',
  ['u', 'c'],
  { parsingContext: context },
);
const run = new vm.Script('globalThis.__result = globalThis.__call(globalThis.__u, globalThis.__c);', { filename: 'custom-access-token-script.js' });
vm.runInContext('globalThis', context).__call = call;
parentPort.on('message', (m) => {
  const g = vm.runInContext('globalThis', context);
  g.__u = m.user;
  g.__c = m.claims;
  try {
    run.runInContext(context, { timeout });
    const out = g.__result;
    if (out === '!' || typeof out !== 'string') parentPort.postMessage({ id: m.id, error: 'bad_result', message: 'the script must return a plain object of claims' });
    else parentPort.postMessage({ id: m.id, ok: true, result: out });
  } catch (err) {
    const text = String(err && err.message || err);
    parentPort.postMessage({ id: m.id, error: /timed out/.test(text) ? 'timeout' : 'threw', message: text.slice(0, 200) });
  }
});
`;

interface Pending {
  resolve: (v: Record<string, unknown>) => void;
  reject: (e: LatchkeyError) => void;
  timer: NodeJS.Timeout;
}

type Answer = { id: number; ok?: true; result?: string; error?: string; message?: string };

const failed = (reason: string): LatchkeyError =>
  new LatchkeyError('failed_precondition', `the custom access token script failed (${reason}); no token was issued`, { reason: 'token_script_failed' });

/** One compiled script and its worker. Build with {@link TokenScript.create}; `close` at shutdown. */
export class TokenScript {
  readonly #source: string;
  readonly #timeoutMs: number;
  readonly #memoryMb: number;
  readonly #onFailure: (detail: { reason: string; message: string }) => void;
  #worker: Worker | undefined;
  #ready: Promise<void> | undefined;
  #next = 1;
  readonly #pending = new Map<number, Pending>();
  #closed = false;

  private constructor(source: string, o: TokenScriptOptions) {
    this.#source = source;
    this.#timeoutMs = o.timeoutMs ?? 1000;
    this.#memoryMb = o.memoryMb ?? 32;
    this.#onFailure = o.onFailure ?? (() => {});
  }

  /** Compiles `source` in a worker. Throws `invalid_argument` (`invalid_token_script`) when it is not a function expression. */
  static async create(source: string, o: TokenScriptOptions = {}): Promise<TokenScript> {
    const script = new TokenScript(source, o);
    try {
      await script.#start();
    } catch (err) {
      await script.close();
      throw new LatchkeyError('invalid_argument', `--custom-access-token-script: ${(err as Error).message}`, { reason: 'invalid_token_script' });
    }
    return script;
  }

  #start(): Promise<void> {
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { source: this.#source, timeoutMs: this.#timeoutMs },
      resourceLimits: { maxOldGenerationSizeMb: this.#memoryMb, maxYoungGenerationSizeMb: 8, codeRangeSizeMb: 8, stackSizeMb: 2 },
      env: {},
      execArgv: [],
      stdout: true,
      stderr: true,
    });
    worker.unref();
    this.#worker = worker;
    this.#ready = new Promise<void>((resolve, reject) => {
      const first = (m: Answer): void => {
        if (m.id !== 0) return;
        worker.off('message', first);
        if (m.ok) resolve();
        else reject(new Error(m.message ?? 'the script does not compile'));
      };
      worker.on('message', first);
      worker.once('error', (err) => reject(err));
      worker.once('exit', () => reject(new Error('the script worker stopped')));
    });
    worker.on('message', (m: Answer) => {
      if (m.id === 0) return;
      const p = this.#pending.get(m.id);
      if (p === undefined) return;
      this.#pending.delete(m.id);
      clearTimeout(p.timer);
      if (m.ok && typeof m.result === 'string') {
        let claims: unknown;
        try {
          claims = JSON.parse(m.result);
        } catch {
          claims = undefined;
        }
        const bad = claims === undefined ? 'bad_result' : Object.keys(claims as object).find((k) => RESERVED_CLAIMS.has(k));
        if (bad === undefined) p.resolve(claims as Record<string, unknown>);
        else p.reject(this.#fail(bad === 'bad_result' ? 'bad_result' : 'reserved_claim', bad === 'bad_result' ? 'the result is not JSON' : `returned the reserved claim ${bad}`));
      } else p.reject(this.#fail(m.error ?? 'threw', m.message ?? ''));
    });
    const gone = (err?: unknown): void => {
      if (this.#worker !== worker) return;
      this.#worker = undefined;
      this.#ready = undefined;
      for (const [id, p] of this.#pending) {
        this.#pending.delete(id);
        clearTimeout(p.timer);
        p.reject(this.#fail(err instanceof Error && /memory/i.test(err.message) ? 'out_of_memory' : 'worker_stopped', err instanceof Error ? err.message : 'the script worker stopped'));
      }
    };
    worker.on('error', gone);
    worker.on('exit', () => gone());
    return this.#ready;
  }

  #fail(reason: string, message: string): LatchkeyError {
    this.#onFailure({ reason, message });
    const words: Record<string, string> = {
      threw: 'it threw an error',
      timeout: 'it ran too long',
      bad_result: 'it did not return a plain object',
      reserved_claim: 'it returned a reserved claim',
      out_of_memory: 'it ran out of memory',
      worker_stopped: 'it stopped',
    };
    return failed(words[reason] ?? reason);
  }

  /**
   * The extra claims for a token: the script's returned object, checked.
   * Throws `failed_precondition` `token_script_failed` on any failure.
   */
  async claims(user: Readonly<Record<string, unknown>>, tokenClaims: Readonly<Record<string, unknown>>): Promise<Record<string, unknown>> {
    if (this.#closed) throw failed('the server is stopping');
    if (this.#worker === undefined || this.#ready === undefined) {
      try {
        await this.#start();
      } catch (err) {
        throw this.#fail('worker_stopped', (err as Error).message);
      }
    }
    try {
      await this.#ready;
    } catch (err) {
      throw this.#fail('worker_stopped', (err as Error).message);
    }
    const worker = this.#worker;
    if (worker === undefined) throw this.#fail('worker_stopped', 'the script worker stopped');
    const id = this.#next++;
    return new Promise<Record<string, unknown>>((resolve, reject) => {
      // The vm timeout cuts synchronous loops; this one catches whatever it cannot (a worker stuck or swamped).
      const timer = setTimeout(() => {
        if (!this.#pending.has(id)) return;
        this.#pending.delete(id);
        reject(this.#fail('timeout', 'no answer in time; the worker is restarted'));
        void worker.terminate();
      }, this.#timeoutMs + 1000);
      this.#pending.set(id, { resolve, reject, timer });
      worker.postMessage({ id, user: JSON.stringify(user), claims: JSON.stringify(tokenClaims) });
    });
  }

  /** Stops the worker. */
  async close(): Promise<void> {
    this.#closed = true;
    const w = this.#worker;
    this.#worker = undefined;
    if (w !== undefined) await w.terminate();
  }
}

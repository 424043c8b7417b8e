/**
 * The start of a server child process on a port found free beforehand
 * ({@link freePort}): another process may take that port before the child
 * binds it. Until the child logs its start line, whatever answers on the port
 * may be that other process (and the child is about to exit with EADDRINUSE);
 * after it, the port is the child's. Shared by the helpers that start
 * `bin/latchkey.js serve` (crash.ts, cluster.ts), redis-server and haproxy
 * (cluster.ts), and the private database and Redis servers (instances.ts).
 */
import type { ChildProcess } from 'node:child_process';
import { freePort } from './loopback.ts';

/** What a launched process wrote, as far as its start is concerned. */
export interface StartOutput {
  /** The last 4,000 characters of its stderr (for the message of a start that failed). */
  readonly stderr: string;
  /** The last 4,000 characters of its stdout before the start line (where some programs, such as redis-server, report a failed bind). */
  readonly stdout: string;
  /** True once it logged its start line: every listener of it is bound. */
  readonly started: boolean;
  /** Resolves at its start line, or once it exited. */
  readonly settled: Promise<void>;
  /** Resolves once it exited and its output was read to the end. */
  readonly closed: Promise<void>;
}

const outputs = new WeakMap<ChildProcess, StartOutput>();

/** The message of the line the server logs (level `info`) once every listener is bound (cmd/server.ts). */
const STARTED = 'latchkey started';

/** A start line of the server: its JSON log line with the message {@link STARTED}. */
export const serverStartLine = (line: string): boolean => line.includes(`"msg":"${STARTED}"`);

/**
 * Watches the output of `child`, spawned with stdout and stderr piped, for its start line
 * (`isStartLine`, on either stream: PostgreSQL and MariaDB log to stderr; by default the
 * server's, which it logs on stdout at `--log-level=info` or below). Both streams are read to the
 * end, so that the child never blocks on a full pipe.
 */
export function watchStart(child: ChildProcess, isStartLine: (line: string) => boolean = serverStartLine): StartOutput {
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  let resolveStarted = (): void => {};
  const state = { stderr: '', stdout: '', started: false };
  const output: StartOutput = {
    get stderr() {
      return state.stderr;
    },
    get stdout() {
      return state.stdout;
    },
    get started() {
      return state.started;
    },
    settled: Promise.race([new Promise<void>((resolve) => (resolveStarted = resolve)), closed]),
    closed,
  };
  const partial = { stdout: '', stderr: '' };
  const scan = (stream: 'stdout' | 'stderr', text: string): void => {
    const lines = (partial[stream] + text).split('\n');
    partial[stream] = lines.pop() ?? '';
    if (lines.some(isStartLine)) {
      state.started = true;
      resolveStarted();
    }
  };
  child.stdout?.on('data', (d: Buffer) => {
    if (state.started) return;
    state.stdout = (state.stdout + d.toString()).slice(-4000);
    scan('stdout', d.toString());
  });
  child.stderr?.on('data', (d: Buffer) => {
    state.stderr = (state.stderr + d.toString()).slice(-4000);
    if (!state.started) scan('stderr', d.toString());
  });
  outputs.set(child, output);
  return output;
}

/** A start that failed because another process held the port. */
export class PortTaken extends Error {}

/**
 * What a process that could not bind its port says: Node's error code, or the message of
 * redis-server, haproxy ("cannot bind socket (Address already in use)"), PostgreSQL ("could not
 * bind IPv4 address …: Address already in use") and MariaDB ("Bind on TCP/IP port. Got error: 98:
 * Address already in use").
 */
const PORT_IN_USE = /EADDRINUSE|Address already in use/u;

/**
 * Waits until `child` (watched by {@link watchStart}) has logged its start line, for at most
 * `timeoutMs`. Throws {@link PortTaken} when the child exits because its port is in use, another
 * error when it exits otherwise or does not log the line in time.
 */
export async function started(child: ChildProcess, timeoutMs: number): Promise<void> {
  const output = watched(child);
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([output.settled, new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
  clearTimeout(timer);
  // Exited, or about to (the start line was not written): its output read to the end, or a moment for it.
  if (!output.started) await Promise.race([output.closed, new Promise((r) => setTimeout(r, 1000))]);
  if (child.exitCode !== null || child.signalCode !== null) throw await whyExited(child);
  if (!output.started) throw new Error(`${child.spawnfile} did not start within ${timeoutMs} ms: ${output.stderr || output.stdout}`);
}

/**
 * Why `child` (watched by {@link watchStart}) exited, once its output was read to the end (or a
 * moment passed): {@link PortTaken} when it says that its port was in use, another error
 * otherwise. For a helper that waits for more than the start line (a query that succeeds), or
 * that tells readiness otherwise (haproxy logs no start line).
 */
export async function whyExited(child: ChildProcess): Promise<Error> {
  const output = watched(child);
  await Promise.race([output.closed, new Promise((r) => setTimeout(r, 1000))]);
  const message = `${child.spawnfile} exited with ${child.exitCode ?? child.signalCode}: ${output.stderr || output.stdout}`;
  return PORT_IN_USE.test(output.stderr) || PORT_IN_USE.test(output.stdout) ? new PortTaken(message) : new Error(message);
}

function watched(child: ChildProcess): StartOutput {
  const output = outputs.get(child);
  if (output === undefined) throw new Error('not a watched process (watchStart)');
  return output;
}

/**
 * Waits until `child` (watched by {@link watchStart}) has logged its start line ({@link started})
 * and `url/readyz` answers 200, for at most `timeoutMs` in all. Throws {@link PortTaken} when the
 * child exits because its port is in use, another error when it exits otherwise or is not ready
 * in time.
 */
export async function ready(url: string, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  await started(child, timeoutMs);
  const output = outputs.get(child)!;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      await output.closed;
      throw new Error(`server exited with ${child.exitCode ?? child.signalCode}: ${output.stderr}`);
    }
    if (Date.now() > deadline) throw new Error(`server at ${url} did not become ready: ${output.stderr}`);
    const ok = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(5_000) }).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** How many ports a start tries before it gives up (see {@link onFreePort}). */
const PORT_ATTEMPTS = 5;

/**
 * Runs `start` on `first`, or on a port found free by {@link freePort}, and again on a fresh
 * one each time it throws {@link PortTaken} (another process took the port before the start bound
 * it), at most {@link PORT_ATTEMPTS} ports in all. Any other error, or the last attempt's, is
 * thrown; `start` stops what it launched before it throws.
 */
export async function onFreePort<T>(start: (port: number) => Promise<T>, first?: number): Promise<T> {
  let port = first ?? (await freePort());
  for (let attempt = 1; ; attempt++) {
    try {
      return await start(port);
    } catch (err) {
      if (!(err instanceof PortTaken) || attempt >= PORT_ATTEMPTS) throw err;
      port = await freePort();
    }
  }
}

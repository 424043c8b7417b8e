/**
 * Structured JSON logs, one object per line: `{time, level, msg, ...fields}`.
 *
 * Lines below the configured level cost one comparison. Per-request lines are
 * logged at `debug`, so the default `info` level writes nothing on the hot path.
 * Keys that name secrets are redacted wherever they appear in the fields.
 */
import { isDependencyFailure } from '../engine/errors.ts';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'silent'] as const;

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

/** Field names whose values are never written (case-insensitive substring match). */
const SECRET_KEY = /secret|password|token|authorization|cookie|private[-_]?key|api[-_]?key/i;

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  /** A logger that adds `fields` to every line. */
  child(fields: Record<string, unknown>): Logger;
  /** True when lines of `level` are written (to skip building costly fields). */
  enabled(level: Exclude<LogLevel, 'silent'>): boolean;
}

export type LogSink = (line: string) => void;

/** Replaces secret-looking fields by `[redacted]`, recursively; errors become `{name, message, stack}`. */
export function redact(value: unknown, depth = 0): unknown {
  if (depth > 8) return '[deep]';
  if (value instanceof Error) {
    const out: Record<string, unknown> = { name: value.name, message: value.message };
    if (value.stack) out.stack = value.stack;
    const code = (value as { code?: unknown }).code;
    if (code !== undefined) out.code = code;
    if (value.cause !== undefined) out.cause = redact(value.cause, depth + 1);
    return out;
  }
  if (Array.isArray(value)) return value.map((v) => redact(v, depth + 1));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      // A boolean carries no secret (e.g. `enable-strong-password`, `app-cookie-secure` in the startup config).
      out[k] = SECRET_KEY.test(k) && v !== undefined && v !== null && v !== '' && typeof v !== 'boolean' ? '[redacted]' : redact(v, depth + 1);
    }
    return out;
  }
  return value;
}

/** `name code: message` of an outage error and of what it wraps, without stacks. */
export function outageSummary(err: unknown): string {
  const parts: string[] = [];
  let e: unknown = err;
  for (let i = 0; i < 4 && e !== null && typeof e === 'object'; i++) {
    const o = e as { name?: unknown; code?: unknown; message?: unknown; parent?: unknown; cause?: unknown };
    const head = [o.name, o.code].filter((x) => typeof x === 'string').join(' ');
    parts.push(typeof o.message === 'string' && o.message.length > 0 ? `${head}: ${o.message.slice(0, 200)}` : head);
    e = o.parent ?? o.cause;
    if (e === err) break;
  }
  return parts.filter((p) => p.length > 0).join(' < ');
}

class JsonLogger implements Logger {
  readonly #rank: number;
  readonly #sink: LogSink;
  readonly #base: Record<string, unknown>;

  constructor(rank: number, sink: LogSink, base: Record<string, unknown>) {
    this.#rank = rank;
    this.#sink = sink;
    this.#base = base;
  }

  #write(level: Exclude<LogLevel, 'silent'>, msg: string, fields: Record<string, unknown> | undefined): void {
    if (RANK[level] < this.#rank) return;
    const line = { time: new Date().toISOString(), level, msg, ...this.#base, ...(fields ? (redact(fields) as object) : {}) };
    let text: string;
    try {
      text = JSON.stringify(line);
    } catch {
      text = JSON.stringify({ time: line.time, level, msg, note: 'fields not serialisable' });
    }
    this.#sink(text);
  }

  debug(msg: string, fields?: Record<string, unknown>): void {
    this.#write('debug', msg, fields);
  }
  info(msg: string, fields?: Record<string, unknown>): void {
    this.#write('info', msg, fields);
  }
  warn(msg: string, fields?: Record<string, unknown>): void {
    this.#write('warn', msg, fields);
  }
  error(msg: string, fields?: Record<string, unknown>): void {
    // A dependency outage (database, Redis, SMTP unreachable) is expected and
    // answered 503 with readiness failing: one warning naming it, no stack,
    // whichever component (request, background worker) reports it.
    const err = fields?.['err'];
    if (err !== undefined && isDependencyFailure(err)) {
      this.#write('warn', msg, { ...fields, err: outageSummary(err), dependency_unavailable: true });
      return;
    }
    this.#write('error', msg, fields);
  }
  child(fields: Record<string, unknown>): Logger {
    return new JsonLogger(this.#rank, this.#sink, { ...this.#base, ...(redact(fields) as object) });
  }
  enabled(level: Exclude<LogLevel, 'silent'>): boolean {
    return RANK[level] >= this.#rank;
  }
}

/** Writes to stdout. */
export const STDOUT_SINK: LogSink = (line) => {
  process.stdout.write(`${line}\n`);
};

/** Creates a logger at `level` writing one JSON line per entry to `sink` (stdout by default). */
export function createLogger(level: LogLevel, sink: LogSink = STDOUT_SINK): Logger {
  return new JsonLogger(RANK[level], sink, {});
}

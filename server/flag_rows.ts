/**
 * The kinds of flag rows (string, int, bool, duration, enum, list) and their
 * parsers and printers, from which the flags table in `flags.ts` is built.
 * Rows declared inside {@link group} carry that group's name (for `--help`
 * and docs/flags.md).
 */
export type Kind = 'string' | 'int' | 'bool' | 'duration' | 'enum' | 'url' | 'list';

/** One row of the flags table. `T` is the parsed type; `D` whether a default exists. */
export interface FlagRow<T, D extends boolean> {
  readonly kind: Kind;
  readonly doc: string;
  readonly group: string;
  readonly default: D extends true ? T : undefined;
  readonly secret: boolean;
  /** Allowed values (enum). */
  readonly values?: readonly string[];
  readonly min?: number;
  readonly max?: number;
  /** Parses the raw text; returns the value or a problem description. */
  parse(raw: string): { ok: true; value: T } | { ok: false; problem: string };
  /** Renders a value for docs/help. */
  show(value: T): string;
}

export type AnyRow = FlagRow<unknown, boolean>;

interface Common {
  doc: string;
  secret?: boolean;
}

const TRUE = new Set(['', 'true', '1', 'yes', 'on']);
const FALSE = new Set(['false', '0', 'no', 'off']);

let currentGroup = 'Core';

function row<T, D extends boolean>(kind: Kind, c: Common, def: T | undefined, parse: FlagRow<T, D>['parse'], show: (v: T) => string, extra: Partial<AnyRow> = {}): FlagRow<T, D> {
  return {
    kind,
    doc: c.doc,
    group: currentGroup,
    default: def as FlagRow<T, D>['default'],
    secret: c.secret ?? false,
    parse,
    show,
    ...(extra as object),
  } as FlagRow<T, D>;
}

export function str(c: Common): FlagRow<string, false>;
export function str(c: Common & { default: string }): FlagRow<string, true>;
export function str(c: Common & { default?: string }): FlagRow<string, boolean> {
  return row('string', c, c.default, (raw) => ({ ok: true, value: raw }), (v) => v);
}

export function int(c: Common & { default?: number; min?: number; max?: number }): FlagRow<number, true>;
export function int(c: Common & { min?: number; max?: number }): FlagRow<number, false>;
export function int(c: Common & { default?: number; min?: number; max?: number }): FlagRow<number, boolean> {
  const min = c.min ?? Number.MIN_SAFE_INTEGER;
  const max = c.max ?? Number.MAX_SAFE_INTEGER;
  return row(
    'int',
    c,
    c.default,
    (raw) => {
      if (!/^-?\d+$/.test(raw.trim())) return { ok: false, problem: `must be an integer, got "${raw}"` };
      const n = Number(raw.trim());
      if (n < min || n > max) return { ok: false, problem: `must be between ${min} and ${max}, got ${n}` };
      return { ok: true, value: n };
    },
    (v) => String(v),
    { ...(c.min !== undefined ? { min: c.min } : {}), ...(c.max !== undefined ? { max: c.max } : {}) },
  );
}

export function bool(c: Common & { default: boolean }): FlagRow<boolean, true> {
  return row(
    'bool',
    c,
    c.default,
    (raw) => {
      const v = raw.trim().toLowerCase();
      if (TRUE.has(v)) return { ok: true, value: true };
      if (FALSE.has(v)) return { ok: true, value: false };
      return { ok: false, problem: `must be true or false, got "${raw}"` };
    },
    (v) => String(v),
  );
}

const DURATION = /^(\d+)(ms|s|m|h)?$/;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** A duration in milliseconds, written `500ms`, `30s`, `5m`, `1h` (a bare number is seconds). */
export function duration(c: Common & { default: number; min?: number; max?: number }): FlagRow<number, true> {
  const min = c.min ?? 0;
  const max = c.max ?? 24 * 3_600_000;
  return row(
    'duration',
    c,
    c.default,
    (raw) => {
      const m = DURATION.exec(raw.trim());
      if (!m) return { ok: false, problem: `must be a duration like 500ms, 30s, 5m or 1h, got "${raw}"` };
      const ms = Number(m[1]) * (UNIT_MS[m[2] ?? 's'] ?? 1000);
      if (ms < min || ms > max) return { ok: false, problem: `must be between ${showMs(min)} and ${showMs(max)}` };
      return { ok: true, value: ms };
    },
    showMs,
  );
}

export function showMs(ms: number): string {
  if (ms % 3_600_000 === 0 && ms > 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0 && ms > 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}

export function oneOf<const V extends string>(values: readonly V[], c: Common & { default: V }): FlagRow<V, true>;
export function oneOf<const V extends string>(values: readonly V[], c: Common): FlagRow<V, false>;
export function oneOf<const V extends string>(values: readonly V[], c: Common & { default?: V }): FlagRow<V, boolean> {
  return row(
    'enum',
    c,
    c.default,
    (raw) =>
      (values as readonly string[]).includes(raw)
        ? { ok: true, value: raw as V }
        : { ok: false, problem: `must be one of ${values.join(', ')}, got "${raw}"` },
    (v) => v,
    { values },
  );
}

/** A comma-separated list; repeating the flag appends. */
export function list(c: Common & { default: readonly string[]; item?: (v: string) => string | undefined }): FlagRow<readonly string[], true> {
  return row(
    'list',
    c,
    c.default,
    (raw) => {
      const items = raw
        .split(',')
        .map((x) => x.trim())
        .filter((x) => x.length > 0);
      if (c.item) {
        for (const it of items) {
          const problem = c.item(it);
          if (problem) return { ok: false, problem };
        }
      }
      return { ok: true, value: items };
    },
    (v) => v.join(','),
  );
}

export function group<T>(name: string, rows: () => T): T {
  currentGroup = name;
  return rows();
}

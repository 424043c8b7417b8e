/**
 * Conditions (ABAC): CEL expressions over typed parameters, compiled when a
 * model is written and evaluated per tuple during resolution.
 *
 * The CEL environment (OpenFGA's: cel-go's standard library plus
 * `ipaddress`) is in `cel.ts`, the functions it declares (the
 * only ones a model version being written may use) in
 * `cel_allowlist.ts`, its values in
 * `cel_values.ts`, durations and timestamps (with the Go parsers
 * the conversions below use) in `cel_time.ts`, cel-go's cost
 * tracking in `cel_cost.ts`.
 *
 * Semantics follow OpenFGA (`internal/condition/condition.go`,
 * `internal/condition/types/*`):
 * - the request context is merged with the tuple's context, tuple values win;
 * - each value is converted to its declared parameter type as OpenFGA's
 *   converters do: numbers (or numeric strings, `big.ParseFloat`) to
 *   `int`/`uint` only when whole and in range, timestamps from RFC 3339
 *   strings (Go `time.Parse`), durations from Go duration strings (`"90m"`,
 *   `"1h30m"`, `"0"`; Go `time.ParseDuration`), `null` for no type but
 *   `any`; a value that does not convert is an error;
 * - a declared parameter missing from the merged context is a "missing
 *   context parameters" error, even when the expression would not need it;
 * - the expression must produce a bool;
 * - an evaluation whose cost (cel-go's runtime cost) goes over the limit,
 *   100 by default (OpenFGA's `maxConditionEvaluationCost`), is an error, never
 *   an answer.
 */
import { type CelProgram, compileCel } from './cel.ts';
import { UndeclaredReference } from './cel_allowlist.ts';
import { CostLimitError } from './cel_cost.ts';
import { durationOf, parseGoDuration, parseRfc3339 } from './cel_time.ts';
import { IPAddress, uintClass } from './cel_values.ts';
import type { Condition, ConditionParamTypeRef } from '../model.ts';
import { FGA_VALIDATION_ERROR, fgaError, show } from '../tuple.ts';

export { IPAddress } from './cel_values.ts';

/** OpenFGA's default `maxConditionEvaluationCost`. */
export const DEFAULT_CONDITION_COST_LIMIT = 100;

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const UINT64_MAX = 2n ** 64n - 1n;

function celTypeName(t: ConditionParamTypeRef): string {
  switch (t.type_name) {
    case 'TYPE_NAME_BOOL':
      return 'bool';
    case 'TYPE_NAME_STRING':
      return 'string';
    case 'TYPE_NAME_INT':
      return 'int';
    case 'TYPE_NAME_UINT':
      return 'uint';
    case 'TYPE_NAME_DOUBLE':
      return 'double';
    case 'TYPE_NAME_DURATION':
      return 'google.protobuf.Duration';
    case 'TYPE_NAME_TIMESTAMP':
      return 'google.protobuf.Timestamp';
    case 'TYPE_NAME_IPADDRESS':
      return 'ipaddress';
    case 'TYPE_NAME_ANY':
      return 'dyn';
    case 'TYPE_NAME_LIST':
    case 'TYPE_NAME_MAP': {
      const generic = t.generic_types?.[0];
      if (generic === undefined || t.generic_types!.length !== 1) {
        throw new TypeError(`${t.type_name} needs exactly one generic type`);
      }
      const inner = celTypeName(generic);
      return t.type_name === 'TYPE_NAME_LIST' ? `list<${inner}>` : `map<string, ${inner}>`;
    }
    default:
      throw new TypeError(`unsupported parameter type '${show(t.type_name)}'`);
  }
}

/**
 * A decimal number as Go's `big.ParseFloat(s, 10, …)` reads it (sign,
 * digits with an optional fraction, optional exponent, or `Inf`), as an
 * exact fraction `n / 10^scale`; undefined when it is not one.
 */
function parseDecimal(s: string): { n: bigint; scale: number } | 'inf' | '-inf' | undefined {
  if (/^[+]?[Ii]nf$/u.test(s)) return 'inf';
  if (/^-[Ii]nf$/u.test(s)) return '-inf';
  const m = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/u.exec(s);
  if (m === null || (m[2] === '' && (m[3] ?? '') === '')) return undefined;
  const digits = `${m[2]}${m[3] ?? ''}`;
  let scale = (m[3] ?? '').length - Number(m[4] ?? '0');
  let n = BigInt(digits === '' ? '0' : digits);
  if (Math.abs(scale) > 400) return undefined;
  if (scale < 0) {
    n *= 10n ** BigInt(-scale);
    scale = 0;
  }
  return { n: m[1] === '-' ? -n : n, scale };
}

/** A whole number from a JSON number or a numeric string; undefined when it is not whole. */
function toWhole(v: unknown): bigint | undefined {
  if (typeof v === 'number') return Number.isInteger(v) ? BigInt(v) : undefined;
  if (typeof v !== 'string') return undefined;
  const d = parseDecimal(v);
  if (d === undefined || typeof d === 'string') return undefined;
  const div = 10n ** BigInt(d.scale);
  return d.n % div === 0n ? d.n / div : undefined;
}

/**
 * A double from a JSON number or a numeric string. Values beyond float64's
 * range are errors, as OpenFGA's converter reports a conversion that is not
 * exact for them (abac_tests.yaml `handles_floats`).
 */
function toDouble(v: unknown): number | undefined {
  if (typeof v === 'number') return Number.isFinite(v) ? v : undefined;
  if (typeof v !== 'string') return undefined;
  const d = parseDecimal(v);
  if (d === undefined || typeof d === 'string') return undefined;
  const n = Number(v);
  return Number.isFinite(n) ? n : undefined;
}

function toDyn(v: unknown): unknown {
  if (v === null || typeof v === 'boolean' || typeof v === 'string') return v;
  if (typeof v === 'number') return v;
  if (Array.isArray(v)) return v.map(toDyn);
  if (typeof v === 'object') return new Map(Object.entries(v as Record<string, unknown>).map(([k, x]) => [k, toDyn(x)]));
  throw new TypeError('unsupported value');
}

/** Converts a JSON context value to the CEL value of the declared parameter type; throws `TypeError` when it does not fit. */
export function convertParameter(t: ConditionParamTypeRef, v: unknown): unknown {
  switch (t.type_name) {
    case 'TYPE_NAME_BOOL':
      if (typeof v === 'boolean') return v;
      break;
    case 'TYPE_NAME_STRING':
      if (typeof v === 'string') return v;
      break;
    case 'TYPE_NAME_INT': {
      const n = toWhole(v);
      if (n !== undefined && n >= INT64_MIN && n <= INT64_MAX) return n;
      break;
    }
    case 'TYPE_NAME_UINT': {
      const n = toWhole(v);
      if (n !== undefined && n >= 0n && n <= UINT64_MAX) return new (uintClass())(n);
      break;
    }
    case 'TYPE_NAME_DOUBLE': {
      const n = toDouble(v);
      if (n !== undefined) return n;
      break;
    }
    case 'TYPE_NAME_DURATION': {
      const ns = typeof v === 'string' ? parseGoDuration(v) : undefined;
      if (ns !== undefined) return durationOf(ns);
      break;
    }
    case 'TYPE_NAME_TIMESTAMP': {
      const d = typeof v === 'string' ? parseRfc3339(v) : undefined;
      if (d !== undefined) return d;
      break;
    }
    case 'TYPE_NAME_IPADDRESS':
      if (typeof v === 'string') {
        try {
          return new IPAddress(v);
        } catch {
          break;
        }
      }
      break;
    case 'TYPE_NAME_ANY':
      return toDyn(v);
    case 'TYPE_NAME_LIST': {
      const inner = t.generic_types?.[0];
      if (Array.isArray(v) && inner !== undefined) return v.map((x) => convertParameter(inner, x));
      break;
    }
    case 'TYPE_NAME_MAP': {
      const inner = t.generic_types?.[0];
      if (v !== null && typeof v === 'object' && !Array.isArray(v) && inner !== undefined) {
        return new Map(Object.entries(v as Record<string, unknown>).map(([k, x]) => [k, convertParameter(inner, x)]));
      }
      break;
    }
    default:
      break;
  }
  throw new TypeError(`value does not convert to ${t.type_name.replace('TYPE_NAME_', '').toLowerCase()}`);
}

/** Limits from OpenFGA's API definition. */
export const CONDITION_LIMITS = {
  maxConditions: 25,
  maxParameters: 25,
  maxExpressionBytes: 512,
  maxContextBytes: 32 * 1024,
} as const;

const CONDITION_NAME = /^[^:#@\s]{1,50}$/u;

/** A compiled condition. */
export class CompiledCondition {
  readonly name: string;
  readonly parameters: Readonly<Record<string, ConditionParamTypeRef>>;
  /** The evaluation cost above which an evaluation is an error. */
  readonly costLimit: number;
  readonly #program: CelProgram;

  /**
   * Compiles and type-checks `condition`; throws `TypeError` with a
   * client-safe message when it does not compile (an `UndeclaredReference`,
   * naming it, for a function, macro or namespace outside OpenFGA's CEL
   * environment). `costLimit` is OpenFGA's `maxConditionEvaluationCost`
   * (default 100). `stored: true` compiles a condition of a model version
   * read back from a store: it may use every function of the CEL library, so
   * versions written before such functions were refused keep loading.
   */
  constructor(condition: Condition, costLimit: number = DEFAULT_CONDITION_COST_LIMIT, options: { stored?: boolean } = {}) {
    this.costLimit = costLimit;
    this.name = condition.name;
    this.parameters = condition.parameters ?? {};
    if (!CONDITION_NAME.test(condition.name)) throw new TypeError(`invalid condition name '${condition.name}'`);
    if (Object.keys(this.parameters).length > CONDITION_LIMITS.maxParameters) {
      throw new TypeError(`condition '${condition.name}' has more than ${CONDITION_LIMITS.maxParameters} parameters`);
    }
    if (typeof condition.expression !== 'string' || condition.expression.trim() === '') {
      throw new TypeError(`condition '${condition.name}' has an empty expression`);
    }
    if (Buffer.byteLength(condition.expression, 'utf8') > CONDITION_LIMITS.maxExpressionBytes) {
      throw new TypeError(`condition '${condition.name}' expression is longer than ${CONDITION_LIMITS.maxExpressionBytes} bytes`);
    }
    const variables: Record<string, string> = {};
    for (const [param, type] of Object.entries(this.parameters)) variables[param] = celTypeName(type);
    try {
      this.#program = compileCel(condition.expression, variables, { openfgaOnly: options.stored !== true });
    } catch (err) {
      const message = `condition '${condition.name}' does not compile: ${(err as Error).message}`;
      if (err instanceof UndeclaredReference) throw new UndeclaredReference(message, err.reference);
      throw new TypeError(message);
    }
    if (this.#program.type !== 'bool' && this.#program.type !== 'dyn') {
      throw new TypeError(`condition '${condition.name}' must produce a bool, not ${this.#program.type}`);
    }
  }

  /**
   * Converts `context` to typed parameters; throws `invalid_argument`
   * (OpenFGA 2000, reason `invalid_condition_context`) for an undeclared key
   * or a value of the wrong type. Used to validate tuple writes.
   */
  validateContext(context: Record<string, unknown> | undefined, strictKeys: boolean): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    if (context === undefined) return out;
    for (const [k, v] of Object.entries(context)) {
      const t = this.parameters[k];
      if (t === undefined) {
        if (strictKeys) {
          throw fgaError(`found invalid context parameter: ${k}`, { reason: 'invalid_condition_context', code: FGA_VALIDATION_ERROR, details: { condition: this.name } });
        }
        continue;
      }
      try {
        out[k] = convertParameter(t, v);
      } catch (err) {
        throw fgaError(`failed to convert context parameter '${k}' of condition '${this.name}': ${(err as Error).message}`, { reason: 'invalid_condition_context', code: FGA_VALIDATION_ERROR, details: { condition: this.name, parameter: k } });
      }
    }
    return out;
  }

  /**
   * Evaluates the condition with the request context merged under the
   * tuple's context. Returns the boolean result; throws `invalid_argument`
   * (OpenFGA 2000) with reason `missing_condition_parameters`,
   * `condition_evaluation_failed`, or `condition_cost_exceeded` when the
   * evaluation costs more than {@link costLimit}.
   */
  evaluate(tupleContext: Record<string, unknown> | undefined, requestContext: Record<string, unknown> | undefined): boolean {
    const merged: Record<string, unknown> = { ...(requestContext ?? {}), ...(tupleContext ?? {}) };
    const typed = this.validateContext(merged, false);
    // OpenFGA requires every declared parameter, even when the expression
    // could be decided without it (abac_tests.yaml direct_relations_with_condition).
    const missing = Object.keys(this.parameters).filter((p) => !(p in typed));
    if (missing.length > 0) {
      throw fgaError(`failed to evaluate relationship condition '${this.name}': missing context parameters: ${missing.join(', ')}`, { reason: 'missing_condition_parameters', code: FGA_VALIDATION_ERROR, details: { condition: this.name, missing } });
    }
    let result: unknown;
    try {
      result = this.#program.run(typed, this.costLimit).value;
    } catch (err) {
      if (err instanceof CostLimitError) {
        throw fgaError(`failed to evaluate relationship condition '${this.name}': operation cancelled: actual cost limit exceeded`, { reason: 'condition_cost_exceeded', code: FGA_VALIDATION_ERROR, details: { condition: this.name, cost_limit: this.costLimit } });
      }
      throw fgaError(`failed to evaluate relationship condition '${this.name}': ${(err as Error).message.split('\n')[0]}`, { reason: 'condition_evaluation_failed', code: FGA_VALIDATION_ERROR, details: { condition: this.name } });
    }
    if (typeof result !== 'boolean') {
      throw fgaError(`condition '${this.name}' did not produce a bool`, {
        reason: 'condition_evaluation_failed',
        code: FGA_VALIDATION_ERROR,
        details: { condition: this.name },
      });
    }
    return result;
  }
}

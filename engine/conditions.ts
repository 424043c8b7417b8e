/**
 * Conditions (ABAC): CEL expressions over typed parameters, compiled when a
 * model is written and evaluated per tuple during resolution.
 *
 * CEL comes from `@marcbachmann/cel-js`. OpenFGA's extra CEL type `ipaddress`
 * (with `ipaddress("…")` and `.in_cidr("…")`) is added through the library's
 * type and function registration API; the CIDR test itself uses
 * `node:net`'s `BlockList`, the smallest adapter that covers IPv4 and IPv6.
 *
 * Semantics follow OpenFGA (`internal/condition/condition.go`,
 * `internal/condition/types/*`):
 * - the request context is merged with the tuple's context, tuple values win;
 * - each value is converted to its declared parameter type (numbers to
 *   `int`/`uint` only when whole and in range, timestamps from RFC 3339
 *   strings, durations from strings such as `"10s"`); a value that does not
 *   convert is an error;
 * - a declared parameter missing from the merged context is a "missing
 *   context parameters" error, even when the expression would not need it;
 * - the expression must produce a bool.
 *
 * Not implemented: OpenFGA's CEL cost limit (100). Expressions are at most
 * 512 bytes and CEL has no loops beyond the bounded macros over the given
 * lists, so evaluation time is bounded by the context size.
 */
import { BlockList, isIP } from 'node:net';
import { Environment, evaluate } from '@marcbachmann/cel-js';
import type { Condition, ConditionParamTypeRef } from './model.ts';
import { FGA_VALIDATION_ERROR, fgaError, show } from './tuple.ts';

/** OpenFGA's `ipaddress` CEL type. */
export class IPAddress {
  readonly address: string;
  readonly family: 'ipv4' | 'ipv6';
  constructor(address: string) {
    const v = isIP(address);
    if (v === 0) throw new TypeError(`invalid ip address '${address}'`);
    this.address = address;
    this.family = v === 4 ? 'ipv4' : 'ipv6';
  }
  /** True when this address lies in `cidr` (`a.b.c.d/n` or an IPv6 prefix). */
  inCidr(cidr: string): boolean {
    const slash = cidr.indexOf('/');
    if (slash < 0) throw new TypeError(`invalid cidr '${cidr}'`);
    const net = cidr.slice(0, slash);
    const prefix = Number(cidr.slice(slash + 1));
    const v = isIP(net);
    if (v === 0 || !Number.isInteger(prefix) || prefix < 0 || prefix > (v === 4 ? 32 : 128)) {
      throw new TypeError(`invalid cidr '${cidr}'`);
    }
    if ((v === 4 ? 'ipv4' : 'ipv6') !== this.family) return false;
    const list = new BlockList();
    list.addSubnet(net, prefix, this.family);
    return list.check(this.address, this.family);
  }
  toString(): string {
    return this.address;
  }
}

const UnsignedInt = (evaluate('1u') as object).constructor as new (value: bigint | number) => object;

const BASE_ENV = new Environment({ homogeneousAggregateLiterals: false })
  .registerType('ipaddress', IPAddress)
  .registerFunction('ipaddress(string): ipaddress', (s: string) => new IPAddress(s))
  .registerFunction('ipaddress.in_cidr(string): bool', (ip: IPAddress, cidr: string) => ip.inCidr(cidr));

/** Used only to parse duration and timestamp strings with CEL's own parsers. */
const CONVERT_ENV = new Environment().registerVariable('s', 'string');

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

function toBigInt(v: unknown): bigint | undefined {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number' && Number.isInteger(v)) return BigInt(v);
  if (typeof v === 'string' && /^-?\d+$/u.test(v.trim())) return BigInt(v.trim());
  return undefined;
}

function toNumber(v: unknown): number | undefined {
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v))) return Number(v);
  return undefined;
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
      const n = toBigInt(v);
      if (n !== undefined && n >= INT64_MIN && n <= INT64_MAX) return n;
      break;
    }
    case 'TYPE_NAME_UINT': {
      const n = toBigInt(v);
      if (n !== undefined && n >= 0n && n <= UINT64_MAX) return new UnsignedInt(n);
      break;
    }
    case 'TYPE_NAME_DOUBLE': {
      const n = toNumber(v);
      if (n !== undefined) return n;
      break;
    }
    case 'TYPE_NAME_DURATION':
      if (typeof v === 'string') {
        try {
          return CONVERT_ENV.evaluate('duration(s)', { s: v }) as object;
        } catch {
          break;
        }
      }
      break;
    case 'TYPE_NAME_TIMESTAMP':
      if (typeof v === 'string') {
        try {
          return CONVERT_ENV.evaluate('timestamp(s)', { s: v }) as Date;
        } catch {
          break;
        }
      }
      break;
    case 'TYPE_NAME_IPADDRESS':
      if (typeof v === 'string' && isIP(v) !== 0) return new IPAddress(v);
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
  readonly #program: (ctx: Record<string, unknown>) => unknown;

  /** Compiles and type-checks `condition`; throws `TypeError` with a client-safe message when it does not compile. */
  constructor(condition: Condition) {
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
    const env = BASE_ENV.clone();
    for (const [param, type] of Object.entries(this.parameters)) {
      env.registerVariable(param, celTypeName(type));
    }
    let checked: { valid: boolean; type?: string; error?: { message: string } };
    try {
      checked = env.check(condition.expression) as typeof checked;
    } catch (err) {
      throw new TypeError(`condition '${condition.name}' does not compile: ${(err as Error).message.split('\n')[0]}`);
    }
    if (!checked.valid) {
      throw new TypeError(`condition '${condition.name}' does not compile: ${checked.error?.message.split('\n')[0] ?? 'invalid'}`);
    }
    if (checked.type !== 'bool' && checked.type !== 'dyn') {
      throw new TypeError(`condition '${condition.name}' must produce a bool, not ${checked.type ?? 'unknown'}`);
    }
    const parsed = env.parse(condition.expression);
    this.#program = (ctx) => parsed(ctx) as unknown;
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
   * (OpenFGA 2000) with reason `missing_condition_parameters` or
   * `condition_evaluation_failed`.
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
      result = this.#program(typed);
    } catch (err) {
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

/**
 * Validation of the client options: unknown keys, wrong types and malformed
 * addresses are refused with `invalid_argument` naming the option, before
 * anything connects.
 */
import { LatchkeyError } from '../engine/errors.ts';
import type { AdminClientOptions, ClientOptions, ClientProtocol } from './types.ts';

/** The default gRPC port of the service (spec, Client library behavior 2). */
export const DEFAULT_GRPC_PORT = 9091;

/** The options a client runs with, checked and normalised. */
export interface ResolvedOptions {
  readonly protocol: ClientProtocol;
  /** `service_url` without trailing slashes. */
  readonly serviceUrl: string;
  /** `Origin` sent on every HTTP request (the service's own origin, which its CSRF check accepts). */
  readonly origin: string;
  readonly grpcEndpoint: string;
  /** TLS for gRPC: on when `service_url` is https. */
  readonly grpcTls: boolean;
  /** Headers (gRPC: metadata) sent on every call. */
  readonly headers: Readonly<Record<string, string>>;
  readonly clientId: string | undefined;
}

const PROTOCOLS: readonly ClientProtocol[] = ['graphql', 'rest', 'grpc'];
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const RESERVED_HEADERS = new Set(['content-type', 'content-length', 'host', 'x-service-admin-secret']);

function bad(option: string, problem: string): LatchkeyError {
  return new LatchkeyError('invalid_argument', `${option}: ${problem}`, { reason: 'invalid_client_option', details: { option } });
}

function requireString(o: Record<string, unknown>, key: string): string {
  const v = o[key];
  if (typeof v !== 'string' || v.length === 0) throw bad(key, 'is required (a non-empty string)');
  return v;
}

function checkKeys(o: Record<string, unknown>, allowed: readonly string[]): void {
  for (const k of Object.keys(o)) if (!allowed.includes(k)) throw bad(k, `is not a known option (known: ${allowed.join(', ')})`);
}

function parseServiceUrl(raw: string): { url: string; origin: string; hostname: string; tls: boolean } {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw bad('service_url', 'must be an absolute http or https URL');
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw bad('service_url', 'must be an http or https URL');
  if (u.search || u.hash || u.username || u.password) throw bad('service_url', 'must not carry a query, fragment or credentials');
  const path = u.pathname.replace(/\/+$/, '');
  return { url: `${u.origin}${path}`, origin: u.origin, hostname: u.hostname, tls: u.protocol === 'https:' };
}

function grpcEndpoint(o: Record<string, unknown>, hostname: string): string {
  const v = o.grpc_endpoint;
  if (v === undefined) return `${hostname}:${DEFAULT_GRPC_PORT}`;
  if (typeof v !== 'string' || !/^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):\d{1,5}$/.test(v))
    throw bad('grpc_endpoint', 'must be host:port (e.g. auth.example.com:9091)');
  return v;
}

function protocolOf(o: Record<string, unknown>): ClientProtocol {
  const v = o.protocol ?? 'graphql';
  if (typeof v !== 'string' || !PROTOCOLS.includes(v as ClientProtocol)) throw bad('protocol', `must be one of ${PROTOCOLS.join(', ')}`);
  return v as ClientProtocol;
}

function asObject(options: unknown): Record<string, unknown> {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) throw bad('options', 'must be an object');
  return options as Record<string, unknown>;
}

/** Checks the user client options. */
export function resolveClientOptions(options: ClientOptions): ResolvedOptions {
  const o = asObject(options);
  checkKeys(o, ['client_id', 'service_url', 'protocol', 'grpc_endpoint']);
  const clientId = requireString(o, 'client_id');
  const service = parseServiceUrl(requireString(o, 'service_url'));
  return Object.freeze({
    protocol: protocolOf(o),
    serviceUrl: service.url,
    origin: service.origin,
    grpcEndpoint: grpcEndpoint(o, service.hostname),
    grpcTls: service.tls,
    headers: Object.freeze({}),
    clientId,
  });
}

/** Checks the admin client options. */
export function resolveAdminOptions(options: AdminClientOptions): ResolvedOptions {
  const o = asObject(options);
  checkKeys(o, ['service_url', 'admin_secret', 'extra_headers', 'protocol', 'grpc_endpoint']);
  const service = parseServiceUrl(requireString(o, 'service_url'));
  const secret = requireString(o, 'admin_secret');
  const headers: Record<string, string> = {};
  if (o.extra_headers !== undefined) {
    const extra = o.extra_headers;
    if (extra === null || typeof extra !== 'object' || Array.isArray(extra)) throw bad('extra_headers', 'must be an object of strings');
    for (const [k, v] of Object.entries(extra)) {
      const name = k.toLowerCase();
      if (!HEADER_NAME.test(k)) throw bad(`extra_headers.${k}`, 'is not a valid header name');
      if (typeof v !== 'string') throw bad(`extra_headers.${k}`, 'must be a string');
      if (RESERVED_HEADERS.has(name)) throw bad(`extra_headers.${k}`, 'is set by the client itself');
      headers[name] = v;
    }
  }
  headers['x-service-admin-secret'] = secret;
  return Object.freeze({
    protocol: protocolOf(o),
    serviceUrl: service.url,
    origin: service.origin,
    grpcEndpoint: grpcEndpoint(o, service.hostname),
    grpcTls: service.tls,
    headers: Object.freeze(headers),
    clientId: undefined,
  });
}

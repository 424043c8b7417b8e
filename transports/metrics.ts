/**
 * Prometheus metrics (prom-client): process metrics plus request counts and
 * latency histograms labelled by operation, transport and code. Served only on
 * the metrics listener, never on the HTTP port.
 */
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export interface Metrics {
  readonly registry: Registry;
  /** Records one finished request. `op` is an operation name or a fixed route label (never an id). */
  observe(op: string, transport: string, code: string, seconds: number): void;
  /**
   * Counts one security event: a refused credential or token, a denied
   * subject, a lockout or rate limit, a CSRF refusal. `reason` is the error's
   * reason (a fixed set, see docs/errors.md), else its code.
   */
  securityEvent(reason: string): void;
  /** The exposition text and its content type. */
  render(): Promise<{ contentType: string; body: string }>;
}

/** The error codes counted as security events (see {@link Metrics.securityEvent}). */
export const SECURITY_EVENT_CODES: ReadonlySet<string> = new Set(['unauthenticated', 'permission_denied', 'resource_exhausted']);

export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'latchkey_' });
  const requests = new Counter({
    name: 'latchkey_transport_requests_total',
    help: 'Requests served, by operation, transport and result code',
    labelNames: ['op', 'transport', 'code'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'latchkey_transport_request_duration_seconds',
    help: 'Request latency, by operation, transport and result code',
    labelNames: ['op', 'transport', 'code'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  const security = new Counter({
    name: 'latchkey_security_events_total',
    help: 'Refused credentials and tokens, denied subjects, lockouts, rate limits and CSRF refusals, by reason',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  // Label lookups hash the label set; caching the children keeps the hot path to a Map lookup.
  const children = new Map<string, { c: { inc(): void }; h: { observe(v: number): void } }>();
  return {
    registry,
    observe(op, transport, code, seconds) {
      const key = `${op}\u0000${transport}\u0000${code}`;
      let child = children.get(key);
      if (!child) {
        child = { c: requests.labels(op, transport, code), h: duration.labels(op, transport, code) };
        children.set(key, child);
      }
      child.c.inc();
      child.h.observe(seconds);
    },
    securityEvent(reason) {
      security.labels(reason).inc();
    },
    async render() {
      return { contentType: registry.contentType, body: await registry.metrics() };
    },
  };
}

/**
 * Prometheus metrics (prom-client): process metrics plus request counts and
 * latency histograms labelled by operation, transport and code. Served only on
 * the metrics listener, never on the HTTP port.
 *
 * Requests and security events are counted in this module's own series from
 * the first request on; prom-client (with the OpenTelemetry API it loads, about
 * a hundred modules) is loaded at the first scrape, which builds the registry,
 * starts the process metrics and exports the series through it. A server whose
 * metrics are never scraped never loads it. The process metrics are cumulative
 * where the process keeps the total (CPU, memory, handles); the event loop's
 * delay and the collections' durations are observed from the first scrape on.
 */
import { createRequire } from 'node:module';
import type { Registry } from 'prom-client';

const requirePackage = createRequire(import.meta.url);

export interface Metrics {
  /** prom-client's registry, built (and prom-client loaded) when first read. */
  readonly registry: Registry;
  /** Records one finished request. `op` is an operation name or a fixed route label (never an id). */
  observe(op: string, transport: string, code: string, seconds: number): void;
  /**
   * Counts one security event: a refused credential or token, a denied
   * subject, a lockout or rate limit, a CSRF refusal. `reason` is the error's
   * reason (a fixed set, see docs/errors.md), else its code.
   */
  securityEvent(reason: string): void;
  /**
   * Registers a counter without labels whose value is `read()` when the
   * metrics are scraped: for a count kept as a plain integer where each
   * request counts (no label lookup per request).
   */
  countOf(name: string, help: string, read: () => number): void;
  /** The exposition text and its content type. */
  render(): Promise<{ contentType: string; body: string }>;
}

/** The error codes counted as security events (see {@link Metrics.securityEvent}). */
export const SECURITY_EVENT_CODES: ReadonlySet<string> = new Set(['unauthenticated', 'permission_denied', 'resource_exhausted']);

const REQUEST_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5] as const;

/** One label set's counts: per bucket (not cumulative), sum and count. */
interface Series {
  readonly labels: Readonly<Record<'op' | 'transport' | 'code', string>>;
  readonly buckets: Float64Array;
  sum: number;
  count: number;
}

type ExportedValue = { labels: Record<string, string | number>; sharedLabels?: Record<string, string>; value: number; metricName?: string; exemplar?: null | undefined };
type Exported = { name: string; help: string; type: string; values: ExportedValue[]; aggregator: 'sum' };

/**
 * The request histogram and counter, kept by label set in one object and
 * exported through prom-client's registry in the exact text prom-client's
 * Histogram and Counter produce (`le` first, then the labels). Why not
 * prom-client's own: its `observe` hashes the label object on every call,
 * which cost 6-9 µs per request on the server path (docs/performance.md,
 * Server path); here a request is three Map lookups by its label strings
 * and a bucket scan. The counter is the histogram's count (every request is
 * observed exactly once), so it needs no bookkeeping of its own.
 */
class RequestSeries {
  /** In order of first observation, for the export. */
  readonly #series: Series[] = [];
  /**
   * op → transport → code → series. The labels are the same few string
   * objects on every call (a row's name, a protocol, an error code), whose
   * hashes V8 keeps: three lookups cost less than hashing a key built anew
   * on each request.
   */
  readonly #index = new Map<string, Map<string, Map<string, Series>>>();

  observe(op: string, transport: string, code: string, seconds: number): void {
    let byTransport = this.#index.get(op);
    if (byTransport === undefined) this.#index.set(op, (byTransport = new Map()));
    let byCode = byTransport.get(transport);
    if (byCode === undefined) byTransport.set(transport, (byCode = new Map()));
    let s = byCode.get(code);
    if (s === undefined) {
      s = { labels: { op, transport, code }, buckets: new Float64Array(REQUEST_BUCKETS.length), sum: 0, count: 0 };
      byCode.set(code, s);
      this.#series.push(s);
    }
    if (!Number.isFinite(seconds)) return;
    let i = 0;
    while (i < REQUEST_BUCKETS.length && seconds > (REQUEST_BUCKETS[i] as number)) i++;
    if (i < REQUEST_BUCKETS.length) (s.buckets[i] as number)++;
    s.sum += seconds;
    s.count++;
  }

  /** The histogram as prom-client's Histogram exports it (`getForPromString`: `le` as the label, the rest shared). */
  histogram(name: string, help: string, splay: boolean): Exported {
    const values: ExportedValue[] = [];
    // `exemplar` as prom-client sets it (null on buckets, undefined on sum and count), so that JSON exports match too.
    const row = (le: Record<string, string | number>, value: number, metricName: string, labels: Series['labels'], exemplar: null | undefined): ExportedValue =>
      splay ? { labels: { ...labels, ...le }, value, metricName, exemplar } : { labels: le, sharedLabels: labels, value, metricName, exemplar };
    for (const s of this.#series) {
      let acc = 0;
      REQUEST_BUCKETS.forEach((le, i) => {
        acc += s.buckets[i] as number;
        values.push(row({ le }, acc, `${name}_bucket`, s.labels, null));
      });
      values.push(
        row({ le: '+Inf' }, s.count, `${name}_bucket`, s.labels, null),
        row({}, s.sum, `${name}_sum`, s.labels, undefined),
        row({}, s.count, `${name}_count`, s.labels, undefined),
      );
    }
    return { name, help, type: 'histogram', values, aggregator: 'sum' };
  }

  counter(name: string, help: string): Exported {
    return { name, help, type: 'counter', values: this.#series.map((s) => ({ labels: { ...s.labels }, value: s.count })), aggregator: 'sum' };
  }
}

/** A metric as prom-client's registry reads it: `get()` / `getForPromString()`, its name and type (its Metric contract). */
interface Exportable {
  name: string;
  help: string;
  type: 'counter' | 'histogram';
  aggregator: 'sum';
  get(): Promise<Exported>;
  getForPromString?(): Promise<Exported>;
  reset(): void;
}

export function createMetrics(): Metrics {
  const series = new RequestSeries();
  const requestsName = 'latchkey_transport_requests_total';
  const requestsHelp = 'Requests served, by operation, transport and result code';
  const durationName = 'latchkey_transport_request_duration_seconds';
  const durationHelp = 'Request latency, by operation, transport and result code';
  const securityName = 'latchkey_security_events_total';
  const securityHelp = 'Refused credentials and tokens, denied subjects, lockouts, rate limits and CSRF refusals, by reason';
  /** Security events by reason, in order of first event: what prom-client's labelled Counter keeps and exports. */
  const security = new Map<string, { value: number; labels: { reason: string } }>();
  const exported: Exportable[] = [
    { name: requestsName, help: requestsHelp, type: 'counter', aggregator: 'sum', get: async () => series.counter(requestsName, requestsHelp), reset: () => undefined },
    {
      name: durationName,
      help: durationHelp,
      type: 'histogram',
      aggregator: 'sum',
      get: async () => series.histogram(durationName, durationHelp, true),
      getForPromString: async () => series.histogram(durationName, durationHelp, false),
      reset: () => undefined,
    },
    {
      name: securityName,
      help: securityHelp,
      type: 'counter',
      aggregator: 'sum',
      get: async () => ({ name: securityName, help: securityHelp, type: 'counter', values: [...security.values()].map((v) => ({ value: v.value, labels: { ...v.labels } })), aggregator: 'sum' }),
      reset: () => undefined,
    },
  ];
  let registry: Registry | undefined;
  const register = (metric: Exportable): void => {
    registry?.registerMetric(metric as unknown as Parameters<Registry['registerMetric']>[0]);
  };
  const built = (): Registry => {
    if (registry !== undefined) return registry;
    const prom = requirePackage('prom-client') as typeof import('prom-client');
    const r = new prom.Registry();
    prom.collectDefaultMetrics({ register: r, prefix: 'latchkey_' });
    registry = r;
    for (const m of exported) register(m);
    return r;
  };
  return {
    get registry(): Registry {
      return built();
    },
    observe(op, transport, code, seconds) {
      series.observe(op, transport, code, seconds);
    },
    securityEvent(reason) {
      const s = security.get(reason);
      if (s === undefined) security.set(reason, { value: 1, labels: { reason } });
      else s.value++;
    },
    countOf(name, help, read) {
      const metric: Exportable = {
        name,
        help,
        type: 'counter',
        aggregator: 'sum',
        get: async (): Promise<Exported> => ({ name, help, type: 'counter', values: [{ labels: {}, value: read() }], aggregator: 'sum' }),
        reset: () => undefined,
      };
      exported.push(metric);
      register(metric);
    },
    async render() {
      const r = built();
      return { contentType: r.contentType, body: await r.metrics() };
    },
  };
}

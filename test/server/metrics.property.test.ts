/**
 * The request metrics and the security events (server/metrics.ts) keep their
 * own series instead of prom-client's Histogram and Counters; the exposition
 * must not change. For random observations and events, the text of our
 * registry's request and security metrics equals the text prom-client's own
 * Histogram and Counters give for the same observations, in Prometheus and in
 * JSON form. prom-client itself is loaded at the first scrape.
 */
import test from 'ava';
import fc from 'fast-check';
import { Counter, Histogram, Registry } from 'prom-client';
import { createMetrics } from '../../server/metrics.ts';

const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];
const NAMES = ['latchkey_transport_requests_total', 'latchkey_transport_request_duration_seconds', 'latchkey_security_events_total'];
const SECURITY_HELP = 'Refused credentials and tokens, denied subjects, lockouts, rate limits and CSRF refusals, by reason';

/** The blocks of the exposition text that belong to the request metrics. */
function requestBlocks(text: string): string[] {
  return text.split('\n\n').map((block) => block.trim()).filter((block) => NAMES.some((n) => block.includes(`# HELP ${n} `)));
}

test('the request histogram and counters export exactly what prom-client Histogram and Counters export', async (t) => {
  const observation = fc.record({
    op: fc.constantFrom('meta', 'check_permissions', 'validate_jwt_token', 'http'),
    transport: fc.constantFrom('rest', 'graphql', 'grpc'),
    code: fc.constantFrom('ok', 'unauthenticated', 'invalid_argument'),
    seconds: fc.oneof(fc.constantFrom(...BUCKETS, 0, 7), fc.double({ min: 0, max: 8, noNaN: true })),
  });
  const event = fc.constantFrom('invalid_credentials', 'token_revoked', 'csrf', 'rate_limited', 'permission_denied');
  await fc.assert(
    fc.asyncProperty(fc.array(observation, { maxLength: 60 }), fc.array(event, { maxLength: 20 }), async (observations, events) => {
      const ours = createMetrics();
      const reference = new Registry();
      const counter = new Counter({ name: NAMES[0] as string, help: 'Requests served, by operation, transport and result code', labelNames: ['op', 'transport', 'code'], registers: [reference] });
      const histogram = new Histogram({ name: NAMES[1] as string, help: 'Request latency, by operation, transport and result code', labelNames: ['op', 'transport', 'code'], buckets: BUCKETS, registers: [reference] });
      const security = new Counter({ name: NAMES[2] as string, help: SECURITY_HELP, labelNames: ['reason'], registers: [reference] });
      for (const o of observations) {
        ours.observe(o.op, o.transport, o.code, o.seconds);
        counter.labels(o.op, o.transport, o.code).inc();
        histogram.labels(o.op, o.transport, o.code).observe(o.seconds);
      }
      for (const reason of events) {
        ours.securityEvent(reason);
        security.labels(reason).inc();
      }
      t.deepEqual(requestBlocks((await ours.render()).body), requestBlocks(await reference.metrics()));
      const json = async (r: Registry): Promise<unknown> => (await r.getMetricsAsJSON()).filter((m) => NAMES.includes(m.name));
      t.deepEqual(await json(ours.registry), await json(reference));
    }),
    { numRuns: 50 },
  );
});

test('events counted before the first scrape are in it, and a metric added after it is exported', async (t) => {
  const ours = createMetrics();
  ours.observe('check_permissions', 'rest', 'ok', 0.002);
  ours.securityEvent('invalid_credentials');
  ours.securityEvent('invalid_credentials');
  const first = (await ours.render()).body;
  t.regex(first, /^latchkey_transport_requests_total\{op="check_permissions",transport="rest",code="ok"\} 1$/m);
  t.regex(first, /^latchkey_security_events_total\{reason="invalid_credentials"\} 2$/m);
  t.regex(first, /^latchkey_process_cpu_user_seconds_total \d/m);
  let n = 5;
  ours.countOf('latchkey_test_things_total', 'Things', () => n);
  n = 7;
  ours.securityEvent('csrf');
  const second = (await ours.render()).body;
  t.regex(second, /^latchkey_test_things_total 7$/m);
  t.regex(second, /^latchkey_security_events_total\{reason="csrf"\} 1$/m);
  t.is(ours.registry, ours.registry);
});

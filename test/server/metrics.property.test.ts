/**
 * The request metrics (server/metrics.ts) keep their own series instead of
 * prom-client's Histogram and Counter; the exposition must not change. For
 * random observations, the text of our registry's request metrics equals the
 * text prom-client's own Histogram and Counter give for the same observations,
 * in Prometheus and in JSON form.
 */
import test from 'ava';
import fc from 'fast-check';
import { Counter, Histogram, Registry } from 'prom-client';
import { createMetrics } from '../../server/metrics.ts';

const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];
const NAMES = ['latchkey_transport_requests_total', 'latchkey_transport_request_duration_seconds'];

/** The blocks of the exposition text that belong to the request metrics. */
function requestBlocks(text: string): string[] {
  return text.split('\n\n').map((block) => block.trim()).filter((block) => NAMES.some((n) => block.includes(`# HELP ${n} `)));
}

test('the request histogram and counter export exactly what prom-client Histogram and Counter export', async (t) => {
  const observation = fc.record({
    op: fc.constantFrom('meta', 'check_permissions', 'validate_jwt_token', 'http'),
    transport: fc.constantFrom('rest', 'graphql', 'grpc'),
    code: fc.constantFrom('ok', 'unauthenticated', 'invalid_argument'),
    seconds: fc.oneof(fc.constantFrom(...BUCKETS, 0, 7), fc.double({ min: 0, max: 8, noNaN: true })),
  });
  await fc.assert(
    fc.asyncProperty(fc.array(observation, { maxLength: 60 }), async (observations) => {
      const ours = createMetrics();
      const reference = new Registry();
      const counter = new Counter({ name: NAMES[0] as string, help: 'Requests served, by operation, transport and result code', labelNames: ['op', 'transport', 'code'], registers: [reference] });
      const histogram = new Histogram({ name: NAMES[1] as string, help: 'Request latency, by operation, transport and result code', labelNames: ['op', 'transport', 'code'], buckets: BUCKETS, registers: [reference] });
      for (const o of observations) {
        ours.observe(o.op, o.transport, o.code, o.seconds);
        counter.labels(o.op, o.transport, o.code).inc();
        histogram.labels(o.op, o.transport, o.code).observe(o.seconds);
      }
      t.deepEqual(requestBlocks((await ours.render()).body), requestBlocks(await reference.metrics()));
      const json = async (r: Registry): Promise<unknown> => (await r.getMetricsAsJSON()).filter((m) => NAMES.includes(m.name));
      t.deepEqual(await json(ours.registry), await json(reference));
    }),
    { numRuns: 50 },
  );
});

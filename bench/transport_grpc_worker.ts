/**
 * A gRPC load worker for the transport benchmark (runs in a worker thread):
 * keeps `concurrency` `Meta` calls in flight over its own channels for
 * `warmup` then `seconds` seconds, and posts the measured latencies back.
 */
import { parentPort, workerData } from 'node:worker_threads';
import * as grpc from '@grpc/grpc-js';
import { OPERATIONS, generateProto, loadPackageDefinition } from '../transports/index.ts';

interface Job {
  address: string;
  concurrency: number;
  channels: number;
  warmup: number;
  seconds: number;
  id: number;
}

type Unary = (req: unknown, md: grpc.Metadata, cb: (err: grpc.ServiceError | null, res: unknown) => void) => void;

const job = workerData as Job;
const pkg = grpc.loadPackageDefinition(loadPackageDefinition(generateProto(OPERATIONS))) as unknown as {
  latchkey: { v1: { Latchkey: new (a: string, c: grpc.ChannelCredentials, o: object) => grpc.Client } };
};
const clients = Array.from(
  { length: job.channels },
  (_, i) => new pkg.latchkey.v1.Latchkey(job.address, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1, 'bench.channel': `${job.id}-${i}` }),
);
const md = new grpc.Metadata();

function phase(durationS: number): Promise<{ latencies: number[]; errors: number; elapsed: number }> {
  return new Promise((resolve) => {
    const latencies: number[] = [];
    let errors = 0;
    let active = 0;
    const started = performance.now();
    const deadline = started + durationS * 1000;
    const one = (client: grpc.Client): void => {
      if (performance.now() >= deadline) {
        if (--active === 0) resolve({ latencies, errors, elapsed: (performance.now() - started) / 1000 });
        return;
      }
      const t0 = performance.now();
      (client as unknown as { Meta: Unary }).Meta.call(client, {}, md, (err, res) => {
        latencies.push(performance.now() - t0);
        if (err || !(res as { version?: string }).version) errors++;
        one(client);
      });
    };
    for (let i = 0; i < job.concurrency; i++) {
      active++;
      one(clients[i % clients.length] as grpc.Client);
    }
  });
}

await phase(job.warmup);
const result = await phase(job.seconds);
for (const c of clients) c.close();
parentPort?.postMessage(result);

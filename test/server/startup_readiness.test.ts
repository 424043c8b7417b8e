/**
 * Liveness and readiness while `latchkey serve` starts (docs/scaling.md): the
 * HTTP listener opens before gRPC is loaded, so `/healthz` may answer first;
 * `/readyz` answers 200 only once every listener is bound. The bin is started
 * as `npm start` runs it, on SQLite with the default flags, and both probes are
 * polled from the spawn on. At the first `/readyz` 200 the gRPC health service
 * must already answer SERVING, and every `/readyz` refusal before it must say
 * why (starting, or the database).
 */
import test from 'ava';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../helpers/loopback.ts';
import { REPO_ROOT } from '../helpers/shared.ts';
import { stopChild as stop } from '../helpers/instances.ts';

/** True when a TCP connection to the port is accepted (no library to load first: asked the moment /readyz answers). */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** The gRPC health service's answer for the whole server (`''`), or the error's message. */
async function grpcHealth(port: number): Promise<string> {
  const [grpc, loader, health] = await Promise.all([import('@grpc/grpc-js'), import('@grpc/proto-loader'), import('grpc-health-check')]);
  const def = grpc.loadPackageDefinition(loader.loadSync(health.protoPath, { enums: String })) as unknown as {
    grpc: { health: { v1: { Health: new (a: string, c: unknown) => { check(req: unknown, o: { deadline: number }, cb: (e: Error | null, r: { status: string }) => void): void; close(): void } } } };
  };
  const client = new def.grpc.health.v1.Health(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  try {
    return await new Promise<string>((resolve) => client.check({ service: '' }, { deadline: Date.now() + 5000 }, (err, res) => resolve(err ? err.message : res.status)));
  } finally {
    client.close();
  }
}

test('/healthz answers from the HTTP listener on; /readyz only once gRPC serves too, saying why before', async (t) => {
  t.timeout(120_000);
  const dir = await mkdtemp(join(tmpdir(), 'lk-readiness-'));
  const [http, grpc, metrics] = [await freePort(), await freePort(), await freePort()];
  const child = spawn(process.execPath, [
    '--max-semi-space-size=16', join(REPO_ROOT, 'bin', 'latchkey.js'), 'serve',
    '--host', '127.0.0.1', '--http-port', String(http), '--grpc-port', String(grpc), '--metrics-port', String(metrics),
    '--database-type', 'sqlite', '--database-url', join(dir, 'readiness.sqlite'),
    '--client-id', 'readiness-client', '--client-secret', 'readiness-client-secret-0123456789',
    '--jwt-type', 'HS256', '--jwt-secret', 'readiness-jwt-secret-0123456789abcdef0123456789',
    '--admin-secret', 'readiness-admin-secret-0123456789', '--log-level', 'silent',
  ], { env: { ...process.env, NODE_COMPILE_CACHE: join(dir, 'compile-cache') }, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (b: Buffer) => (stderr += b.toString()));
  try {
    const started = Date.now();
    let healthyAt: number | undefined;
    const refusals: Record<string, unknown>[] = [];
    for (;;) {
      if (child.exitCode !== null) throw new Error(`the server exited (${child.exitCode}): ${stderr.slice(0, 2000)}`);
      if (Date.now() - started > 90_000) throw new Error(`the server was not ready within 90 s: ${stderr.slice(0, 2000)}`);
      const [live, ready] = await Promise.all([
        fetch(`http://127.0.0.1:${http}/healthz`).then((r) => r.status, () => 0),
        fetch(`http://127.0.0.1:${http}/readyz`).then(async (r) => ({ status: r.status, body: (await r.json()) as Record<string, unknown> }), () => undefined),
      ]);
      if (live === 200) healthyAt ??= Date.now();
      if (ready?.status === 200) {
        t.true(await accepts(grpc), 'the gRPC port accepts connections once /readyz answers 200');
        break;
      }
      if (ready !== undefined) refusals.push(ready.body);
      await new Promise((r) => setTimeout(r, 5));
    }
    t.is(await grpcHealth(grpc), 'SERVING', 'gRPC serves once /readyz answers 200');
    t.not(healthyAt, undefined, '/healthz answered 200 no later than /readyz');
    for (const body of refusals) {
      t.is(body['status'], 'not ready');
      t.true(body['starting'] === true || (body['checks'] as { database?: boolean } | undefined)?.database === false, `a refusal says why: ${JSON.stringify(body)}`);
    }
  } finally {
    await stop(child);
    await rm(dir, { recursive: true, force: true });
  }
});

/**
 * Runs the client scenario with the synchronous clients, in a worker thread:
 * a blocking client must not share a thread with the server it calls, and the
 * tests' server runs on the main thread.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { LatchkeySyncAdminClient, LatchkeySyncClient, type ClientProtocol } from '../../client/index.ts';
import { runScenario } from './scenario.ts';

const { protocol, httpUrl, grpcAddress, tag, clientId, adminSecret } = workerData as {
  protocol: ClientProtocol;
  httpUrl: string;
  grpcAddress: string;
  tag: string;
  clientId: string;
  adminSecret: string;
};

const user = new LatchkeySyncClient({ client_id: clientId, service_url: httpUrl, protocol, grpc_endpoint: grpcAddress });
const bearer = new LatchkeySyncClient({ client_id: clientId, service_url: httpUrl, protocol, grpc_endpoint: grpcAddress });
const admin = new LatchkeySyncAdminClient({ service_url: httpUrl, admin_secret: adminSecret, protocol, grpc_endpoint: grpcAddress });
try {
  const result = await runScenario(user as never, bearer as never, admin as never, tag);
  parentPort?.postMessage({ ok: true, result });
} catch (err) {
  parentPort?.postMessage({ ok: false, error: String((err as Error)?.stack ?? err) });
} finally {
  user.close();
  bearer.close();
  admin.close();
}

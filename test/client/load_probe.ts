/**
 * Run as a child process by wire.test.ts: records every module the client
 * loads (a module resolve hook), makes one call, and prints the packages and
 * project files that were loaded.
 *   node load_probe.ts <service_url> <grpc_endpoint> <protocol>
 */
import { registerHooks } from 'node:module';
import { fileURLToPath } from 'node:url';
import { relative } from 'node:path';
import { REPO_ROOT } from '../helpers/shared.ts';

const packages = new Set<string>();
const files = new Set<string>();
registerHooks({
  resolve(specifier, context, next) {
    const out = next(specifier, context);
    if (out.url.startsWith('file:')) {
      const path = fileURLToPath(out.url);
      const m = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(path);
      if (m?.[1]) packages.add(m[1]);
      else files.add(relative(REPO_ROOT, path));
    }
    return out;
  },
});

const [url = '', grpcEndpoint = '', protocol = 'graphql'] = process.argv.slice(2);
const { LatchkeyClient } = await import('../../client/index.ts');
const client = new LatchkeyClient({ client_id: 'probe', service_url: url, grpc_endpoint: grpcEndpoint, protocol: protocol as 'graphql' });
const meta = await client.meta();
await client.close();
process.stdout.write(JSON.stringify({ version: meta.version, packages: [...packages].sort(), files: [...files].sort() }));

/**
 * The shape shared by the rows an organization's admins call and the super-admin acts on
 * (organizations.ts, sso.ts): a user row placed at `/v1/<name>` on the `Latchkey` service, and its
 * super-admin variant `admin_<name>` (GraphQL `_<name>`, REST `/v1/admin/<name>`, the `LatchkeyAdmin`
 * gRPC service), which acts on any organization without the FGA check.
 */
import type { ObjectShape } from '../shape.ts';
import { row } from './auth.ts';
import { ALL_PROTOCOLS, defineOperation, type Operation } from './types.ts';

/** A user row's placement: `/v1/<name>`, the `Latchkey` service, called by a signed-in user. */
export const userRow = <const N extends string>(name: N, grpc: string) => ({ ...row(name, 'POST', grpc), auth: 'user' as const });

/** The super-admin variant of a row, typed after it. */
export type AdminVariant<R> = R extends Operation<infer N, infer I, infer O> ? Operation<`admin_${N}`, I, O, true> : never;

/** The super-admin variant of a management row. */
export function adminVariant<R extends Operation>(r: R): AdminVariant<R> {
  return defineOperation({
    name: `admin_${r.name}`,
    kind: r.kind,
    auth: 'super_admin',
    admin: true,
    input: r.input as ObjectShape,
    output: r.output as ObjectShape,
    graphql: `_${r.name}`,
    rest: { method: 'POST', path: `/v1/admin/${r.name}` },
    grpc: { method: r.grpc!.method },
    protocols: ALL_PROTOCOLS,
    doc: `Super-admin ${r.name}: on any organization, without the FGA check.`,
  }) as unknown as AdminVariant<R>;
}

/** The management rows followed by their super-admin variants. */
export function withAdminVariants<const Rs extends readonly Operation[]>(rows: Rs): readonly [...Rs, ...AdminVariant<Rs[number]>[]] {
  return [...rows, ...(rows.map((r) => adminVariant(r)) as AdminVariant<Rs[number]>[])];
}

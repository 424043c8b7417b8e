/**
 * The DynamoDB connection of the main database (`--database-type dynamodb`):
 * the only module that imports the AWS SDK. Every identity and admin store
 * on DynamoDB works through {@link DynamoDatabase}: plain JavaScript items
 * (the document client marshals them), single-item conditional writes, and
 * queries that read every page.
 *
 * Tables are per entity, named `<prefix><entity>`, each keyed by a string
 * partition key `pk` and a string sort key `sk` (docs/storage.md, "DynamoDB
 * main database", says why). {@link DynamoDatabase.ensureTable} creates a
 * missing table on startup (on-demand capacity) and waits until it is active.
 *
 * Multi-item changes use no TransactWriteItems: each is a sequence of
 * single-item conditional writes whose first write decides the outcome (the
 * commit point), and whose later writes are idempotent. This keeps one code
 * path for DynamoDB and the DynamoDB-API implementations that lack
 * transactions (dynalite, which the tests run on).
 *
 * The SDK is loaded when the first connection is opened, so a server on
 * another database never holds it in memory.
 */
import { createRequire } from 'node:module';
import type { DynamoDBClient, DynamoDBClientConfig, GlobalSecondaryIndex } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient, QueryCommandInput, ScanCommandInput } from '@aws-sdk/lib-dynamodb';
import { LatchkeyError } from '../engine/errors.ts';

type Sdk = { db: typeof import('@aws-sdk/client-dynamodb'); doc: typeof import('@aws-sdk/lib-dynamodb') };
let loadedSdk: Sdk | undefined;
const sdk = (): Sdk => {
  const require = createRequire(import.meta.url);
  return (loadedSdk ??= { db: require('@aws-sdk/client-dynamodb') as Sdk['db'], doc: require('@aws-sdk/lib-dynamodb') as Sdk['doc'] });
};

/** One stored item (attribute name → value). */
export type DynamoItem = Record<string, unknown>;

/** How to reach DynamoDB (the `--cloud-*` flags and `--database-url`). */
export interface DynamoOptions {
  /** `--cloud-region`. */
  region: string;
  /** `--database-url`: an endpoint for DynamoDB Local, dynalite or a compatible service (default: AWS's endpoint of the region). */
  endpoint?: string | undefined;
  /** `--cloud-access-key-id` (with the secret; default: the SDK's credential chain). */
  accessKeyId?: string | undefined;
  /** `--cloud-secret-access-key`. */
  secretAccessKey?: string | undefined;
  /** Prepended to every table name (default `latchkey_`). */
  tablePrefix?: string | undefined;
}

/** A condition (or filter) expression with its placeholders. */
export interface DynamoCondition {
  /** DynamoDB expression text, e.g. `attribute_not_exists(pk)` or `#s = :s`. */
  expression: string;
  names?: Record<string, string> | undefined;
  values?: DynamoItem | undefined;
}

/** A secondary index: its name and its string partition (and sort) key. */
export interface DynamoIndex {
  name: string;
  pk: string;
  /** The sort key: a string attribute unless `sortNumeric`. */
  sk?: string | undefined;
  sortNumeric?: boolean | undefined;
}

/** A table of one entity: `pk`/`sk` string keys and optional global secondary indexes. */
export interface DynamoTableDefinition {
  /** The entity name; the table is `<prefix><name>`. */
  name: string;
  indexes?: readonly DynamoIndex[] | undefined;
}

/** A key query: one partition, an optional sort-key range, in order. */
export interface DynamoQuery {
  index?: string | undefined;
  /** Partition key attribute and value (`pk` on the table). */
  pk: [string, unknown];
  /** Sort key condition, e.g. `['sk', 'begins_with', 'x#']`, `['sk', '>', 5]`. */
  sk?: [string, '=' | '<' | '<=' | '>' | '>=' | 'begins_with', unknown] | undefined;
  /** Newest (highest sort key) first when true. */
  descending?: boolean | undefined;
  filter?: DynamoCondition | undefined;
  /** Stop after this many matching items (all when absent). */
  limit?: number | undefined;
}

const isNamed = (err: unknown, name: string): boolean => (err as { name?: unknown } | null)?.name === name;

/** True when a conditional write failed its condition. */
export function isConditionFailed(err: unknown): boolean {
  return isNamed(err, 'ConditionalCheckFailedException');
}

function mergeNames(...all: (Record<string, string> | undefined)[]): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  for (const n of all) if (n) Object.assign(out, n);
  return Object.keys(out).length ? out : undefined;
}

function mergeValues(...all: (DynamoItem | undefined)[]): DynamoItem | undefined {
  const out: DynamoItem = {};
  for (const v of all) if (v) Object.assign(out, v);
  return Object.keys(out).length ? out : undefined;
}

/** The DynamoDB client of the process, with the helpers the stores share. */
export class DynamoDatabase {
  readonly #client: DynamoDBClient;
  readonly #doc: DynamoDBDocumentClient;
  readonly #prefix: string;
  readonly #ready = new Map<string, Promise<void>>();

  private constructor(client: DynamoDBClient, prefix: string) {
    this.#client = client;
    this.#doc = sdk().doc.DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
    this.#prefix = prefix;
  }

  /**
   * Creates the client (no request is made; {@link ping} proves it
   * reachable). Throws `invalid_argument` when the region is missing, the
   * endpoint is not a URL, or only one half of the key pair is given.
   */
  static open(options: DynamoOptions): DynamoDatabase {
    if (!options.region) throw new LatchkeyError('invalid_argument', 'DynamoDB needs --cloud-region', { reason: 'invalid_database_config' });
    const prefix = options.tablePrefix ?? 'latchkey_';
    if (!/^[A-Za-z0-9_.-]{0,128}$/.test(prefix)) throw new LatchkeyError('invalid_argument', 'invalid DynamoDB table prefix', { reason: 'invalid_database_config' });
    if (Boolean(options.accessKeyId) !== Boolean(options.secretAccessKey))
      throw new LatchkeyError('invalid_argument', '--cloud-access-key-id and --cloud-secret-access-key go together', { reason: 'invalid_database_config' });
    const config: DynamoDBClientConfig = { region: options.region, maxAttempts: 5 };
    if (options.endpoint) {
      try {
        new URL(options.endpoint);
      } catch {
        throw new LatchkeyError('invalid_argument', 'the DynamoDB endpoint (--database-url) is not a URL', { reason: 'invalid_database_config' });
      }
      config.endpoint = options.endpoint;
    }
    if (options.accessKeyId && options.secretAccessKey) config.credentials = { accessKeyId: options.accessKeyId, secretAccessKey: options.secretAccessKey };
    return new DynamoDatabase(new (sdk().db.DynamoDBClient)(config), prefix);
  }

  /** The full name of an entity's table. */
  tableName(entity: string): string {
    return `${this.#prefix}${entity}`;
  }

  /** True when the service answers a trivial request within `timeoutMs`. */
  async ping(timeoutMs = 2000): Promise<boolean> {
    try {
      await this.#client.send(new (sdk().db.ListTablesCommand)({ Limit: 1 }), { abortSignal: AbortSignal.timeout(timeoutMs) });
      return true;
    } catch {
      return false;
    }
  }

  /**
   * Creates the entity's table when it does not exist (on-demand capacity)
   * and waits until it is active. Runs once per table per process; a table
   * created at the same moment by another process is accepted.
   */
  ensureTable(definition: DynamoTableDefinition): Promise<void> {
    const name = this.tableName(definition.name);
    let ready = this.#ready.get(name);
    if (!ready) {
      ready = this.#createTable(name, definition).catch((err: unknown) => {
        this.#ready.delete(name);
        throw err;
      });
      this.#ready.set(name, ready);
    }
    return ready;
  }

  async #createTable(name: string, definition: DynamoTableDefinition): Promise<void> {
    if ((await this.#status(name)) === undefined) {
      const attributes = new Map<string, 'S' | 'N'>([
        ['pk', 'S'],
        ['sk', 'S'],
      ]);
      const indexes: GlobalSecondaryIndex[] = [];
      for (const ix of definition.indexes ?? []) {
        attributes.set(ix.pk, 'S');
        if (ix.sk) attributes.set(ix.sk, ix.sortNumeric ? 'N' : 'S');
        indexes.push({
          IndexName: ix.name,
          KeySchema: [{ AttributeName: ix.pk, KeyType: 'HASH' }, ...(ix.sk ? [{ AttributeName: ix.sk, KeyType: 'RANGE' as const }] : [])],
          Projection: { ProjectionType: 'ALL' },
        });
      }
      try {
        await this.#client.send(
          new (sdk().db.CreateTableCommand)({
            TableName: name,
            BillingMode: 'PAY_PER_REQUEST',
            AttributeDefinitions: [...attributes].map(([AttributeName, AttributeType]) => ({ AttributeName, AttributeType })),
            KeySchema: [
              { AttributeName: 'pk', KeyType: 'HASH' },
              { AttributeName: 'sk', KeyType: 'RANGE' },
            ],
            ...(indexes.length ? { GlobalSecondaryIndexes: indexes } : {}),
          }),
        );
      } catch (err) {
        if (!isNamed(err, 'ResourceInUseException')) throw err;
      }
    }
    for (let waited = 0; ; waited += 100) {
      const status = await this.#status(name);
      if (status === 'ACTIVE') return;
      if (waited > 120_000) throw new LatchkeyError('unavailable', `DynamoDB table ${name} did not become active`, { reason: 'database_unreachable' });
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  async #status(name: string): Promise<string | undefined> {
    try {
      const out = await this.#client.send(new (sdk().db.DescribeTableCommand)({ TableName: name }));
      const table = out.Table;
      if (!table) return undefined;
      const indexesActive = (table.GlobalSecondaryIndexes ?? []).every((i) => i.IndexStatus === undefined || i.IndexStatus === 'ACTIVE');
      return table.TableStatus === 'ACTIVE' && !indexesActive ? 'UPDATING' : table.TableStatus;
    } catch (err) {
      if (isNamed(err, 'ResourceNotFoundException')) return undefined;
      throw err;
    }
  }

  /** One item by key (strongly consistent), or undefined. */
  async get(entity: string, pk: string, sk: string): Promise<DynamoItem | undefined> {
    const out = await this.#doc.send(new (sdk().doc.GetCommand)({ TableName: this.tableName(entity), Key: { pk, sk }, ConsistentRead: true }));
    return out.Item;
  }

  /** Writes an item whole. Returns false when `condition` does not hold (nothing written). */
  async put(entity: string, item: DynamoItem, condition?: DynamoCondition): Promise<boolean> {
    try {
      await this.#doc.send(
        new (sdk().doc.PutCommand)({
          TableName: this.tableName(entity),
          Item: item,
          ...(condition
            ? {
                ConditionExpression: condition.expression,
                ...(condition.names ? { ExpressionAttributeNames: condition.names } : {}),
                ...(condition.values ? { ExpressionAttributeValues: condition.values } : {}),
              }
            : {}),
        }),
      );
      return true;
    } catch (err) {
      if (condition && isConditionFailed(err)) return false;
      throw err;
    }
  }

  /** Writes an item whole and returns the item it replaced, if any. */
  async replace(entity: string, item: DynamoItem): Promise<DynamoItem | undefined> {
    const out = await this.#doc.send(new (sdk().doc.PutCommand)({ TableName: this.tableName(entity), Item: item, ReturnValues: 'ALL_OLD' }));
    return out.Attributes;
  }

  /**
   * Sets the attributes of `set` (removes those of `remove`, adds the numbers
   * or string sets of `add`, takes the strings of `del` out of string sets)
   * on one item when `condition` holds. Returns the item as
   * it is after the write, or undefined when the condition did not hold.
   * Without a condition a missing item is created.
   */
  async update(
    entity: string,
    pk: string,
    sk: string,
    change: {
      set?: DynamoItem | undefined;
      remove?: readonly string[] | undefined;
      add?: Record<string, number | Set<string>> | undefined;
      del?: Record<string, Set<string>> | undefined;
    },
    condition?: DynamoCondition,
  ): Promise<DynamoItem | undefined> {
    const names: Record<string, string> = {};
    const values: DynamoItem = {};
    const sets: string[] = [];
    let i = 0;
    for (const [k, v] of Object.entries(change.set ?? {})) {
      if (v === undefined) continue;
      names[`#u${i}`] = k;
      values[`:u${i}`] = v;
      sets.push(`#u${i} = :u${i}`);
      i++;
    }
    const adds: string[] = [];
    for (const [k, v] of Object.entries(change.add ?? {})) {
      names[`#u${i}`] = k;
      values[`:u${i}`] = v;
      adds.push(`#u${i} :u${i}`);
      i++;
    }
    const dels: string[] = [];
    for (const [k, v] of Object.entries(change.del ?? {})) {
      names[`#u${i}`] = k;
      values[`:u${i}`] = v;
      dels.push(`#u${i} :u${i}`);
      i++;
    }
    const removes: string[] = [];
    for (const k of change.remove ?? []) {
      names[`#u${i}`] = k;
      removes.push(`#u${i}`);
      i++;
    }
    const parts = [
      sets.length ? `SET ${sets.join(', ')}` : '',
      adds.length ? `ADD ${adds.join(', ')}` : '',
      dels.length ? `DELETE ${dels.join(', ')}` : '',
      removes.length ? `REMOVE ${removes.join(', ')}` : '',
    ].filter(Boolean);
    if (parts.length === 0) return this.get(entity, pk, sk);
    try {
      const allNames = mergeNames(names, condition?.names);
      const allValues = mergeValues(values, condition?.values);
      const out = await this.#doc.send(
        new (sdk().doc.UpdateCommand)({
          TableName: this.tableName(entity),
          Key: { pk, sk },
          UpdateExpression: parts.join(' '),
          ...(condition ? { ConditionExpression: condition.expression } : {}),
          ...(allNames ? { ExpressionAttributeNames: allNames } : {}),
          ...(allValues ? { ExpressionAttributeValues: allValues } : {}),
          ReturnValues: 'ALL_NEW',
        }),
      );
      return out.Attributes;
    } catch (err) {
      if (condition && isConditionFailed(err)) return undefined;
      throw err;
    }
  }

  /**
   * Deletes one item (when `condition` holds). Returns the deleted item, or
   * undefined when there was none or the condition did not hold.
   */
  async delete(entity: string, pk: string, sk: string, condition?: DynamoCondition): Promise<DynamoItem | undefined> {
    try {
      const out = await this.#doc.send(
        new (sdk().doc.DeleteCommand)({
          TableName: this.tableName(entity),
          Key: { pk, sk },
          ReturnValues: 'ALL_OLD',
          ...(condition
            ? {
                ConditionExpression: condition.expression,
                ...(condition.names ? { ExpressionAttributeNames: condition.names } : {}),
                ...(condition.values ? { ExpressionAttributeValues: condition.values } : {}),
              }
            : {}),
        }),
      );
      return out.Attributes;
    } catch (err) {
      if (condition && isConditionFailed(err)) return undefined;
      throw err;
    }
  }

  /** The items of one partition (of the table or an index), every page read, in sort-key order. */
  async query(entity: string, q: DynamoQuery): Promise<DynamoItem[]> {
    const names: Record<string, string> = { '#qp': q.pk[0] };
    const values: DynamoItem = { ':qp': q.pk[1] };
    let key = '#qp = :qp';
    if (q.sk) {
      names['#qs'] = q.sk[0];
      values[':qs'] = q.sk[2];
      key += q.sk[1] === 'begins_with' ? ' AND begins_with(#qs, :qs)' : ` AND #qs ${q.sk[1]} :qs`;
    }
    const input: QueryCommandInput = {
      TableName: this.tableName(entity),
      KeyConditionExpression: key,
      ExpressionAttributeNames: mergeNames(names, q.filter?.names),
      ExpressionAttributeValues: mergeValues(values, q.filter?.values),
      ScanIndexForward: !q.descending,
      ...(q.index ? { IndexName: q.index } : { ConsistentRead: true }),
      ...(q.filter ? { FilterExpression: q.filter.expression } : {}),
    };
    const out: DynamoItem[] = [];
    for (let start: DynamoItem | undefined; ; ) {
      const page = await this.#doc.send(new (sdk().doc.QueryCommand)({ ...input, ...(start ? { ExclusiveStartKey: start } : {}), ...(q.limit !== undefined && !q.filter ? { Limit: q.limit - out.length } : {}) }));
      out.push(...(page.Items ?? []));
      if (q.limit !== undefined && out.length >= q.limit) return out.slice(0, q.limit);
      start = page.LastEvaluatedKey;
      if (!start) return out;
    }
  }

  /** Every item of the table (matching `filter`), every page read, in no particular order. */
  async scan(entity: string, filter?: DynamoCondition): Promise<DynamoItem[]> {
    const input: ScanCommandInput = {
      TableName: this.tableName(entity),
      ConsistentRead: true,
      ...(filter
        ? {
            FilterExpression: filter.expression,
            ...(filter.names ? { ExpressionAttributeNames: filter.names } : {}),
            ...(filter.values ? { ExpressionAttributeValues: filter.values } : {}),
          }
        : {}),
    };
    const out: DynamoItem[] = [];
    for (let start: DynamoItem | undefined; ; ) {
      const page = await this.#doc.send(new (sdk().doc.ScanCommand)({ ...input, ...(start ? { ExclusiveStartKey: start } : {}) }));
      out.push(...(page.Items ?? []));
      start = page.LastEvaluatedKey;
      if (!start) return out;
    }
  }

  /** Closes the client's connections. */
  close(): void {
    this.#doc.destroy();
    this.#client.destroy();
  }
}

/**
 * A sign-up's event (its `user.signup` audit row and webhook deliveries), as
 * every flow that creates or first activates a user records it: `signup`,
 * social login (a provider account's first login) and a magic-link
 * account's first verified link. On SQL the event is written as the last
 * step of the transaction that stores (or activates) the user, so a crash or
 * an outage leaves the user with its event or neither (security matrix E3);
 * DynamoDB has no transactions here, so there it is written right after
 * (docs/storage.md).
 */
import type { MainDatabase, StoreTransaction } from './main_database.ts';
import type { UserRecord } from './user_store_types.ts';

/**
 * Writes a new user's sign-up event (its audit row and webhook deliveries).
 * Given `transaction`, the SQL transaction that stores or activates the
 * user, it writes there and throws on failure (the change then stores
 * nothing); given none (DynamoDB), it runs once the user is stored.
 */
export type SignupRecorder = (user: UserRecord, transaction: StoreTransaction | undefined) => Promise<void>;

/** Where a flow writes its sign-up event on its main database: exactly one of the two is set when a recorder is given. */
export interface SignupEventSteps {
  /** SQL: the step to run inside the transaction that stores or activates the user (with the user as stored there). */
  within: ((user: UserRecord, transaction: StoreTransaction) => Promise<void>) | undefined;
  /** DynamoDB: the call to make once the user is stored. */
  after: ((user: UserRecord) => Promise<void>) | undefined;
}

/** Splits `record` into the step of `database`'s kind (both undefined without a recorder). */
export function signupEventSteps(database: MainDatabase, record: SignupRecorder | undefined): SignupEventSteps {
  if (record === undefined) return { within: undefined, after: undefined };
  if (database.kind === 'sql') return { within: record, after: undefined };
  return { within: undefined, after: (user) => record(user, undefined) };
}

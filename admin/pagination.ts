/**
 * Page/limit pagination of the admin list operations (authorizer-contract
 * §2.9): page defaults to 1, limit to 10, offset = (page - 1) * limit. Unlike
 * Authorizer, the maximum limit is enforced on every protocol, because the
 * check lives here, in the one service layer.
 */
import { LatchkeyError } from '../engine/errors.ts';

/** Default page size of admin listings. */
export const DEFAULT_PAGE_LIMIT = 10;
/** Largest page size any admin listing accepts. */
export const MAX_PAGE_LIMIT = 100;

/** Pagination as a caller may send it. */
export interface PaginationInput {
  page?: number | undefined;
  limit?: number | undefined;
}

/** Pagination as every listing returns it. */
export interface Pagination {
  page: number;
  limit: number;
  offset: number;
  total: number;
}

/**
 * Normalises a pagination input. Throws `invalid_argument` (reason
 * `invalid_pagination`) for a non-integer or non-positive page or limit, or a
 * limit above {@link MAX_PAGE_LIMIT}.
 */
export function normalizePagination(input: PaginationInput | null | undefined): Omit<Pagination, 'total'> {
  const page = input?.page ?? 1;
  const limit = input?.limit ?? DEFAULT_PAGE_LIMIT;
  if (!Number.isSafeInteger(page) || page < 1) {
    throw new LatchkeyError('invalid_argument', 'pagination page must be a positive integer', {
      reason: 'invalid_pagination',
    });
  }
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_PAGE_LIMIT) {
    throw new LatchkeyError('invalid_argument', `pagination limit must be an integer from 1 to ${MAX_PAGE_LIMIT}`, {
      reason: 'invalid_pagination',
    });
  }
  return { page, limit, offset: (page - 1) * limit };
}

/**
 * Small helpers over raw, parameterised SQL that behave the same on SQLite,
 * PostgreSQL and MySQL (row shapes, BIGINT strings from pg, affected-row
 * counts).
 */
import type { Transaction } from 'sequelize';
import { QueryTypes, type SqlDatabase } from '../engine/sql/sql_database.ts';

export type Row = Record<string, unknown>;

/** Runs a SELECT and returns its rows. */
export async function select(
  sequelize: SqlDatabase,
  sql: string,
  replacements: unknown[] = [],
  transaction?: Transaction,
): Promise<Row[]> {
  return sequelize.query(sql, {
    replacements,
    type: QueryTypes.SELECT,
    ...(transaction ? { transaction } : {}),
  }) as Promise<Row[]>;
}

/** Runs an INSERT/DELETE (or any statement whose result is not needed). */
export async function exec(
  sequelize: SqlDatabase,
  sql: string,
  replacements: unknown[] = [],
  transaction?: Transaction,
): Promise<void> {
  await sequelize.query(sql, { replacements, ...(transaction ? { transaction } : {}) });
}

/** Runs an UPDATE and returns how many rows it changed. */
export async function update(
  sequelize: SqlDatabase,
  sql: string,
  replacements: unknown[] = [],
  transaction?: Transaction,
): Promise<number> {
  const result = (await sequelize.query(sql, {
    replacements,
    type: QueryTypes.UPDATE,
    ...(transaction ? { transaction } : {}),
  })) as unknown as [unknown, number];
  return Number(result[1]);
}

/** A column value as a number (pg returns BIGINT as a string). */
export function num(v: unknown): number {
  return typeof v === 'number' ? v : Number(v ?? 0);
}

/** A column value as a string ('' for null). */
export function str(v: unknown): string {
  return v === null || v === undefined ? '' : String(v);
}

/** Reads `COUNT(*) AS n` from a row. */
export function countOf(rows: Row[]): number {
  return num(rows[0]?.['n']);
}

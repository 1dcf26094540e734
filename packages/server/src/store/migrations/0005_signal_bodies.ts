import type { Kysely, Migration } from 'kysely';

/**
 * Migration 0005_signal_bodies: a signal row no longer keeps the body it arrived with. Nothing read
 * it: what a signal settles (stdout, stderr, status code, outputs) is the deployment's
 * output_values, its result is on the signal row and in the deployment's event. Keeping a second
 * copy (up to 1 MiB each) doubled the bytes every durable signal writes and syncs.
 */
export const migration0005: Migration = {
  // Kysely's migration API takes Kysely<any>: the schema is what the migration is changing.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async up(db: Kysely<any>) {
    await db.schema.alterTable('signals').dropColumn('body').execute();
  },
};

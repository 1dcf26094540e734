import type { Kysely, Migration } from 'kysely';

/**
 * Migration 0008_alarm_repeat_actions: an alarm may repeat its actions while it stays in a state
 * (Aodh's `repeat_actions`), once per period, so a sustained ALARM keeps asking a scaling policy to
 * scale (each time subject to the policy's cooldown) instead of asking once. `last_notified_at` is
 * when its actions were last queued. Existing alarms keep notifying on state changes only.
 */
export const migration0008: Migration = {
  // Kysely's migration API takes Kysely<any>: the schema is what the migration is changing.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async up(db: Kysely<any>) {
    await db.schema
      .alterTable('alarms')
      .addColumn('repeat_actions', 'integer', (c) => c.notNull().defaultTo(0))
      .execute();
    await db.schema.alterTable('alarms').addColumn('last_notified_at', 'varchar(32)').execute();
  },
};

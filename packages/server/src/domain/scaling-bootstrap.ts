// A member_bootstrap scale-up makes the new members' server records before it writes the capacity (a
// server's create is a transaction of its own). So that a crash anywhere in between leaves nothing
// behind for good, each new member is reserved first, in the transaction that takes the scaling
// lease: a `joining` row in scaling_members under an id chosen then. The capacity write makes the
// kept ones members; a server's delete drops its row with it. A joining row while no change holds
// the group's lease is what a crash left (or a change given up): recoverLeftovers deletes its record.
import { randomUUID } from 'node:crypto';
import type { Transaction } from 'kysely';
import type { Store } from '../store/store.ts';
import type { Database } from '../store/schema.ts';
import type { ScalingGroupRow } from '../store/schema-scaling.ts';
import type { WriteContext } from '../store/write-queue.ts';
import type { ServerService } from './servers.ts';
import { isHearthError } from './errors.ts';
import { bootstrapOf, groupEvent, SCALING_LEASE_MS, type AdjustRequest, type AdjustResult } from './scaling-change.ts';

/**
 * scaling_members.bootstrap of a record hearth made that is no member: reserved by a change not yet
 * written, or removed by a scale-down before any delivery carried it (scaling-outbox.ts; it keeps its
 * undelivered_sequence). Either way recoverLeftovers deletes the record. (0: added by the provisioner, 1: made by hearth.)
 */
export const MEMBER_JOINING = 2;

/** scaling_members.bootstrap of a member whose server record hearth made (member_bootstrap): its removal deletes the record. */
export const MEMBER_MADE = 1;

/** Most characters in a server's name and resource name (varchar(255) columns). */
const MAX_SERVER_NAME_LENGTH = 255;

/**
 * The name and resource name of a member that member_bootstrap creates: the group's name, `-` and
 * 8 random hex digits; a longer group name is cut so the whole fits in 255 characters (group names
 * are ASCII, so `slice` counts characters). A group's name may hold `.`, a server's resource name
 * may not (servers.ts), so each `.` becomes `-`: a group `web.tier` gets members `web-tier-1a2b3c4d`.
 */
function memberName(groupName: string): string {
  const suffix = `-${randomUUID().slice(0, 8)}`;
  return groupName.replace(/[^A-Za-z0-9_:-]/g, '-').slice(0, MAX_SERVER_NAME_LENGTH - suffix.length) + suffix;
}

/** A member a bootstrap makes: its server id and name. */
export interface NewMember {
  id: string;
  name: string;
}

/** Reserves `count` new members of a group (ids and names, joining rows), in the caller's transaction. */
export async function reserveMembers(trx: Transaction<Database>, group: ScalingGroupRow, count: number, now: string): Promise<NewMember[]> {
  const members = Array.from({ length: count }, () => ({ id: randomUUID(), name: memberName(group.name) }));
  for (const member of members)
    await trx
      .insertInto('scaling_members')
      .values({ group_id: group.id, server_id: member.id, bootstrap: MEMBER_JOINING, added_at: now })
      .execute();
  return members;
}

/** Writes a capacity with its new members, in the caller's transaction (ScalingAdjuster's); `note` ends the reason. */
export type CapacityWrite = (
  ctx: WriteContext,
  group: ScalingGroupRow,
  target: number,
  newMembers: NewMember[],
  request: AdjustRequest,
  note: string,
) => Promise<AdjustResult>;

/**
 * What a bootstrap's capacity write did: written (with the records it did not make members), or
 * nothing because another change holds the group, or because min_size rose past what it created.
 */
type Written = { kind: 'written'; result: AdjustResult; dropped: NewMember[] } | { kind: 'superseded' } | { kind: 'short'; why: string };

/** Makes the server records of a scale-up's new members, then its capacity; and deletes what a crash left. */
export class MemberBootstrapper {
  constructor(
    private readonly store: Store,
    private readonly servers: ServerService,
    private readonly logError: (error: unknown) => void,
    /** How long the scaling lease lasts (default SCALING_LEASE_MS); renewed at a third of it while members are made. */
    private readonly leaseMs = SCALING_LEASE_MS,
  ) {}

  /** Creates the reserved members' records, then writes the capacity with `write` against the bounds as they are then. */
  async run(
    group: ScalingGroupRow,
    target: number,
    leaseId: string,
    reserved: NewMember[],
    request: AdjustRequest,
    write: CapacityWrite,
  ): Promise<AdjustResult> {
    const bootstrap = bootstrapOf(group)!;
    const created: NewMember[] = [];
    let renewAt = Date.now() + this.leaseMs / 3;
    try {
      for (const member of reserved) {
        // Making many records can outlast the lease, and a lapsed one is taken for a crash's (recoverLeftovers,
        // a restarted replica's ScalingRecovery): renewed while this runs. Lost, the capacity write finds it superseded.
        if (Date.now() >= renewAt) {
          if (!(await this.renewLease(group.id, leaseId))) break;
          renewAt = Date.now() + this.leaseMs / 3;
        }
        await this.servers.create(group.project_id, {
          id: member.id,
          name: member.name,
          stack: group.stack_id,
          resource_name: member.name,
          software_config_transport: bootstrap.software_config_transport ?? 'HEARTH_LONG_POLL',
        });
        created.push(member);
      }
    } catch (error) {
      await this.abandon(group, leaseId, reserved, `could not create member records: ${(error as Error).message}`);
      throw error;
    }
    let written: Written;
    try {
      written = await this.store.write<Written>(async (ctx) => {
        // Admitted again: the members took time to create, and the change may have been revoked meanwhile.
        await request.admit?.(ctx.trx, ctx.now);
        const current = await ctx.trx.selectFrom('scaling_groups').selectAll().where('id', '=', group.id).executeTakeFirst();
        if (!current || current.scaling_lease_id !== leaseId) return { kind: 'superseded' };
        // A group update does not wait for the lease: its bounds may have moved while the members were created.
        const clamped = Math.min(Math.max(target, current.min_size), current.max_size);
        const wanted = clamped - current.desired_capacity;
        if (wanted > created.length)
          return {
            kind: 'short',
            why: `min_size is ${current.min_size} now, above the ${target} this change was to reach; the group update that raised it sets the capacity`,
          };
        if (wanted <= 0) {
          const reason = `${request.reason}: desired capacity stays ${current.desired_capacity} (max_size is ${current.max_size} now)`;
          await ctx.trx
            .updateTable('scaling_groups')
            .set({ scaling_lease_id: null, scaling_lease_until: null })
            .where('id', '=', group.id)
            .execute();
          ctx.event(
            groupEvent(current, 'scaling_group.no_change', reason, { outcome: 'no_change', desired_capacity: current.desired_capacity }),
          );
          await request.record?.(ctx.trx, ctx.now, 'no_change', reason);
          const result: AdjustResult = {
            outcome: 'no_change',
            reason,
            previous: current.desired_capacity,
            desired: current.desired_capacity,
          };
          return { kind: 'written', result, dropped: created };
        }
        const dropped = created.slice(wanted);
        const note =
          dropped.length === 0
            ? ''
            : ` (max_size is ${current.max_size} now: ${dropped.length} of the ${created.length} new members' records deleted)`;
        const result = await write(ctx, current, clamped, created.slice(0, wanted), request, note);
        return { kind: 'written', result, dropped };
      });
    } catch (error) {
      await this.abandon(group, leaseId, reserved, `the change was refused: ${(error as Error).message}`);
      throw error;
    }
    if (written.kind === 'written') {
      // Still joining until deleted: a crash before this ends leaves them to recoverLeftovers.
      await this.discard(written.dropped.map((member) => ({ projectId: group.project_id, id: member.id })));
      return written.result;
    }
    const why = written.kind === 'short' ? written.why : 'another change of capacity was written meanwhile, or the scaling lease lapsed';
    await this.abandon(group, leaseId, reserved, why);
    return {
      outcome: 'in_progress',
      reason: `${request.reason}: ${why}`,
      previous: group.desired_capacity,
      desired: group.desired_capacity,
    };
  }

  /**
   * Deletes the records reserved members left while no change holds their group (a crash, a change
   * given up or superseded), and releases a lease that lapsed, so that the change that held it, if it
   * still runs, cannot make them members. Of one group, or of every group; `cause` ends the event's
   * message (how they were found). Returns how many it deleted.
   */
  async recoverLeftovers(groupId?: string, cause?: string): Promise<number> {
    const nowIso = new Date().toISOString();
    // Read first: every adjustment calls this, and there is almost never anything to do.
    if ((await this.leftovers(this.store.reader, nowIso, groupId)).length === 0) return 0;
    const found = await this.store.write(async ({ trx, now, event }) => {
      const rows = await this.leftovers(trx, now, groupId);
      const groups = await trx
        .selectFrom('scaling_groups')
        .selectAll()
        .where('id', 'in', [...new Set(rows.map((row) => row.group_id)), ''])
        .execute();
      for (const group of groups) {
        if (group.scaling_lease_id !== null)
          await trx
            .updateTable('scaling_groups')
            .set({ scaling_lease_id: null, scaling_lease_until: null })
            .where('id', '=', group.id)
            .execute();
        const ofGroup = rows.filter((row) => row.group_id === group.id);
        // Rows a scale-down removed before any delivery carried them keep their sequence; reservations have none.
        const removed = ofGroup.filter((row) => row.undelivered_sequence !== null).length;
        const count = ofGroup.length;
        const what =
          removed === count
            ? `${count} never delivered member record(s) a scale-down of ${group.name} removed deleted (credentials revoked)`
            : `${count} member record(s) a change of ${group.name} left unfinished deleted` +
              (removed > 0 ? ` (${removed} of them removed by a scale-down before any delivery carried them)` : '');
        event(groupEvent(group, 'scaling_group.recovered', `${what}${cause ? ` ${cause}` : ''}`, { count }));
      }
      // A reservation whose record was never made (a crash before its create) goes here; a record's delete drops its own.
      const unmade = rows.filter((row) => row.project_id === null).map((row) => row.server_id);
      if (unmade.length > 0)
        await trx.deleteFrom('scaling_members').where('bootstrap', '=', MEMBER_JOINING).where('server_id', 'in', unmade).execute();
      return rows.flatMap((row) => (row.project_id === null ? [] : [{ projectId: row.project_id, id: row.server_id }]));
    });
    await this.discard(found);
    return found.length;
  }

  /** The joining rows of groups whose lease is not held at `now` (or that are gone), with their record's project if it exists. */
  private leftovers(db: Transaction<Database> | Store['reader'], now: string, groupId: string | undefined) {
    let query = db
      .selectFrom('scaling_members as m')
      .leftJoin('scaling_groups as g', 'g.id', 'm.group_id')
      .leftJoin('servers as s', 's.id', 'm.server_id')
      .select(['m.group_id', 'm.server_id', 'm.undelivered_sequence', 's.project_id'])
      .where('m.bootstrap', '=', MEMBER_JOINING)
      .where((eb) => eb.or([eb('g.scaling_lease_until', 'is', null), eb('g.scaling_lease_until', '<=', now)]));
    if (groupId !== undefined) query = query.where('m.group_id', '=', groupId);
    return query.execute();
  }

  /** Extends the group's scaling lease by leaseMs from now if `leaseId` still holds it; false when it does not. */
  private renewLease(groupId: string, leaseId: string): Promise<boolean> {
    return this.store.write(async ({ trx, now }) => {
      const renewed = await trx
        .updateTable('scaling_groups')
        .set({ scaling_lease_until: new Date(Date.parse(now) + this.leaseMs).toISOString() })
        .where('id', '=', groupId)
        .where('scaling_lease_id', '=', leaseId)
        .executeTakeFirst();
      return renewed.numUpdatedRows > 0n;
    });
  }

  /** Gives up a bootstrap: deletes the records made for it and the reservations, and releases the lease if still ours. */
  private async abandon(group: ScalingGroupRow, leaseId: string, reserved: NewMember[], why: string): Promise<void> {
    await this.discard(reserved.map((member) => ({ projectId: group.project_id, id: member.id })));
    await this.store.write(async ({ trx, event }) => {
      // A record whose delete failed keeps its row, for recoverLeftovers.
      const kept = await trx
        .selectFrom('servers')
        .select('id')
        .where('id', 'in', [...reserved.map((member) => member.id), ''])
        .execute();
      const gone = reserved.map((member) => member.id).filter((id) => !kept.some((server) => server.id === id));
      if (gone.length > 0)
        await trx.deleteFrom('scaling_members').where('bootstrap', '=', MEMBER_JOINING).where('server_id', 'in', gone).execute();
      await trx
        .updateTable('scaling_groups')
        .set({ scaling_lease_id: null, scaling_lease_until: null })
        .where('id', '=', group.id)
        .where('scaling_lease_id', '=', leaseId)
        .execute();
      event(groupEvent(group, 'scaling_group.error', `Scaling ${group.name} failed: ${why}`));
    });
  }

  /** Deletes the server records a bootstrap made and did not make members (each delete writes its own event); one gone already is skipped. */
  private async discard(servers: Array<{ projectId: string; id: string }>): Promise<void> {
    for (const server of servers)
      await this.servers.delete(server.projectId, server.id).catch((error: unknown) => {
        if (!(isHearthError(error) && error.code === 'ERR_SERVER_NOT_FOUND')) this.logError(error);
      });
  }
}

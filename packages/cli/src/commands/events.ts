import { HearthApiError } from '@hearth/client';
import type { Event } from '@hearth/protocol';
import type { Command } from 'commander';
import { EXIT, ExitError, usageError } from '../errors.ts';
import { parseLimit } from '../flag-values.ts';
import { addExamples, EVENTS_EXAMPLES } from '../help-examples.ts';
import { shellWord } from '../output.ts';
import { escapeControls } from '../terminal-text.ts';
import type { GlobalOptions } from '../options.ts';
import { openSession, type CliDeps, type Session } from '../session.ts';

/** The flags of `hearth events`. */
interface EventsFlags {
  follow?: boolean;
  after?: string;
  resource?: string;
  type?: string;
  limit?: string;
}

/** Columns of the events table. */
const EVENT_COLUMNS = [
  { header: 'id', value: (e: Event) => e.id },
  { header: 'time', value: (e: Event) => e.time },
  { header: 'type', value: (e: Event) => e.type },
  { header: 'resource', value: (e: Event) => e.resource_id },
  { header: 'message', value: (e: Event) => e.message },
];

/** One followed event as a line: NDJSON with --json, else the table's columns two spaces apart. */
export function eventLine(event: Event, json: boolean): string {
  if (json) return `${JSON.stringify(event)}\n`;
  // Messages quote names that servers and VMs chose: shown escaped, they cannot drive the terminal.
  const fields = [event.id, event.time, event.type, event.resource_id, event.message.replace(/\s+/g, ' ')];
  return `${fields.map((field) => escapeControls(String(field))).join('  ')}\n`;
}

/** True when an event passes the --resource and --type filters. */
export function eventMatches(event: Event, flags: Pick<EventsFlags, 'resource' | 'type'>): boolean {
  return (flags.resource === undefined || event.resource_id === flags.resource) && (flags.type === undefined || event.type === flags.type);
}

/**
 * The command that lists the next page: the same filters and --limit after `cursor`, and --url and
 * --project when they were flags (the token never: it stays where it came from).
 */
export function nextPageCommand(cursor: string, flags: EventsFlags, options: GlobalOptions): string {
  const words = ['hearth', 'events'];
  if (options.sources.url === 'flag') words.push('--url', options.url);
  if (options.sources.project === 'flag') words.push('--project', options.project);
  words.push('--after', cursor);
  if (flags.resource !== undefined) words.push('--resource', flags.resource);
  if (flags.type !== undefined) words.push('--type', flags.type);
  if (flags.limit !== undefined) words.push('--limit', flags.limit);
  return words.map(shellWord).join(' ');
}

/** What an empty page says, with its filters: after a cursor it means the operator is up to date. */
export function noEventsText(flags: EventsFlags, project: string): string {
  const filters = [
    flags.type === undefined ? '' : ` of type ${flags.type}`,
    flags.resource === undefined ? '' : ` for ${flags.resource}`,
    flags.after === undefined ? '' : ` after ${flags.after}`,
  ];
  return `no events${filters.join('')} in project ${project}`;
}

/**
 * ERR_EVENT_CURSOR_EXPIRED (the server's events retention deleted events after --after that were
 * never seen) as an exit with the command that starts again from the oldest event kept; any other
 * error as it is. Following again does not help: it would be refused the same way.
 */
export function expiredCursorExit(error: unknown, flags: EventsFlags, options: GlobalOptions): unknown {
  if (!(error instanceof HearthApiError) || error.code !== 'ERR_EVENT_CURSOR_EXPIRED') return error;
  const oldest = error.details.oldest_cursor;
  const again =
    typeof oldest === 'string' && /^\d+$/.test(oldest)
      ? nextPageCommand(oldest, flags, options).replace(
          /^hearth events/,
          flags.follow === true ? 'hearth events --follow' : 'hearth events',
        )
      : 'the same command without --after';
  const hint = `hearth-server's events retention (--events-retention-days, --events-max-per-project) deleted events you had not seen; to go on from the oldest event kept, knowing those are lost: ${again}`;
  return new ExitError(EXIT.FAILED, error.message, { code: `HTTP ${error.status}, ${error.code}`, hint });
}

/** Streams events until interrupted (Ctrl-C), reconnecting after a dropped connection. */
async function follow(session: Session, flags: EventsFlags): Promise<void> {
  const stream = session.client().streamEvents({
    after: flags.after,
    resourceId: flags.resource,
    onReconnect: ({ after, error }) => {
      const why = error instanceof Error ? error.message : 'the server closed the stream';
      session.out.note(`hearth: event stream interrupted (${why}); reconnecting after event ${after ?? '(start)'}`);
    },
  });
  for await (const event of stream) {
    if (eventMatches(event, flags)) session.io.stdout.write(eventLine(event, session.out.json));
  }
}

/** Registers `hearth events`. */
export function registerEventsCommand(program: Command, deps: CliDeps): void {
  const events = program
    .command('events')
    .description("list the project's events, oldest first; --follow streams new ones")
    .option(
      '--follow',
      'stream events until Ctrl-C: the log from the start (or after --after), then new ones as they happen; one per line, NDJSON with --json',
    )
    .option('--after <cursor>', 'only events after this cursor (an event id, or the next_cursor of a page)')
    .option('--resource <id>', 'only events of this server, config or deployment')
    .option('--type <type>', 'only events of this type, e.g. deployment.completed')
    .option('--limit <n>', 'at most this many events (default 100; not with --follow)')
    .action(async (flags: EventsFlags, cmd: Command) => {
      const session = openSession(cmd, deps);
      if (flags.follow === true) {
        if (flags.limit !== undefined) throw usageError('--limit does not go with --follow: --follow streams every event until Ctrl-C');
        await follow(session, flags).catch((error: unknown) => {
          throw expiredCursorExit(error, flags, session.options);
        });
        return;
      }
      const limit = flags.limit === undefined ? undefined : parseLimit(flags.limit, '--limit');
      const page = await session
        .client()
        .listEvents({ after: flags.after, resource_id: flags.resource, type: flags.type, limit })
        .catch((error: unknown) => {
          throw expiredCursorExit(error, flags, session.options);
        });
      session.out.list(page, EVENT_COLUMNS, page.events, noEventsText(flags, session.options.project));
      if (!session.out.json && page.events.length > 0 && page.events.length === (limit ?? 100)) {
        session.out.note(`hearth: more events may follow: ${nextPageCommand(page.next_cursor, flags, session.options)}`);
      }
    });
  addExamples(events, EVENTS_EXAMPLES);
}

import type {
  KyselyPlugin,
  OperationNode,
  PluginTransformQueryArgs,
  PluginTransformResultArgs,
  QueryResult,
  RootOperationNode,
  UnknownRow,
} from 'kysely';
import { HearthError } from '../domain/errors.ts';

/**
 * A text value with a NUL character (`\u0000`) on its way to the database. PostgreSQL cannot hold
 * one in a text column (SQLSTATE 22021) while SQLite stores it, so the same request was a 400 on
 * one store and stored on the other. The store refuses it on both, before the statement runs,
 * naming the column. Values stored as JSON never reach here with a NUL: JSON.stringify writes it
 * as the six characters `\u0000`.
 *
 * Inside a write unit it is not the "wrote nothing" kind of HearthError: the unit may have written
 * before it, so the write queue rolls the unit back (see write-queue.ts) before its caller gets it.
 */
export class UnstorableTextError extends HearthError {
  constructor(readonly column: string | undefined) {
    super('ERR_REQUEST_INVALID', {
      reason: `${column ? `the value for ${column}` : 'a text value'} contains a NUL character (\\u0000), which hearth does not store: remove it`,
      ...(column ? { field: column } : {}),
    });
  }
}

/** Throws UnstorableTextError if `value` is a string with a NUL character. */
export function checkStorable(value: unknown, column: string | undefined): void {
  if (typeof value === 'string' && value.includes('\u0000')) throw new UnstorableTextError(column);
}

type Node = OperationNode & Record<string, unknown>;

function isNode(value: unknown): value is Node {
  return typeof value === 'object' && value !== null && typeof (value as { kind?: unknown }).kind === 'string';
}

/** The name of a ColumnNode or ReferenceNode (`table.column`), else undefined. */
function columnName(node: unknown): string | undefined {
  if (!isNode(node)) return undefined;
  if (node.kind === 'ColumnNode') return (node.column as { name: string }).name;
  if (node.kind === 'ReferenceNode') return columnName(node.column);
  return undefined;
}

/** The name of a TableNode, else undefined. */
function tableName(node: unknown): string | undefined {
  if (!isNode(node) || node.kind !== 'TableNode') return undefined;
  return (node.table as { identifier: { name: string } }).identifier.name;
}

/** `table.column` when both are known. */
function qualified(table: string | undefined, column: string | undefined): string | undefined {
  return column && table ? `${table}.${column}` : column;
}

/**
 * Checks every value of a query, naming the column it goes into (insert, update) or is compared
 * with (where) when the node says so.
 */
function visit(node: unknown, table: string | undefined, column: string | undefined): void {
  if (Array.isArray(node)) {
    for (const item of node) visit(item, table, column);
    return;
  }
  if (!isNode(node)) return;
  switch (node.kind) {
    case 'ValueNode':
      checkStorable(node.value, qualified(table, column));
      return;
    case 'PrimitiveValueListNode':
      for (const value of node.values as unknown[]) checkStorable(value, qualified(table, column));
      return;
    case 'InsertQueryNode': {
      const into = tableName(node.into);
      const columns = ((node.columns as unknown[] | undefined) ?? []).map(columnName);
      const values = node.values;
      if (isNode(values) && values.kind === 'ValuesNode') {
        // A row is a PrimitiveValueListNode (plain values) or a ValueListNode (nodes), in column order.
        for (const row of values.values as Node[]) {
          (row.values as unknown[]).forEach((item, i) =>
            row.kind === 'PrimitiveValueListNode' ? checkStorable(item, qualified(into, columns[i])) : visit(item, into, columns[i]),
          );
        }
      } else visit(values, into, undefined);
      visit(node.onConflict, into, undefined);
      visit(node.returning, into, undefined);
      return;
    }
    case 'UpdateQueryNode':
      visitChildren(node, tableName(node.table), undefined);
      return;
    case 'SelectQueryNode':
    case 'DeleteQueryNode': {
      // A query on one table names it; with joins a column alone may be ambiguous, so none.
      const froms = (node.from as { froms?: unknown[] } | undefined)?.froms ?? [];
      visitChildren(node, froms.length === 1 && !node.joins ? tableName(froms[0]) : table, undefined);
      return;
    }
    case 'ColumnUpdateNode':
      visit(node.value, table, columnName(node.column));
      return;
    case 'BinaryOperationNode': {
      const left = columnName(node.leftOperand);
      visit(node.leftOperand, table, column);
      visit(node.rightOperand, table, left ?? column);
      return;
    }
    default:
      visitChildren(node, table, column);
  }
}

function visitChildren(node: Node, table: string | undefined, column: string | undefined): void {
  for (const key of Object.keys(node)) if (key !== 'kind') visit(node[key], table, column);
}

/** The Kysely plugin every store connection carries: refuses NUL characters in text values (UnstorableTextError). */
export const textGuard: KyselyPlugin = {
  transformQuery({ node }: PluginTransformQueryArgs): RootOperationNode {
    visit(node, undefined, undefined);
    return node;
  },
  transformResult({ result }: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return Promise.resolve(result);
  },
};

// `strata alter <table> <change> …`: the command line's words for a schema change, turned
// into lib/handle/alter.ts's SchemaChange (the words follow Flink SQL's ALTER TABLE: ADD,
// RENAME … TO, DROP, MODIFY, COMMENT; SET and RESET of table options, several at once as in
// Paimon's ALTER TABLE … SET ('k' = 'v', …)). Every word and option is checked before the
// table is touched.

import type { SchemaChange } from '../handle/alter.ts'
import { formatDataType } from '../format/data-type.ts'
import { StrataInputError } from '../errors.ts'
import type { TableSchema } from '../types.ts'

export interface AlterOptions {
  first?: boolean
  after?: string
  comment?: string
  nullable?: boolean
  notNull?: boolean
}

const USAGE: Record<string, string> = {
  add: 'add <column> <type> [--first | --after <column>] [--comment <text>]',
  rename: 'rename <column> <new-name>',
  drop: 'drop <column>',
  modify: 'modify <column> [<type>] [--comment <text>] [--nullable]',
  comment: 'comment <text>',
  set: 'set <key> <value> [<key> <value> …]',
  reset: 'reset <key> [<key> …]',
}

/** The schema changes of one `strata alter` call (one schema file). */
export function alterChanges(change: string, args: string[], o: AlterOptions): SchemaChange[] {
  const usage = USAGE[change]
  if (!usage) throw new StrataInputError(`alter: unknown change ${JSON.stringify(change)}; expected one of: ${Object.values(USAGE).join('; ')}`)
  const arity = (min: number, max: number) => {
    if (args.length < min || args.length > max) throw new StrataInputError(`alter ${change}: expected ${usage}, got ${args.length} argument(s) ${JSON.stringify(args)}`)
  }
  const only = (allowed: (keyof AlterOptions)[]) => {
    const flags: Record<keyof AlterOptions, string> = { first: '--first', after: '--after', comment: '--comment', nullable: '--nullable', notNull: '--not-null' }
    for (const k of Object.keys(flags) as (keyof AlterOptions)[]) {
      if (o[k] !== undefined && !allowed.includes(k)) throw new StrataInputError(`alter ${change}: ${flags[k]} does not apply; expected ${usage}`)
    }
  }
  switch (change) {
    case 'add': {
      // the type may come as several words (DECIMAL(10, 2) unquoted): they are joined
      arity(2, Infinity)
      only(['first', 'after', 'comment'])
      if (o.first && o.after !== undefined) throw new StrataInputError(`alter add: --first and --after ${JSON.stringify(o.after)}: expected one of them`)
      const c: SchemaChange = { kind: 'add-column', name: args[0], type: args.slice(1).join(' ') }
      if (o.comment !== undefined) c.comment = o.comment
      if (o.first) c.position = { first: true }
      else if (o.after !== undefined) c.position = { after: o.after }
      return [c]
    }
    case 'rename':
      arity(2, 2)
      only([])
      return [{ kind: 'rename-column', name: args[0], newName: args[1] }]
    case 'drop':
      arity(1, 1)
      only([])
      return [{ kind: 'drop-column', name: args[0] }]
    case 'modify': {
      arity(1, Infinity)
      only(['comment', 'nullable', 'notNull'])
      if (o.nullable && o.notNull) throw new StrataInputError('alter modify: --nullable and --not-null: expected one of them')
      const name = args[0]
      const out: SchemaChange[] = []
      if (args.length > 1) out.push({ kind: 'update-column-type', name, type: args.slice(1).join(' ') })
      if (o.nullable || o.notNull) out.push({ kind: 'update-column-nullability', name, nullable: !!o.nullable })
      if (o.comment !== undefined) out.push({ kind: 'update-column-comment', name, comment: o.comment })
      if (out.length === 0) throw new StrataInputError(`alter modify '${name}': nothing to change; expected ${usage}`)
      return out
    }
    case 'set':
    case 'reset':
      only([])
      return optionWords(change, args, usage)
    default:
      arity(1, 1)
      only([])
      return [{ kind: 'update-comment', comment: args[0] }]
  }
}

/** `set k1 v1 k2 v2 …` or `reset k1 k2 …`: one change per key, each key once. */
function optionWords(change: 'set' | 'reset', args: string[], usage: string): SchemaChange[] {
  const step = change === 'set' ? 2 : 1
  if (args.length === 0 || args.length % step !== 0) {
    throw new StrataInputError(`alter ${change}: expected ${usage}, got ${args.length} argument(s) ${JSON.stringify(args)}${change === 'set' && args.length > 0 ? ' (a key without its value)' : ''}`)
  }
  const out: SchemaChange[] = []
  const seen = new Set<string>()
  for (let i = 0; i < args.length; i += step) {
    const key = args[i]
    if (seen.has(key)) throw new StrataInputError(`alter ${change}: option '${key}' is given twice; expected each key once`)
    seen.add(key)
    out.push(change === 'set' ? { kind: 'set-option', key, value: args[i + 1] } : { kind: 'reset-option', key })
  }
  return out
}

/** The options an alter changed, as `set k=v` and `reset k`, joined by '; '. */
export function describeOptionChanges(changes: readonly SchemaChange[]): string {
  return changes.map((c) => (c.kind === 'set-option' ? `set ${c.key}=${c.value}` : c.kind === 'reset-option' ? `reset ${c.key}` : c.kind)).join('; ')
}

/** The schema's columns as one line: `id name TYPE`, keys marked. */
export function describeSchemaChange(s: TableSchema): string {
  return s.fields.map((f) => `${f.name} ${formatDataType(f.type)}${s.primaryKeys.includes(f.name) ? ' (key)' : ''}`).join(', ')
}

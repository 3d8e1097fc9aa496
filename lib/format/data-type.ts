// Paimon type strings: parse the spellings a user writes in a schema file and print the
// canonical form Paimon's SchemaSerializer writes (docs/format.md "Schema files", `asSQLString`).

import { StrataInputError } from '../errors.ts'
import type { DataField, DataType, TypeRoot } from '../types.ts'

export const MAX_LENGTH = 2147483647
const MAX_TIMESTAMP_PRECISION = 6

const SIMPLE: Record<string, TypeRoot> = {
  BOOLEAN: 'BOOLEAN',
  TINYINT: 'TINYINT',
  SMALLINT: 'SMALLINT',
  INT: 'INT',
  INTEGER: 'INT',
  BIGINT: 'BIGINT',
  FLOAT: 'FLOAT',
  DOUBLE: 'DOUBLE',
  DATE: 'DATE',
}

const SUPPORTED =
  'BOOLEAN, TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, DECIMAL(p, s), STRING, VARCHAR(n), CHAR(n), BYTES, VARBINARY(n), BINARY(n), DATE, TIMESTAMP(p) with p <= 6, ARRAY<T>, MAP<K, V>, MULTISET<T>, ROW<name T, ...>'

/** Parses an atomic type string such as `BIGINT NOT NULL`, `DECIMAL(10, 2)` or `VARCHAR(20)`. */
function parseAtomicType(text: string, where: string): DataType {
  let s = text.trim().toUpperCase().replace(/\s+/g, ' ')
  let nullable = true
  if (s.endsWith(' NOT NULL')) {
    nullable = false
    s = s.slice(0, -' NOT NULL'.length).trim()
  } else if (s.endsWith(' NULL')) {
    s = s.slice(0, -' NULL'.length).trim()
  }
  const m = /^([A-Z_ ]+?)\s*(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?$/.exec(s)
  if (!m) throw unsupported(text, where)
  const name = m[1].trim()
  const a = m[2] === undefined ? undefined : Number(m[2])
  const b = m[3] === undefined ? undefined : Number(m[3])
  const noArgs = (t: DataType): DataType => {
    if (a !== undefined) throw new StrataInputError(`${where}: type ${JSON.stringify(text)} takes no parameters`)
    return t
  }
  if (SIMPLE[name]) return noArgs({ root: SIMPLE[name], nullable })
  switch (name) {
    case 'STRING':
      return noArgs({ root: 'VARCHAR', nullable, length: MAX_LENGTH })
    case 'BYTES':
      return noArgs({ root: 'VARBINARY', nullable, length: MAX_LENGTH })
    case 'VARCHAR':
    case 'CHAR':
    case 'VARBINARY':
    case 'BINARY': {
      if (b !== undefined) throw unsupported(text, where)
      const length = a ?? (name.startsWith('VAR') ? MAX_LENGTH : 1)
      if (length < 1 || length > MAX_LENGTH) {
        throw new StrataInputError(`${where}: length of ${name} must be between 1 and ${MAX_LENGTH}, got ${length}`)
      }
      return { root: name as TypeRoot, nullable, length }
    }
    case 'DECIMAL':
    case 'NUMERIC':
    case 'DEC': {
      const precision = a ?? 10
      const scale = b ?? 0
      if (precision < 1 || precision > 38) {
        throw new StrataInputError(`${where}: DECIMAL precision must be between 1 and 38, got ${precision}`)
      }
      if (scale > precision) {
        throw new StrataInputError(`${where}: DECIMAL scale must be between 0 and the precision ${precision}, got ${scale}`)
      }
      return { root: 'DECIMAL', nullable, precision, scale }
    }
    case 'TIMESTAMP': {
      if (b !== undefined) throw unsupported(text, where)
      const precision = a ?? 6
      if (precision > MAX_TIMESTAMP_PRECISION) {
        throw new StrataInputError(
          `${where}: TIMESTAMP precision must be between 0 and ${MAX_TIMESTAMP_PRECISION} in Strata (nanosecond timestamps are not supported), got ${precision}`,
        )
      }
      return { root: 'TIMESTAMP', nullable, precision }
    }
  }
  throw unsupported(text, where)
}

/**
 * Types may nest at most this deep (a field's own type is depth 1, ARRAY<INT> reaches 2):
 * each level adds Parquet definition and repetition levels and a JSON nesting level, and the
 * readers and writers recurse per level. Paimon sets no limit; 16 leaves room for any schema
 * a Flink job writes from Kafka events while bounding the recursion (docs/format.md "Nested types").
 */
export const MAX_NESTING_DEPTH = 16

const NESTED_ROOTS = new Set(['ARRAY', 'MAP', 'MULTISET', 'ROW'])

/** Whether the type is ARRAY, MAP, MULTISET or ROW. */
export function isNestedType(t: DataType): boolean {
  return NESTED_ROOTS.has(t.root)
}

/** A ROW field whose id is not known yet (SQL text names none): `assignFieldIds` numbers it. */
export const UNASSIGNED_ID = -1

/**
 * Parses a Paimon type: SQL text (`BIGINT NOT NULL`, `ARRAY<STRING>`, `MAP<STRING, INT>`,
 * `ROW<a INT, b STRING COMMENT 'c'>`, also Paimon's older `ROW<a INT 'c'>`) or the JSON
 * form Paimon's SchemaSerializer writes for nested types (`{"type": "ARRAY", "element": …}`,
 * `DataTypeJsonParser`). ROW fields parsed from SQL, or from JSON without ids, have id
 * UNASSIGNED_ID.
 */
export function parseDataType(text: unknown, where: string): DataType {
  if (typeof text === 'string') {
    const p = new TypeTextParser(text, where)
    const t = p.type(1)
    p.end()
    return t
  }
  if (typeof text === 'object' && text !== null && !Array.isArray(text)) return parseJsonType(text as Record<string, unknown>, where, 1)
  throw new StrataInputError(`${where}: type must be a string such as "BIGINT NOT NULL" or Paimon's JSON form of a nested type, got ${JSON.stringify(text)}`)
}

function tooDeep(where: string, text: string): StrataInputError {
  return new StrataInputError(`${where}: type ${text.length > 80 ? text.slice(0, 77) + '...' : text} nests deeper than ${MAX_NESTING_DEPTH} levels; expected at most ${MAX_NESTING_DEPTH} (docs/format.md "Nested types")`)
}

function checkRowFields(fields: DataField[], where: string): void {
  if (fields.length === 0) throw new StrataInputError(`${where}: a ROW needs at least one field`)
  const names = new Set<string>()
  for (const f of fields) {
    if (f.name.trim() === '') throw new StrataInputError(`${where}: a ROW field name may not be blank`)
    if (names.has(f.name)) throw new StrataInputError(`${where}: ROW field '${f.name}' is defined twice`)
    names.add(f.name)
  }
}

/** Paimon's JSON form of a type (DataTypeJsonParser.parseDataType): a string for atomic types, an object for nested ones. */
function parseJsonType(j: Record<string, unknown>, where: string, depth: number): DataType {
  if (depth > MAX_NESTING_DEPTH) throw tooDeep(where, JSON.stringify(j))
  const t = j.type
  if (typeof t !== 'string') throw new StrataInputError(`${where}.type: expected a string such as "ARRAY" or "ROW NOT NULL", got ${JSON.stringify(t)}`)
  const m = /^\s*(ARRAY|MAP|MULTISET|ROW)\s*(NOT\s+NULL)?\s*$/i.exec(t)
  if (!m) throw new StrataInputError(`${where}.type: ${JSON.stringify(t)} is not a nested type; expected ARRAY, MAP, MULTISET or ROW, optionally followed by NOT NULL`)
  const root = m[1].toUpperCase() as TypeRoot
  const nullable = m[2] === undefined
  const sub = (key: string): DataType => {
    const v = j[key]
    if (v === undefined) throw new StrataInputError(`${where}: a ${root} type needs '${key}'`)
    if (typeof v === 'string') {
      const p = new TypeTextParser(v, `${where}.${key}`)
      const inner = p.type(depth + 1)
      p.end()
      return inner
    }
    if (typeof v === 'object' && v !== null && !Array.isArray(v)) return parseJsonType(v as Record<string, unknown>, `${where}.${key}`, depth + 1)
    throw new StrataInputError(`${where}.${key}: expected a type, got ${JSON.stringify(v)}`)
  }
  switch (root) {
    case 'ARRAY':
    case 'MULTISET':
      return { root, nullable, element: sub('element') }
    case 'MAP':
      return { root, nullable, key: sub('key'), value: sub('value') }
    default: {
      if (!Array.isArray(j.fields)) throw new StrataInputError(`${where}.fields: expected an array of {"id", "name", "type"}, got ${JSON.stringify(j.fields)}`)
      const fields = (j.fields as unknown[]).map((f, i): DataField => {
        const at = `${where}.fields[${i}]`
        if (typeof f !== 'object' || f === null || Array.isArray(f)) throw new StrataInputError(`${at}: expected {"id", "name", "type"}, got ${JSON.stringify(f)}`)
        const o = f as Record<string, unknown>
        if (typeof o.name !== 'string') throw new StrataInputError(`${at}.name: expected a string, got ${JSON.stringify(o.name)}`)
        let id = UNASSIGNED_ID
        if (o.id !== undefined) {
          if (typeof o.id !== 'number' || !Number.isSafeInteger(o.id) || o.id < 0) throw new StrataInputError(`${at}.id: expected a non-negative integer, got ${JSON.stringify(o.id)}`)
          id = o.id
        }
        const type = typeof o.type === 'string' ? parseNestedText(o.type, `${at}.type`, depth + 1) : typeof o.type === 'object' && o.type !== null ? parseJsonType(o.type as Record<string, unknown>, `${at}.type`, depth + 1) : null
        if (type === null) throw new StrataInputError(`${at}.type: expected a type, got ${JSON.stringify(o.type)}`)
        const field: DataField = { id, name: o.name, type }
        if (o.description !== undefined && o.description !== null) {
          if (typeof o.description !== 'string') throw new StrataInputError(`${at}.description: expected a string, got ${JSON.stringify(o.description)}`)
          field.description = o.description
        }
        return field
      })
      checkRowFields(fields, where)
      return { root, nullable, fields }
    }
  }
}

function parseNestedText(text: string, where: string, depth: number): DataType {
  const p = new TypeTextParser(text, where)
  const t = p.type(depth)
  p.end()
  return t
}

/** A recursive-descent reader of type text: nested types by their brackets, atomic ones by parseAtomicType. */
class TypeTextParser {
  #at = 0
  constructor(
    readonly text: string,
    readonly where: string,
  ) {}

  #skip(): void {
    while (this.#at < this.text.length && /\s/.test(this.text[this.#at])) this.#at++
  }

  #fail(expected: string): never {
    const rest = this.text.slice(this.#at)
    throw new StrataInputError(
      `${this.where}: type ${JSON.stringify(this.text)} cannot be read at character ${this.#at} (${rest === '' ? 'the end' : JSON.stringify(rest.length > 20 ? rest.slice(0, 20) + '...' : rest)}): expected ${expected}`,
    )
  }

  #eat(c: string): boolean {
    this.#skip()
    if (this.text[this.#at] === c) {
      this.#at++
      return true
    }
    return false
  }

  #word(): string {
    this.#skip()
    const m = /^[A-Za-z_][A-Za-z_0-9]*/.exec(this.text.slice(this.#at))
    return m ? m[0] : ''
  }

  end(): void {
    this.#skip()
    if (this.#at < this.text.length) this.#fail('the end of the type')
  }

  /** `NOT NULL` or `NULL` after a nested type; whether it is nullable. */
  #nullability(): boolean {
    const w = this.#word().toUpperCase()
    if (w === 'NULL') {
      this.#at += 4
      return true
    }
    if (w !== 'NOT') return true
    const save = this.#at
    this.#at += 3
    if (this.#word().toUpperCase() !== 'NULL') {
      this.#at = save
      return true
    }
    this.#at += 4
    return false
  }

  type(depth: number): DataType {
    if (depth > MAX_NESTING_DEPTH) throw tooDeep(this.where, this.text)
    const w = this.#word().toUpperCase()
    const save = this.#at
    if (NESTED_ROOTS.has(w)) {
      this.#at += w.length
      const open = w === 'ROW' && this.#eat('(') ? ')' : this.#eat('<') ? '>' : null
      if (open === null) {
        this.#at = save
        this.#fail(`'<' after ${w}`)
      }
      let t: DataType
      if (w === 'ARRAY' || w === 'MULTISET') t = { root: w, nullable: true, element: this.type(depth + 1) }
      else if (w === 'MAP') {
        const key = this.type(depth + 1)
        if (!this.#eat(',')) this.#fail("',' between the key and value types of a MAP")
        t = { root: 'MAP', nullable: true, key, value: this.type(depth + 1) }
      } else t = { root: 'ROW', nullable: true, fields: this.#rowFields(depth, open) }
      if (!this.#eat(open)) this.#fail(`'${open}' closing the ${w}`)
      t.nullable = this.#nullability()
      return t
    }
    return this.#atomic()
  }

  #rowFields(depth: number, close: string): DataField[] {
    const fields: DataField[] = []
    do {
      this.#skip()
      let name: string
      if (this.text[this.#at] === '`') {
        name = this.#quoted('`', 'the field name')
      } else {
        name = this.#word()
        if (name === '') this.#fail('a field name')
        this.#at += name.length
      }
      const type = this.type(depth + 1)
      const field: DataField = { id: UNASSIGNED_ID, name, type }
      if (this.#word().toUpperCase() === 'COMMENT') this.#at += 7
      this.#skip()
      if (this.text[this.#at] === "'") field.description = this.#quoted("'", 'the comment')
      fields.push(field)
    } while (this.#eat(','))
    this.#skip()
    if (this.text[this.#at] !== close) this.#fail(`',' or '${close}' after a ROW field`)
    checkRowFields(fields, this.where)
    return fields
  }

  /** A literal between two `q` (a doubled `q` for one), the cursor on its opening quote: a '…' comment or a `…` field name. */
  #quoted(q: string, what: string): string {
    let j = this.#at + 1
    let s = ''
    for (;;) {
      if (j >= this.text.length) this.#fail(`a closing ${q} of ${what}`)
      if (this.text[j] === q) {
        if (this.text[j + 1] === q) {
          s += q
          j += 2
          continue
        }
        break
      }
      s += this.text[j++]
    }
    this.#at = j + 1
    return s
  }

  /** An atomic type: the text up to a ',', '>', ')' or quote outside parentheses, a COMMENT keyword left out. */
  #atomic(): DataType {
    this.#skip()
    const start = this.#at
    let parens = 0
    let j = start
    for (; j < this.text.length; j++) {
      const c = this.text[j]
      if (c === '(') parens++
      else if (c === ')') {
        if (parens === 0) break
        parens--
      } else if (parens === 0 && (c === ',' || c === '>' || c === '<' || c === "'")) break
    }
    let piece = this.text.slice(start, j)
    const comment = /\s+COMMENT\s*$/i.exec(piece)
    if (comment) piece = piece.slice(0, comment.index)
    if (piece.trim() === '') this.#fail('a type')
    if (this.text[j] === '<') throw new StrataInputError(`${this.where}: type ${JSON.stringify(this.text)}: ${piece.trim().toUpperCase()}<…> is not a type; expected one of ${SUPPORTED}`)
    this.#at = start + piece.length
    const nested = start !== 0 || j < this.text.length
    try {
      return parseAtomicType(piece, this.where)
    } catch (e) {
      if (nested && e instanceof StrataInputError) throw new StrataInputError(`${e.message} (in ${JSON.stringify(this.text)})`)
      throw e
    }
  }
}

/**
 * Numbers the ROW fields of `type` that have no id as Paimon's ReassignFieldId does when a
 * column is added (`Schema.Builder.column`, `SchemaManager` add column): depth first, a
 * field's own type before the field, from `next.id + 1` on; returns the type with its ids.
 */
export function assignFieldIds(type: DataType, next: { id: number }): DataType {
  switch (type.root) {
    case 'ARRAY':
    case 'MULTISET':
      return { ...type, element: assignFieldIds(type.element!, next) }
    case 'MAP':
      return { ...type, key: assignFieldIds(type.key!, next), value: assignFieldIds(type.value!, next) }
    case 'ROW':
      return {
        ...type,
        fields: type.fields!.map((f) => {
          const t = assignFieldIds(f.type, next)
          return { ...f, id: ++next.id, type: t }
        }),
      }
    default:
      return type
  }
}

/** Whether every ROW field inside `type` has an id, none has, or (null) some have. */
export function nestedIdsKnown(type: DataType): boolean | null {
  let known = 0
  let unknown = 0
  const walk = (t: DataType): void => {
    if (t.element) walk(t.element)
    if (t.key) walk(t.key)
    if (t.value) walk(t.value)
    for (const f of t.fields ?? []) {
      if (f.id === UNASSIGNED_ID) unknown++
      else known++
      walk(f.type)
    }
  }
  walk(type)
  return unknown === 0 ? true : known === 0 ? false : null
}

/** The ids of every ROW field inside `type`, depth first. */
export function nestedFieldIds(type: DataType): number[] {
  const out: number[] = []
  const walk = (t: DataType): void => {
    if (t.element) walk(t.element)
    if (t.key) walk(t.key)
    if (t.value) walk(t.value)
    for (const f of t.fields ?? []) {
      out.push(f.id)
      walk(f.type)
    }
  }
  walk(type)
  return out
}

/** Paimon's JSON form of a type in a schema file (`DataType.serializeJson`): the SQL string for atomic types, an object for nested ones. */
export function dataTypeJson(t: DataType): unknown {
  const nn = t.nullable ? '' : ' NOT NULL'
  switch (t.root) {
    case 'ARRAY':
    case 'MULTISET':
      return { type: t.root + nn, element: dataTypeJson(t.element!) }
    case 'MAP':
      return { type: 'MAP' + nn, key: dataTypeJson(t.key!), value: dataTypeJson(t.value!) }
    case 'ROW':
      return {
        type: 'ROW' + nn,
        fields: t.fields!.map((f) => {
          const o: Record<string, unknown> = { id: f.id, name: f.name, type: dataTypeJson(f.type) }
          if (f.description !== undefined) o.description = f.description
          return o
        }),
      }
    default:
      return formatDataType(t)
  }
}

function unsupported(text: string, where: string): StrataInputError {
  return new StrataInputError(`${where}: type ${JSON.stringify(text)} is not supported; expected one of ${SUPPORTED}, optionally followed by NOT NULL`)
}

/** Canonical Paimon spelling (`STRING NOT NULL`, `DECIMAL(10, 2)`, `TIMESTAMP(3)`); unset parameters take Paimon's defaults. */
export function formatDataType(t: DataType): string {
  let s: string
  switch (t.root) {
    case 'VARCHAR':
      s = (t.length ?? MAX_LENGTH) === MAX_LENGTH ? 'STRING' : `VARCHAR(${t.length})`
      break
    case 'VARBINARY':
      s = (t.length ?? MAX_LENGTH) === MAX_LENGTH ? 'BYTES' : `VARBINARY(${t.length})`
      break
    case 'CHAR':
    case 'BINARY':
      s = `${t.root}(${t.length ?? 1})`
      break
    case 'DECIMAL':
      s = `DECIMAL(${t.precision ?? 10}, ${t.scale ?? 0})`
      break
    case 'TIMESTAMP':
      s = `TIMESTAMP(${t.precision ?? 6})`
      break
    case 'ARRAY':
    case 'MULTISET':
      s = `${t.root}<${formatDataType(t.element!)}>`
      break
    case 'MAP':
      s = `MAP<${formatDataType(t.key!)}, ${formatDataType(t.value!)}>`
      break
    case 'ROW':
      // DataField.asSQLString: the name quoted in backticks, a description as COMMENT '…'
      s = `ROW<${t.fields!.map((f) => `\`${f.name.replace(/`/g, '``')}\` ${formatDataType(f.type)}${f.description ? ` COMMENT '${f.description.replace(/'/g, "''")}'` : ''}`).join(', ')}>`
      break
    default:
      s = t.root
  }
  return t.nullable ? s : `${s} NOT NULL`
}

export function isStringType(t: DataType): boolean {
  return t.root === 'VARCHAR' || t.root === 'CHAR'
}

export function isBinaryType(t: DataType): boolean {
  return t.root === 'VARBINARY' || t.root === 'BINARY'
}

export function withNullable(t: DataType, nullable: boolean): DataType {
  return { ...t, nullable }
}

/** The type without its NOT NULL suffix, for messages. */
export function typeLabel(t: DataType): string {
  return formatDataType({ ...t, nullable: true })
}

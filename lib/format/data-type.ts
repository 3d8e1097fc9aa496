// Paimon type strings: parse the spellings a user writes in a schema file and print the
// canonical form Paimon's SchemaSerializer writes (docs/format.md "Schema files", `asSQLString`).

import { RefusedError, StrataInputError } from '../errors.ts'
import type { DataType, TypeRoot } from '../types.ts'

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
  'BOOLEAN, TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, DECIMAL(p, s), STRING, VARCHAR(n), CHAR(n), BYTES, VARBINARY(n), BINARY(n), DATE, TIMESTAMP(p) with p <= 6'

const NESTED_TYPES = ['ARRAY', 'MAP', 'MULTISET', 'ROW']

/**
 * The kind of a nested type (ARRAY, MAP, MULTISET, ROW) as a schema spells it: Paimon's
 * JSON form in a stored schema (`{"type": "ARRAY", "element": "INT"}`) or SQL text
 * (`ARRAY<INT>`); null for anything else.
 */
function nestedTypeKind(type: unknown): string | null {
  const text = typeof type === 'string' ? type : typeof type === 'object' && type !== null && typeof (type as { type?: unknown }).type === 'string' ? (type as { type: string }).type : null
  if (text === null) return null
  const kind = text.trim().toUpperCase().split(/[\s<(]/)[0]
  return NESTED_TYPES.includes(kind) ? kind : null
}

/** The refusal of a nested type, naming it. */
function nestedTypeError(where: string, kind: string): StrataInputError {
  return new RefusedError(`${where}: ${kind} is a nested type, which Strata does not support yet; expected an atomic type: ${SUPPORTED}`)
}

/** Parses a Paimon type string such as `BIGINT NOT NULL`, `DECIMAL(10, 2)` or `VARCHAR(20)`. */
export function parseDataType(text: unknown, where: string): DataType {
  const nested = nestedTypeKind(text)
  if (nested) throw nestedTypeError(where, nested)
  if (typeof text !== 'string') {
    throw new StrataInputError(`${where}: type must be a string such as "BIGINT NOT NULL", got ${JSON.stringify(text)}`)
  }
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

// Snapshot files (`snapshot/snapshot-N`) and the LATEST / EARLIEST hints (docs/format.md
// "Snapshots and hints"). Java writes snapshots with Jackson's default pretty printer
// (api:utils/JsonSerdeUtil.java) in the field order of api:Snapshot.java, leaving out the
// NON_NULL fields that are null; this module produces the same text.
//
// JSON.parse/JSON.stringify cannot carry a Java long: batch commits use
// commitIdentifier = Long.MAX_VALUE (9223372036854775807), which a Number prints as
// 9223372036854776000 and Jackson then rejects. So numbers are written from bigint/integer
// text and the reader below keeps every number's literal until it knows the field's type.

import type { CommitKind, Snapshot } from '../types.ts'

export const SNAPSHOT_VERSION = 3

const COMMIT_KINDS: readonly CommitKind[] = ['APPEND', 'COMPACT', 'OVERWRITE', 'ANALYZE']

type FieldType = 'int' | 'long' | 'bigint' | 'string' | 'commitKind' | 'map'

interface FieldSpec {
  key: keyof Snapshot
  type: FieldType
  required: boolean
}

// Order of api:Snapshot.java's @JsonCreator constructor, which is Jackson's output order.
// `writerVersion` (after commitUser) and `operation` (last) exist in Paimon but not in
// lib/types.ts Snapshot; they are skipped on read like any unknown key.
const FIELDS: readonly FieldSpec[] = [
  { key: 'version', type: 'int', required: true },
  { key: 'uuid', type: 'string', required: false },
  { key: 'id', type: 'long', required: true },
  { key: 'schemaId', type: 'long', required: true },
  { key: 'baseManifestList', type: 'string', required: true },
  { key: 'baseManifestListSize', type: 'long', required: false },
  { key: 'deltaManifestList', type: 'string', required: true },
  { key: 'deltaManifestListSize', type: 'long', required: false },
  { key: 'changelogManifestList', type: 'string', required: false },
  { key: 'changelogManifestListSize', type: 'long', required: false },
  { key: 'indexManifest', type: 'string', required: false },
  { key: 'commitUser', type: 'string', required: true },
  { key: 'commitIdentifier', type: 'bigint', required: true },
  { key: 'commitKind', type: 'commitKind', required: true },
  { key: 'timeMillis', type: 'long', required: true },
  { key: 'totalRecordCount', type: 'long', required: true },
  { key: 'deltaRecordCount', type: 'long', required: true },
  { key: 'changelogRecordCount', type: 'long', required: false },
  { key: 'watermark', type: 'bigint', required: false },
  { key: 'statistics', type: 'string', required: false },
  { key: 'properties', type: 'map', required: false },
  { key: 'nextRowId', type: 'long', required: false },
]

const LONG_MIN = -(2n ** 63n)
const LONG_MAX = 2n ** 63n - 1n

/** Snapshot JSON as Java writes it: `"key" : value`, two-space indent, no trailing newline. */
export function serializeSnapshot(s: Snapshot): string {
  const lines: string[] = []
  for (const f of FIELDS) {
    const v = s[f.key]
    if (v === undefined || v === null) {
      if (f.required) throw new Error(`Snapshot.${f.key}: ${String(v)}, expected a value (required field)`)
      continue
    }
    lines.push(`  ${JSON.stringify(f.key)} : ${formatValue(f, v)}`)
  }
  return `{\n${lines.join(',\n')}\n}`
}

function formatValue(f: FieldSpec, v: unknown): string {
  const at = `Snapshot.${f.key}`
  switch (f.type) {
    case 'int':
    case 'long':
      if (typeof v !== 'number' || !Number.isSafeInteger(v)) throw new Error(`${at}: ${String(v)}, expected a safe integer`)
      return String(v)
    case 'bigint':
      if (typeof v !== 'bigint' || v < LONG_MIN || v > LONG_MAX) {
        throw new Error(`${at}: ${String(v)}, expected a bigint in the Java long range`)
      }
      return v.toString()
    case 'string':
      if (typeof v !== 'string') throw new Error(`${at}: ${typeof v}, expected a string`)
      return JSON.stringify(v)
    case 'commitKind':
      if (!COMMIT_KINDS.includes(v as CommitKind)) {
        throw new Error(`${at}: ${JSON.stringify(v)}, expected one of ${COMMIT_KINDS.join(', ')}`)
      }
      return JSON.stringify(v)
    case 'map': {
      if (typeof v !== 'object' || Array.isArray(v)) throw new Error(`${at}: expected a string map`)
      const entries = Object.entries(v as Record<string, unknown>)
      // Jackson's DefaultPrettyPrinter prints an empty object as `{ }`.
      if (entries.length === 0) return '{ }'
      const inner = entries.map(([k, x]) => {
        if (typeof x !== 'string') throw new Error(`${at}.${k}: ${typeof x}, expected a string`)
        return `    ${JSON.stringify(k)} : ${JSON.stringify(x)}`
      })
      return `{\n${inner.join(',\n')}\n  }`
    }
  }
}

/**
 * Parse snapshot JSON like Jackson with ignoreUnknown: unknown keys are skipped, NON_NULL
 * fields may be absent or null, longs that need it come back as exact bigint.
 */
export function parseSnapshot(text: string): Snapshot {
  return snapshotFromJson(parseJsonDocument(text))
}

/**
 * Keys a snapshot or tag file may hold that Strata reads nothing from and that name no file:
 * Paimon's `writerVersion` and `operation`, the `logOffsets` of older Paimon versions, a
 * tag's own fields (lib/format/tag.ts).
 */
const KNOWN_UNREAD_KEYS: ReadonlySet<string> = new Set(['writerVersion', 'operation', 'logOffsets', 'tagCreateTime', 'tagTimeRetained'])
const FIELD_KEYS: ReadonlySet<string> = new Set(FIELDS.map((f) => f.key))

/** Keys of parsed snapshots that are neither snapshot fields nor KNOWN_UNREAD_KEYS. */
const unknownKeys = new WeakMap<Snapshot, string[]>()

/**
 * The keys of `s`'s file that Strata does not know (none for a snapshot it built itself).
 * Reads skip them, as Jackson does; maintenance refuses a snapshot that has any, since a
 * newer field (or an optional one whose key was garbled) may name files it would otherwise
 * take for unreferenced.
 */
export function unknownSnapshotKeys(s: Snapshot): readonly string[] {
  return unknownKeys.get(s) ?? []
}

/**
 * The snapshot fields of a parsed JSON document (a snapshot file, or a tag file, which is a
 * snapshot with more fields); `what` opens every error message.
 */
export function snapshotFromJson(root: JsonValue, what = 'snapshot JSON'): Snapshot {
  if (!(root instanceof Map)) throw new Error(`${what}: top level is not an object`)
  const out: Record<string, unknown> = {}
  for (const f of FIELDS) {
    const v = root.get(f.key)
    if (v === undefined || v === null) {
      if (f.required) throw new Error(`${what}: required field "${f.key}" is ${v === null ? 'null' : 'missing'}`)
      continue
    }
    out[f.key] = readValue(f, v, what)
  }
  const snapshot = out as unknown as Snapshot
  const unknown = [...root.keys()].filter((k) => !FIELD_KEYS.has(k) && !KNOWN_UNREAD_KEYS.has(k))
  if (unknown.length) unknownKeys.set(snapshot, unknown)
  return snapshot
}

/** A JSON document with every number kept as its literal (JsonNumber). */
export function parseJsonDocument(text: string): JsonValue {
  return new JsonReader(text).document()
}

function readValue(f: FieldSpec, v: JsonValue, what: string): unknown {
  const at = `${what} field "${f.key}"`
  switch (f.type) {
    case 'int':
    case 'long': {
      const n = integerLiteral(v, at)
      if (n < BigInt(Number.MIN_SAFE_INTEGER) || n > BigInt(Number.MAX_SAFE_INTEGER)) {
        throw new Error(`${at}: ${n} is beyond JavaScript's safe integer range`)
      }
      return Number(n)
    }
    case 'bigint':
      return integerLiteral(v, at)
    case 'string':
      if (typeof v !== 'string') throw new Error(`${at}: ${describeJson(v)}, expected a string`)
      return v
    case 'commitKind':
      if (!COMMIT_KINDS.includes(v as CommitKind)) {
        throw new Error(`${at}: ${describeJson(v)}, expected one of ${COMMIT_KINDS.join(', ')}`)
      }
      return v
    case 'map': {
      if (!(v instanceof Map)) throw new Error(`${at}: ${describeJson(v)}, expected an object`)
      // Jackson coerces scalars to String for Map<String, String>. fromEntries keeps a
      // "__proto__" key an own property.
      return Object.fromEntries(
        [...v].map(([k, x]) => {
          if (typeof x === 'string') return [k, x]
          if (x instanceof JsonNumber) return [k, x.raw]
          if (typeof x === 'boolean') return [k, String(x)]
          throw new Error(`${at}: key ${JSON.stringify(k)} is ${describeJson(x)}, expected a string`)
        }),
      )
    }
  }
}

function integerLiteral(v: JsonValue, at: string): bigint {
  if (!(v instanceof JsonNumber) || !/^-?\d+$/.test(v.raw)) throw new Error(`${at}: ${describeJson(v)}, expected an integer`)
  const n = BigInt(v.raw)
  if (n < LONG_MIN || n > LONG_MAX) throw new Error(`${at}: ${v.raw} is out of the Java long range`)
  return n
}

/** `LATEST` / `EARLIEST` content: the id in ASCII decimal, no newline (core:utils/HintFileUtils.java). */
export function serializeHint(id: number): string {
  if (!Number.isSafeInteger(id) || id < 0) throw new Error(`snapshot hint id: ${id}, expected a non-negative integer`)
  return String(id)
}

/** Hint content as Java's Long.parseLong reads it; anything unparsable means "no hint". */
export function parseHint(text: string): number | null {
  if (!/^[+-]?\d+$/.test(text)) return null
  const n = Number(text)
  return Number.isSafeInteger(n) ? n : null
}

// ---- a small JSON reader that keeps number literals ----

export class JsonNumber {
  constructor(readonly raw: string) {}
}

export type JsonValue = null | boolean | string | JsonNumber | JsonValue[] | Map<string, JsonValue>

export function describeJson(v: JsonValue): string {
  if (v instanceof JsonNumber) return v.raw
  if (v instanceof Map) return 'an object'
  if (Array.isArray(v)) return 'an array'
  return JSON.stringify(v)
}

const STRING = /"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/y
const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y

class JsonReader {
  private pos = 0
  constructor(private readonly text: string) {}

  document(): JsonValue {
    const v = this.value()
    this.ws()
    if (this.pos !== this.text.length) this.fail('trailing characters')
    return v
  }

  private fail(what: string): never {
    throw new Error(`snapshot JSON invalid at offset ${this.pos}: ${what}`)
  }

  private ws(): void {
    while (this.pos < this.text.length && ' \t\n\r'.includes(this.text[this.pos])) this.pos++
  }

  private value(): JsonValue {
    this.ws()
    const c = this.text[this.pos]
    if (c === '{') return this.object()
    if (c === '[') return this.array()
    if (c === '"') return this.string()
    if (c === '-' || (c >= '0' && c <= '9')) return this.number()
    for (const [word, v] of [['true', true], ['false', false], ['null', null]] as const) {
      if (this.text.startsWith(word, this.pos)) {
        this.pos += word.length
        return v
      }
    }
    return this.fail(c === undefined ? 'unexpected end' : `unexpected ${JSON.stringify(c)}`)
  }

  private object(): Map<string, JsonValue> {
    const out = new Map<string, JsonValue>()
    this.pos++
    this.ws()
    if (this.text[this.pos] === '}') {
      this.pos++
      return out
    }
    for (;;) {
      this.ws()
      if (this.text[this.pos] !== '"') this.fail('expected a key')
      const key = this.string()
      this.ws()
      if (this.text[this.pos++] !== ':') this.fail('expected ":"')
      out.set(key, this.value())
      this.ws()
      const c = this.text[this.pos++]
      if (c === '}') return out
      if (c !== ',') this.fail('expected "," or "}"')
    }
  }

  private array(): JsonValue[] {
    const out: JsonValue[] = []
    this.pos++
    this.ws()
    if (this.text[this.pos] === ']') {
      this.pos++
      return out
    }
    for (;;) {
      out.push(this.value())
      this.ws()
      const c = this.text[this.pos++]
      if (c === ']') return out
      if (c !== ',') this.fail('expected "," or "]"')
    }
  }

  private string(): string {
    STRING.lastIndex = this.pos
    const m = STRING.exec(this.text)
    if (!m) this.fail('bad string')
    this.pos += m[0].length
    return JSON.parse(m[0])
  }

  private number(): JsonNumber {
    NUMBER.lastIndex = this.pos
    const m = NUMBER.exec(this.text)
    if (!m) this.fail('bad number')
    this.pos += m[0].length
    return new JsonNumber(m[0])
  }
}

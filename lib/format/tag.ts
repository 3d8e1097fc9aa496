// Tag files (`tag/tag-<name>`, docs/format.md "Tags"): the JSON of the tagged snapshot,
// optionally followed by two fields of Paimon's core:tag/Tag.java, `tagCreateTime` and
// `tagTimeRetained`. Paimon writes those two only for a tag created with a retention time
// (core:utils/TagManager.java); without one the tag file is the snapshot's JSON as it is.
//
// The two fields go through Paimon's ObjectMapper (api:utils/JsonSerdeUtil.java), which
// registers Jackson's JavaTimeModule and keeps Jackson's default of writing dates and
// durations as timestamps:
// - LocalDateTime as an array [year, month, day, hour, minute], then the second when the
//   second or the nanosecond is not 0, then the nanosecond when it is not 0;
// - Duration as a decimal number of seconds with exactly nine fraction digits
//   (`3600.000000000`), and `0.0` for a zero duration.
// The default pretty printer puts an array on one line as `[ 2024, 5, 1, 12, 0 ]`.

import type { Snapshot } from '../types.ts'
import { JsonNumber, type JsonValue, describeJson, parseJsonDocument, serializeSnapshot, snapshotFromJson } from './snapshot.ts'

/** Java's LocalDateTime: a wall-clock time without a zone. */
export interface LocalDateTime {
  year: number
  month: number
  day: number
  hour: number
  minute: number
  second: number
  nano: number
}

/** Java's Duration: whole seconds and a nanosecond part in [0, 1e9). */
export interface JavaDuration {
  seconds: number
  nanos: number
}

export interface Tag {
  /** the tagged snapshot, as the tag file holds it (the snapshot file may be gone) */
  snapshot: Snapshot
  tagCreateTime: LocalDateTime | null
  tagTimeRetained: JavaDuration | null
}

/** The fields a tag file adds to the snapshot's, in Jackson's output order (after the snapshot's). */
export const TAG_FIELDS = ['tagCreateTime', 'tagTimeRetained'] as const

/** Tag JSON as Paimon writes it: the snapshot's fields, then the tag's when set. */
export function serializeTag(tag: Tag): string {
  const snapshot = serializeSnapshot(tag.snapshot)
  const extra: string[] = []
  if (tag.tagCreateTime) extra.push(`  "tagCreateTime" : ${formatLocalDateTime(tag.tagCreateTime)}`)
  if (tag.tagTimeRetained) extra.push(`  "tagTimeRetained" : ${formatDuration(tag.tagTimeRetained)}`)
  if (extra.length === 0) return snapshot
  // serializeSnapshot ends with "\n}"
  return `${snapshot.slice(0, -2)},\n${extra.join(',\n')}\n}`
}

/**
 * Parses a tag file as Paimon's Tag.fromJson reads it (unknown keys skipped, the two tag
 * fields null or absent when the tag has no retention). `what` names the file in errors.
 */
export function parseTag(text: string, what = 'tag JSON'): Tag {
  let root: JsonValue
  try {
    root = parseJsonDocument(text)
  } catch (e) {
    throw new Error(`${what}: ${(e as Error).message}`)
  }
  const snapshot = snapshotFromJson(root, what)
  const fields = root as Map<string, JsonValue>
  const created = fields.get('tagCreateTime')
  const retained = fields.get('tagTimeRetained')
  return {
    snapshot,
    tagCreateTime: created === undefined || created === null ? null : readLocalDateTime(created, `${what} field "tagCreateTime"`),
    tagTimeRetained: retained === undefined || retained === null ? null : readDuration(retained, `${what} field "tagTimeRetained"`),
  }
}

function formatLocalDateTime(t: LocalDateTime): string {
  checkLocalDateTime(t, 'tagCreateTime')
  const parts = [t.year, t.month, t.day, t.hour, t.minute]
  if (t.second > 0 || t.nano > 0) parts.push(t.second)
  if (t.nano > 0) parts.push(t.nano)
  return `[ ${parts.join(', ')} ]`
}

function formatDuration(d: JavaDuration): string {
  if (!Number.isSafeInteger(d.seconds) || d.seconds < 0 || !Number.isInteger(d.nanos) || d.nanos < 0 || d.nanos > 999_999_999) {
    throw new Error(`tagTimeRetained: ${d.seconds} s ${d.nanos} ns, expected a non-negative safe number of seconds and nanoseconds in 0..999999999`)
  }
  if (d.seconds === 0 && d.nanos === 0) return '0.0'
  return `${d.seconds}.${String(d.nanos).padStart(9, '0')}`
}

/** `2024-05-01T12:34:56.123456789`, as Java's LocalDateTime.toString shortens it (for listings). */
export function localDateTimeText(t: LocalDateTime): string {
  const p = (n: number, w = 2) => String(n).padStart(w, '0')
  let s = `${p(t.year, 4)}-${p(t.month)}-${p(t.day)}T${p(t.hour)}:${p(t.minute)}`
  if (t.second > 0 || t.nano > 0) s += `:${p(t.second)}`
  if (t.nano > 0) s += `.${p(t.nano, 9).replace(/(000)+$/, '')}`
  return s
}

const RANGES: [keyof LocalDateTime, number, number][] = [
  ['year', -999_999_999, 999_999_999],
  ['month', 1, 12],
  ['day', 1, 31],
  ['hour', 0, 23],
  ['minute', 0, 59],
  ['second', 0, 59],
  ['nano', 0, 999_999_999],
]

function daysIn(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28
  return [4, 6, 9, 11].includes(month) ? 30 : 31
}

function checkLocalDateTime(t: LocalDateTime, at: string): LocalDateTime {
  for (const [k, min, max] of RANGES) {
    const v = t[k]
    if (!Number.isInteger(v) || v < min || v > max) throw new Error(`${at}: ${k} ${v}, expected an integer in ${min}..${max}`)
  }
  if (t.day > daysIn(t.year, t.month)) throw new Error(`${at}: day ${t.day}, expected at most ${daysIn(t.year, t.month)} for ${t.year}-${t.month}`)
  return t
}

/** Jackson's LocalDateTimeDeserializer: the array form, or an ISO-8601 local date-time string. */
function readLocalDateTime(v: JsonValue, at: string): LocalDateTime {
  if (Array.isArray(v)) {
    if (v.length < 5 || v.length > 7 || !v.every((x) => x instanceof JsonNumber && /^-?\d+$/.test(x.raw))) {
      throw new Error(`${at}: ${describeArray(v)}, expected [year, month, day, hour, minute] and optionally second and nanosecond, as integers`)
    }
    const [year, month, day, hour, minute, second = 0, nano = 0] = v.map((x) => Number((x as JsonNumber).raw))
    return checkLocalDateTime({ year, month, day, hour, minute, second, nano }, at)
  }
  if (typeof v === 'string') {
    const m = /^(-?\d{4,9})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?$/.exec(v)
    if (!m) throw new Error(`${at}: ${JSON.stringify(v)}, expected an ISO-8601 local date-time such as "2024-05-01T12:34:56"`)
    return checkLocalDateTime(
      { year: +m[1], month: +m[2], day: +m[3], hour: +m[4], minute: +m[5], second: +(m[6] ?? 0), nano: +(m[7] ?? '').padEnd(9, '0') },
      at,
    )
  }
  throw new Error(`${at}: ${describeJson(v)}, expected an array [year, month, day, hour, minute, …] or an ISO-8601 string`)
}

/** Jackson's DurationDeserializer on a number: seconds, with up to nine fraction digits. */
function readDuration(v: JsonValue, at: string): JavaDuration {
  const m = v instanceof JsonNumber ? /^(\d+)(?:\.(\d{1,9}))?$/.exec(v.raw) : null
  if (!m) throw new Error(`${at}: ${describeJson(v)}, expected a non-negative number of seconds with at most nine fraction digits`)
  const seconds = Number(m[1])
  if (!Number.isSafeInteger(seconds)) throw new Error(`${at}: ${m[1]} seconds is beyond JavaScript's safe integer range`)
  return { seconds, nanos: Number((m[2] ?? '').padEnd(9, '0')) }
}

function describeArray(v: JsonValue[]): string {
  return `[${v.map(describeJson).join(', ')}]`
}

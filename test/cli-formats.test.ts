// `strata read --format table|tsv|csv|json`: each format's exact bytes for the values that
// break naive output (tabs, newlines, CR, backslashes, commas, quotes, the string "NULL",
// null, the empty string), read back by a parser of that format; the default (tsv off a
// terminal, table on one); the table's alignment; and the level-0 hint on stderr of a table
// whose reads skip level 0. The CLI runs in-process (test/helpers/cli-in-process.ts) on
// tables in a temp directory.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { strata } from './helpers/cli-in-process.ts'
import { RowPrinter, TABLE_SIZING_ROWS, chooseFormat, csvField, displayWidth, tsvField } from '../lib/cli/row-formats.ts'
import type { DataField } from '../lib/types.ts'
import { MAX_LENGTH } from '../lib/format/data-type.ts'

/** id → s: every value that a format must escape, quote or keep apart. */
const VALUES: [number, string | null][] = [
  [1, 'a\tb'],
  [2, 'x\ny'],
  [3, 'x\ry'],
  [4, 'back\\slash'],
  [5, 'NULL'],
  [6, null],
  [7, ''],
  [8, 'a,b'],
  [9, 'say "hi"'],
  [10, '\\N'],
]

const TSV =
  'id\ts\n' +
  '1\ta\\tb\n' +
  '2\tx\\ny\n' +
  '3\tx\\ry\n' +
  '4\tback\\\\slash\n' +
  '5\tNULL\n' +
  '6\t\\N\n' +
  '7\t\n' +
  '8\ta,b\n' +
  '9\tsay "hi"\n' +
  '10\t\\\\N\n'

const CSV =
  'id,s\r\n' +
  '1,a\tb\r\n' +
  '2,"x\ny"\r\n' +
  '3,"x\ry"\r\n' +
  '4,back\\slash\r\n' +
  '5,NULL\r\n' +
  '6,\r\n' +
  '7,""\r\n' +
  '8,"a,b"\r\n' +
  '9,"say ""hi"""\r\n' +
  '10,\\N\r\n'

const JSON_LINES =
  '{"id":1,"s":"a\\tb"}\n' +
  '{"id":2,"s":"x\\ny"}\n' +
  '{"id":3,"s":"x\\ry"}\n' +
  '{"id":4,"s":"back\\\\slash"}\n' +
  '{"id":5,"s":"NULL"}\n' +
  '{"id":6,"s":null}\n' +
  '{"id":7,"s":""}\n' +
  '{"id":8,"s":"a,b"}\n' +
  '{"id":9,"s":"say \\"hi\\""}\n' +
  '{"id":10,"s":"\\\\N"}\n'

// null is an empty cell, the string "NULL" is NULL; control characters escaped, backslashes not
const TABLE =
  ' id | s\n' +
  '----+------------\n' +
  '  1 | a\\tb\n' +
  '  2 | x\\ny\n' +
  '  3 | x\\ry\n' +
  '  4 | back\\slash\n' +
  '  5 | NULL\n' +
  '  6 | \n' +
  '  7 | \n' +
  '  8 | a,b\n' +
  '  9 | say "hi"\n' +
  ' 10 | \\N\n' +
  '(10 rows)\n'

/** RFC 4180 records: fields split at commas outside quotes, records at CRLF outside quotes; an empty unquoted field is null. */
function parseCsv(text: string): (string | null)[][] {
  const records: (string | null)[][] = []
  let record: (string | null)[] = []
  let i = 0
  while (i < text.length) {
    let field: string | null
    if (text[i] === '"') {
      field = ''
      i++
      for (;;) {
        const q = text.indexOf('"', i)
        if (q < 0) throw new Error('unterminated quote')
        field += text.slice(i, q)
        if (text[q + 1] === '"') {
          field += '"'
          i = q + 2
        } else {
          i = q + 1
          break
        }
      }
    } else {
      let end = i
      while (end < text.length && text[end] !== ',' && !text.startsWith('\r\n', end)) end++
      field = end === i ? null : text.slice(i, end)
      if (field !== null && /["\r\n]/.test(field)) throw new Error(`unquoted field with a quote or line break: ${JSON.stringify(field)}`)
      i = end
    }
    record.push(field)
    if (text[i] === ',') i++
    else if (text.startsWith('\r\n', i)) {
      records.push(record)
      record = []
      i += 2
    } else if (i < text.length) throw new Error(`expected a comma or CRLF at ${i}`)
  }
  if (record.length) throw new Error('last record not ended by CRLF')
  return records
}

/** PostgreSQL text format: lines at LF, fields at tab, \N null, backslash escapes undone. */
function parseTsv(text: string): (string | null)[][] {
  expect(text.endsWith('\n')).toBe(true)
  const escapes: Record<string, string> = { '\\': '\\', t: '\t', n: '\n', r: '\r', b: '\b', f: '\f', v: '\v' }
  return text
    .slice(0, -1)
    .split('\n')
    .map((line) => line.split('\t').map((f) => (f === '\\N' ? null : f.replace(/\\(.)/g, (_, c: string) => escapes[c] ?? c))))
}

let dir: string
let table: string

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'strata-cli-formats-'))
  table = join(dir, 't')
  writeFileSync(join(dir, 'schema.json'), JSON.stringify({ fields: [{ name: 'id', type: 'INT NOT NULL' }, { name: 's', type: 'STRING' }], primaryKeys: ['id'], options: { bucket: '1' } }))
  expect((await strata(['create', table, '--schema', join(dir, 'schema.json')])).code).toBe(0)
  writeFileSync(join(dir, 'rows.jsonl'), VALUES.map(([id, s]) => JSON.stringify({ id, s })).join('\n') + '\n')
  expect(await strata(['write', table, join(dir, 'rows.jsonl')])).toEqual({ code: 0, stdout: '1\n', stderr: '' })
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('read --format', () => {
  it('tsv: PostgreSQL text format, exactly, and it unescapes back to the values', async () => {
    expect(await strata(['read', table, '--format', 'tsv'])).toEqual({ code: 0, stdout: TSV, stderr: '' })
    expect(parseTsv(TSV)).toEqual([['id', 's'], ...VALUES.map(([id, s]) => [String(id), s])])
  })

  it('csv: RFC 4180 with CRLF, exactly, and an RFC 4180 parser reads back the values, null apart from ""', async () => {
    expect(await strata(['read', table, '--format', 'csv'])).toEqual({ code: 0, stdout: CSV, stderr: '' })
    expect(parseCsv(CSV)).toEqual([['id', 's'], ...VALUES.map(([id, s]) => [String(id), s])])
  })

  it('json: one object per line, and --json is the same', async () => {
    expect(await strata(['read', table, '--format', 'json'])).toEqual({ code: 0, stdout: JSON_LINES, stderr: '' })
    expect(await strata(['read', table, '--json'])).toEqual({ code: 0, stdout: JSON_LINES, stderr: '' })
    expect(await strata(['read', table, '--json', '--format', 'json'])).toEqual({ code: 0, stdout: JSON_LINES, stderr: '' })
    expect(JSON_LINES.trim().split('\n').map((l) => JSON.parse(l))).toEqual(VALUES.map(([id, s]) => ({ id, s })))
  })

  it('table: aligned, one line per row, null an empty cell and "NULL" the string', async () => {
    expect(await strata(['read', table, '--format', 'table'])).toEqual({ code: 0, stdout: TABLE, stderr: '' })
  })

  it('default: tsv when stdout is not a terminal, table when it is', async () => {
    expect(process.stdout.isTTY).toBeFalsy()
    expect(await strata(['read', table])).toEqual({ code: 0, stdout: TSV, stderr: '' })
    const had = Object.getOwnPropertyDescriptor(process.stdout, 'isTTY')
    Object.defineProperty(process.stdout, 'isTTY', { value: true, configurable: true })
    try {
      expect(await strata(['read', table])).toEqual({ code: 0, stdout: TABLE, stderr: '' })
    } finally {
      if (had) Object.defineProperty(process.stdout, 'isTTY', had)
      else delete (process.stdout as { isTTY?: boolean }).isTTY
    }
  })

  it('incremental reads take the format too, _kind first', async () => {
    const r = await strata(['read', table, '--from-snapshot', '0', '--format', 'csv', '--columns', 's'])
    expect(r).toMatchObject({ code: 0, stderr: '' })
    expect(parseCsv(r.stdout)).toEqual([['_kind', 's'], ...VALUES.map(([, s]) => ['+I', s])])
    const t = await strata(['read', table, '--from-snapshot', '0', '--format', 'tsv', '--columns', 'id'])
    expect(t.stdout.split('\n').slice(0, 3)).toEqual(['_kind\tid', '+I\t1', '+I\t2'])
    const j = await strata(['read', table, '--from-snapshot', '0', '--json', '--columns', 'id'])
    expect(j.stdout.split('\n')[0]).toBe('{"_kind":"+I","id":1}')
  })

  it('refuses an unknown format, and --json with another one, naming both', async () => {
    expect(await strata(['read', table, '--format', 'xml'])).toEqual({ code: 2, stdout: '', stderr: 'strata: --format "xml": expected one of table, tsv, csv, json\n' })
    expect(await strata(['read', table, '--format', 'csv', '--json'])).toEqual({ code: 2, stdout: '', stderr: 'strata: --format csv and --json: expected one of them (--json is --format json)\n' })
  })
})

describe('row formats', () => {
  const fields: DataField[] = [
    { id: 0, name: 'k', type: { root: 'VARCHAR', nullable: true, length: MAX_LENGTH } },
    { id: 1, name: 'n', type: { root: 'BIGINT', nullable: true } },
  ]
  const collect = () => {
    const lines: { text: string; row: boolean }[] = []
    return { lines, sink: { add: (text: string, row = true) => (lines.push({ text, row }), false) } }
  }

  it('a field escapes only what its format needs', () => {
    expect(tsvField('plain text, "quoted"')).toBe('plain text, "quoted"')
    expect(tsvField('\b\f\v')).toBe('\\b\\f\\v')
    expect(csvField('tab\there')).toBe('tab\there')
    expect(csvField(' spaced ')).toBe(' spaced ')
    expect(chooseFormat({}, false)).toBe('tsv')
    expect(chooseFormat({}, true)).toBe('table')
    expect(chooseFormat({ json: true }, true)).toBe('json')
  })

  it('the table sizes its columns on the first rows, then streams: a longer later cell widens its own line only', () => {
    const { lines, sink } = collect()
    const p = new RowPrinter(sink, 'table', fields)
    expect(lines).toEqual([])
    for (let i = 0; i < TABLE_SIZING_ROWS - 1; i++) p.add([`k${i % 10}`, BigInt(i)])
    // nothing written while the widths are being found
    expect(lines).toEqual([])
    p.add(['k\n漢字', 5n])
    expect(lines.length).toBe(TABLE_SIZING_ROWS + 2)
    p.add(['a much longer key than any before', null])
    p.end()
    const text = lines.map((l) => l.text)
    expect(text[0]).toBe(' k       |   n')
    expect(text[1]).toBe('---------+-----')
    expect(text[2]).toBe(' k0      |   0')
    // the wide characters take two columns each, the newline is escaped: 7 columns
    expect(text[TABLE_SIZING_ROWS + 1]).toBe(' k\\n漢字 |   5')
    expect(text.at(-2)).toBe(' a much longer key than any before |    ')
    expect(text.at(-1)).toBe(`(${TABLE_SIZING_ROWS + 1} rows)`)
    // one line per row, each row's '|' where the header's is (up to the sizing rows)
    const bar = displayWidth(text[0].slice(0, text[0].indexOf('|')))
    for (const l of text.slice(2, TABLE_SIZING_ROWS + 2)) {
      expect(l.includes('\n')).toBe(false)
      expect(displayWidth(l.slice(0, l.indexOf('|')))).toBe(bar)
    }
    // the header, the separator and the count are not rows (RowOutput's count of rows written)
    expect(lines.filter((l) => !l.row).map((l) => l.text)).toEqual([text[0], text[1], text.at(-1)])
  })

  it('an empty read is a header, a separator and its count', () => {
    const { lines, sink } = collect()
    const p = new RowPrinter(sink, 'table', fields)
    p.end()
    expect(lines.map((l) => l.text)).toEqual([' k | n', '---+---', '(0 rows)'])
  })
})

describe('the level-0 hint', () => {
  const hint = (rows: number, t: string) =>
    `${rows} rows in level 0 wait for compaction; run 'strata compact ${t}' to make them visible, or 'strata alter ${t} set deletion-vectors.merge-on-read true' to merge level 0 into every read\n`

  async function tableWith(name: string, options: Record<string, string>): Promise<string> {
    const t = join(dir, name)
    writeFileSync(join(dir, `${name}.json`), JSON.stringify({ fields: [{ name: 'id', type: 'INT NOT NULL' }, { name: 'v', type: 'STRING' }], primaryKeys: ['id'], options: { bucket: '1', ...options } }))
    expect((await strata(['create', t, '--schema', join(dir, `${name}.json`)])).code).toBe(0)
    writeFileSync(join(dir, `${name}.jsonl`), '{"id":1,"v":"a"}\n{"id":2,"v":"b"}\n{"id":3,"v":"c"}\n')
    expect((await strata(['write', t, join(dir, `${name}.jsonl`)])).code).toBe(0)
    return t
  }

  it('a deletion-vector table: the rows level 0 holds, on stderr, until a compaction shows them', async () => {
    const t = await tableWith('dv', { 'deletion-vectors.enabled': 'true' })
    expect(await strata(['read', t, '--format', 'tsv'])).toEqual({ code: 0, stdout: 'id\tv\n', stderr: hint(3, t) })
    // the snapshot read is the one counted
    expect(await strata(['read', t, '--snapshot', '1', '--json'])).toEqual({ code: 0, stdout: '', stderr: hint(3, t) })
    // an incremental read shows level 0's rows: no hint
    expect((await strata(['read', t, '--from-snapshot', '0'])).stderr).toBe('')
    expect((await strata(['compact', t])).code).toBe(0)
    expect(await strata(['read', t, '--format', 'tsv'])).toEqual({ code: 0, stdout: 'id\tv\n1\ta\n2\tb\n3\tc\n', stderr: '' })
  })

  it("the other way: with 'deletion-vectors.merge-on-read' set, reads merge level 0 in and say nothing", async () => {
    const t = join(dir, 'dv-one')
    writeFileSync(join(dir, 'dv-one.json'), JSON.stringify({ fields: [{ name: 'id', type: 'INT NOT NULL' }], primaryKeys: ['id'], options: { bucket: '1', 'deletion-vectors.enabled': 'true' } }))
    expect((await strata(['create', t, '--schema', join(dir, 'dv-one.json')])).code).toBe(0)
    writeFileSync(join(dir, 'dv-one.jsonl'), '{"id":7}\n')
    expect((await strata(['write', t, join(dir, 'dv-one.jsonl')])).code).toBe(0)
    expect(await strata(['read', t])).toEqual({
      code: 0,
      stdout: 'id\n',
      stderr: `1 row in level 0 waits for compaction; run 'strata compact ${t}' to make it visible, or 'strata alter ${t} set deletion-vectors.merge-on-read true' to merge level 0 into every read\n`,
    })
    expect((await strata(['alter', t, 'set', 'deletion-vectors.merge-on-read', 'true'])).code).toBe(0)
    expect(await strata(['read', t])).toEqual({ code: 0, stdout: 'id\n7\n', stderr: '' })
  })

  it('a first-row table: the same hint, without merge-on-read (first-row reads skip level 0 whatever the options)', async () => {
    const t = await tableWith('first-row', { 'merge-engine': 'first-row' })
    const r = await strata(['read', t])
    expect(r).toEqual({ code: 0, stdout: 'id\tv\n', stderr: `3 rows in level 0 wait for compaction; run 'strata compact ${t}' to make them visible\n` })
  })

  it('a table that merges level 0 into reads: no hint', async () => {
    const t = await tableWith('merged', {})
    expect(await strata(['read', t])).toEqual({ code: 0, stdout: 'id\tv\n1\ta\n2\tb\n3\tc\n', stderr: '' })
  })
})

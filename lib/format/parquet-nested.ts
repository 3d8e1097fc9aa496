// Nested columns (ARRAY, MAP, MULTISET, ROW) in Parquet data files (docs/format.md "Nested
// types"): the group structure Paimon's ParquetSchemaConverter declares, the values' shredding
// into repetition and definition levels per leaf column (Dremel), and the way back: each leaf
// chunk's pages decoded into levels and values, and the levels assembled into `Value`s.

import type { CompressionCodec, SchemaElement, SchemaTree } from 'hyparquet'
import { parquetHeader } from 'hyparquet/src/column.js'
import { convert, convertWithDictionary } from 'hyparquet/src/convert.js'
import { decompressPage, readDataPage, readDataPageV2 } from 'hyparquet/src/datapage.js'
import { readPlain } from 'hyparquet/src/plain.js'
import type { DataType, MapValue, Value } from '../types.ts'
import { parquetSchemaElement, physicalEncoder, rawReadElement, valueDecoder, type PhysicalEncoder, type ValueDecoder } from './parquet-types.ts'

// ---------------------------------------------------------------------------------------------
// The schema (`ParquetSchemaConverter.convertToParquetType`)

/** `SpecialFields.STRUCTURED_TYPE_FIELD_ID_BASE` (Integer.MAX_VALUE / 4) and the depth limit the ids are spaced by. */
const STRUCTURED_BASE = 536870911
const DEPTH_SPACING = 1024
/** Field ids of a list element, a map key and a map value (`SpecialFields`), in Java's int arithmetic. */
const elementId = (fieldId: number, depth: number): number => (STRUCTURED_BASE + Math.imul(fieldId, DEPTH_SPACING) + depth) | 0
const keyId = (fieldId: number, depth: number): number => (STRUCTURED_BASE - Math.imul(fieldId, DEPTH_SPACING) - depth) | 0

/** One leaf column of a nested column: where it is, its type and levels, its value conversion. */
export interface NestedLeaf {
  path: string[]
  element: SchemaElement
  type: DataType
  maxDef: number
  maxRep: number
}

/** A node of a nested column: its kind, whether it adds a definition level, the leaves under it [first, last). */
export type NestedNode =
  | { kind: 'leaf'; optional: boolean; first: number; last: number }
  | { kind: 'list'; optional: boolean; rep: number; element: NestedNode; first: number; last: number }
  | { kind: 'map'; optional: boolean; rep: number; key: NestedNode; value: NestedNode; multiset: boolean; first: number; last: number }
  | { kind: 'row'; optional: boolean; fields: NestedNode[]; first: number; last: number }

/** A nested column as Strata writes it: its schema elements (its own first), leaves and node tree. */
export interface NestedColumn {
  name: string
  type: DataType
  elements: SchemaElement[]
  leaves: NestedLeaf[]
  root: NestedNode
  /** each leaf's value conversion (physicalEncoder of its type) */
  encoders: PhysicalEncoder[]
}

const INT_NOT_NULL: DataType = { root: 'INT', nullable: false }

/**
 * The Parquet schema of a nested column as Paimon declares it: an ARRAY a LIST group holding a
 * repeated group `list` with its `element`; a MAP (and a MULTISET, a MAP of INT NOT NULL counts)
 * a MAP group holding a repeated group `key_value` with a REQUIRED `key` and a `value`; a ROW a
 * group of its fields, each with its own id. Elements, keys and values take the ids
 * `SpecialFields.getArrayElementFieldId` / `getMapKeyFieldId` / `getMapValueFieldId` give.
 */
export function nestedColumn(name: string, fieldId: number, type: DataType): NestedColumn {
  const elements: SchemaElement[] = []
  const leaves: NestedLeaf[] = []
  const walk = (name: string, type: DataType, fieldId: number, ownId: number, depth: number, path: string[], rep: number, def: number): NestedNode => {
    const repetition_type = type.nullable ? 'OPTIONAL' : 'REQUIRED'
    const optional = type.nullable
    const d = def + (optional ? 1 : 0)
    const first = leaves.length
    switch (type.root) {
      case 'ARRAY': {
        elements.push({ name, repetition_type, field_id: ownId, num_children: 1, converted_type: 'LIST', logical_type: { type: 'LIST' } })
        elements.push({ name: 'list', repetition_type: 'REPEATED', num_children: 1 })
        const element = walk('element', type.element!, fieldId, elementId(fieldId, depth + 1), depth + 1, [...path, 'list', 'element'], rep + 1, d + 1)
        return { kind: 'list', optional, rep: rep + 1, element, first, last: leaves.length }
      }
      case 'MAP':
      case 'MULTISET': {
        const multiset = type.root === 'MULTISET'
        elements.push({ name, repetition_type, field_id: ownId, num_children: 1, converted_type: 'MAP', logical_type: { type: 'MAP' } })
        elements.push({ name: 'key_value', repetition_type: 'REPEATED', num_children: 2, converted_type: 'MAP_KEY_VALUE' })
        // Parquet keys are never null: Paimon declares the key REQUIRED whatever the type says
        const keyType = { ...(multiset ? type.element! : type.key!), nullable: false }
        const at = [...path, 'key_value']
        const key = walk('key', keyType, fieldId, keyId(fieldId, depth + 1), depth + 1, [...at, 'key'], rep + 1, d + 1)
        const value = walk('value', multiset ? INT_NOT_NULL : type.value!, fieldId, elementId(fieldId, depth + 1), depth + 1, [...at, 'value'], rep + 1, d + 1)
        return { kind: 'map', optional, rep: rep + 1, key, value, multiset, first, last: leaves.length }
      }
      case 'ROW': {
        elements.push({ name, repetition_type, field_id: ownId, num_children: type.fields!.length })
        const fields = type.fields!.map((f) => walk(f.name, f.type, f.id, f.id, 0, [...path, f.name], rep, d))
        return { kind: 'row', optional, fields, first, last: leaves.length }
      }
      default: {
        const element = parquetSchemaElement(name, ownId, type)
        elements.push(element)
        leaves.push({ path, element, type, maxDef: d, maxRep: rep })
        return { kind: 'leaf', optional, first, last: first + 1 }
      }
    }
  }
  const root = walk(name, type, fieldId, fieldId, 0, [name], 0, 0)
  return { name, type, elements, leaves, root, encoders: leaves.map((l) => physicalEncoder(l.path.join('.'), l.type)) }
}

function isNested(t: DataType): boolean {
  return t.root === 'ARRAY' || t.root === 'MAP' || t.root === 'MULTISET' || t.root === 'ROW'
}

/** A column's schema elements, its own first: one for a flat column, the group tree of a nested one. */
export function columnElements(name: string, fieldId: number, type: DataType): SchemaElement[] {
  return isNested(type) ? nestedColumn(name, fieldId, type).elements : [parquetSchemaElement(name, fieldId, type)]
}


// ---------------------------------------------------------------------------------------------
// Values: checked, sized, shredded

/** The levels and values of one leaf column of a chunk being written. */
export interface ShreddedLeaf {
  reps: number[]
  defs: number[]
  /** physical values of the entries whose def is the leaf's maximum */
  values: unknown[]
}

/** Rows [0, rows) of a nested column (checked values) as each leaf's levels and values. */
export function shred(col: NestedColumn, values: ArrayLike<unknown>, rows: number): ShreddedLeaf[] {
  const out: ShreddedLeaf[] = col.leaves.map(() => ({ reps: [], defs: [], values: [] }))
  const enc = col.encoders
  const empty = (node: NestedNode, r: number, d: number): void => {
    for (let l = node.first; l < node.last; l++) {
      out[l].reps.push(r)
      out[l].defs.push(d)
    }
  }
  const put = (node: NestedNode, v: Value, r: number, d: number): void => {
    if (v === null || v === undefined) {
      empty(node, r, d)
      return
    }
    const dd = d + (node.optional ? 1 : 0)
    switch (node.kind) {
      case 'leaf': {
        const o = out[node.first]
        o.reps.push(r)
        o.defs.push(dd)
        o.values.push(enc[node.first](v))
        return
      }
      case 'row': {
        const fields = node.fields
        for (let i = 0; i < fields.length; i++) put(fields[i], (v as Value[])[i], r, dd)
        return
      }
      case 'list': {
        const a = v as Value[]
        if (a.length === 0) empty(node, r, dd)
        for (let i = 0; i < a.length; i++) put(node.element, a[i], i === 0 ? r : node.rep, dd + 1)
        return
      }
      case 'map': {
        const m = v as MapValue
        if (m.keys.length === 0) empty(node, r, dd)
        for (let i = 0; i < m.keys.length; i++) {
          const rr = i === 0 ? r : node.rep
          put(node.key, m.keys[i], rr, dd + 1)
          put(node.value, m.values[i], rr, dd + 1)
        }
        return
      }
    }
  }
  for (let r = 0; r < rows; r++) put(col.root, values[r] as Value, 0, 0)
  return out
}

// ---------------------------------------------------------------------------------------------
// Reading: the file's structure matched against the type, leaf chunks decoded, rows assembled

/** A nested column of a file, as the reader decodes it. */
export interface NestedReadColumn {
  name: string
  type: DataType
  root: NestedNode
  leaves: { path: string[]; element: SchemaElement; raw: SchemaElement; decode: ValueDecoder; maxDef: number; maxRep: number }[]
}

function isRepeated(e: SchemaElement): boolean {
  return e.repetition_type === 'REPEATED'
}

/**
 * Matches the file's schema tree of a column (hyparquet's SchemaTree) against the table's type:
 * a LIST group of one repeated group of one element (Parquet's three-level list), a MAP group
 * of one repeated group of key and value, a group of the ROW's fields found by name. Anything
 * else (two-level lists, a missing field, a leaf where a group should be) is refused by name.
 */
export function nestedReadColumn(name: string, type: DataType, tree: SchemaTree): NestedReadColumn {
  const leaves: NestedReadColumn['leaves'] = []
  const fail = (path: string[], what: string): never => {
    throw new Error(`data file column ${path.join('.')}: ${what}; expected ${type.root === 'ROW' ? 'a group of the ROW fields' : 'Paimon\'s layout of ' + type.root} (docs/format.md "Nested types")`)
  }
  const walk = (t: DataType, node: SchemaTree, rep: number, def: number): NestedNode => {
    const e = node.element
    if (isRepeated(e)) fail(node.path, 'a repeated field outside a LIST or MAP group')
    const optional = e.repetition_type === 'OPTIONAL'
    const d = def + (optional ? 1 : 0)
    const first = leaves.length
    switch (t.root) {
      case 'ARRAY': {
        const list = node.children[0]
        if (node.children.length !== 1 || !list || !isRepeated(list.element) || list.children.length !== 1) fail(node.path, 'not a three-level LIST group (group, repeated group, element)')
        const element = walk(t.element!, list.children[0], rep + 1, d + 1)
        return { kind: 'list', optional, rep: rep + 1, element, first, last: leaves.length }
      }
      case 'MAP':
      case 'MULTISET': {
        const kv = node.children[0]
        if (node.children.length !== 1 || !kv || !isRepeated(kv.element) || kv.children.length !== 2) fail(node.path, 'not a MAP group (group, repeated group of key and value)')
        const multiset = t.root === 'MULTISET'
        const key = walk({ ...(multiset ? t.element! : t.key!), nullable: false }, kv.children[0], rep + 1, d + 1)
        const value = walk(multiset ? INT_NOT_NULL : t.value!, kv.children[1], rep + 1, d + 1)
        return { kind: 'map', optional, rep: rep + 1, key, value, multiset, first, last: leaves.length }
      }
      case 'ROW': {
        if (node.children.length === 0) fail(node.path, 'a leaf column where a ROW group should be')
        const fields = t.fields!.map((f) => {
          const child = node.children.find((c) => c.element.name === f.name) ?? node.children.find((c) => c.element.field_id !== undefined && c.element.field_id === f.id)
          if (!child) return fail(node.path, `no field '${f.name}' (it has ${node.children.map((c) => c.element.name).join(', ')})`)
          return walk(f.type, child, rep, d)
        })
        return { kind: 'row', optional, fields, first, last: leaves.length }
      }
      default: {
        if (node.children.length > 0) fail(node.path, `a group where a ${t.root} leaf should be`)
        const path = node.path.join('.')
        leaves.push({ path: node.path, element: e, raw: rawReadElement(e, t), decode: valueDecoder(path, t, e), maxDef: d, maxRep: rep })
        return { kind: 'leaf', optional, first, last: first + 1 }
      }
    }
  }
  const root = walk(type, tree, 0, 0)
  return { name, type, root, leaves }
}

/** A leaf chunk decoded: an entry per level pair, and the physical values of the entries at the maximum definition level. */
export interface DecodedLeaf {
  reps: ArrayLike<number>
  defs: ArrayLike<number>
  values: ArrayLike<unknown>
}

type Decompressors = Parameters<typeof decompressPage>[3]

/**
 * Decodes every page of one leaf chunk (`bytes`: the whole chunk, dictionary page first)
 * through hyparquet's page readers, which take every encoding Parquet defines: the levels and
 * values, concatenated. `schemaPath` is hyparquet's path from the root to the leaf.
 */
export function decodeLeafChunk(bytes: Uint8Array, leaf: NestedReadColumn['leaves'][number], schemaPath: SchemaTree[], codec: CompressionCodec, compressors: Decompressors, parsers: object): DecodedLeaf {
  const decoder = { pathInSchema: leaf.path, type: leaf.element.type!, element: leaf.raw, schemaPath, codec, parsers, compressors, utf8: false }
  const reader = { view: new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength), offset: 0 }
  const reps: number[] = []
  const defs: number[] = []
  const values: unknown[] = []
  let dictionary: ArrayLike<unknown> | undefined
  while (reader.offset < bytes.length) {
    const header = parquetHeader(reader)
    const body = bytes.subarray(reader.offset, reader.offset + header.compressed_page_size)
    reader.offset += header.compressed_page_size
    if (header.type === 'DICTIONARY_PAGE') {
      const page = decompressPage(body, Number(header.uncompressed_page_size), codec, compressors)
      const pr = { view: new DataView(page.buffer, page.byteOffset, page.byteLength), offset: 0 }
      dictionary = convert(readPlain(pr, decoder.type, header.dictionary_page_header!.num_values, leaf.raw.type_length), decoder as never) as ArrayLike<unknown>
      continue
    }
    let page: { definitionLevels: number[]; repetitionLevels: number[]; dataPage: ArrayLike<unknown> }
    let n: number
    let encoding: string
    if (header.type === 'DATA_PAGE') {
      const daph = header.data_page_header!
      page = readDataPage(decompressPage(body, Number(header.uncompressed_page_size), codec, compressors), daph, decoder as never) as typeof page
      n = daph.num_values
      encoding = daph.encoding
    } else if (header.type === 'DATA_PAGE_V2') {
      page = readDataPageV2(body, header, decoder as never) as typeof page
      n = header.data_page_header_v2!.num_values
      encoding = header.data_page_header_v2!.encoding
    } else continue // index pages carry no values
    const vals = convertWithDictionary(page.dataPage as never, dictionary as never, encoding as never, decoder as never) as ArrayLike<unknown>
    // (no levels at all when the leaf has no maximum: hyparquet gives [] or undefined)
    const r = page.repetitionLevels ?? []
    const d = page.definitionLevels ?? []
    for (let i = 0; i < n; i++) {
      reps.push(r.length ? r[i] : 0)
      defs.push(d.length ? d[i] : leaf.maxDef)
    }
    for (let i = 0; i < vals.length; i++) values.push(vals[i])
  }
  return { reps, defs, values }
}

/**
 * The rows of a nested column from its leaves' levels and values (Dremel assembly): each row's
 * entries start at repetition level 0; a node is null when the definition level of its first
 * leaf's entry stops above it, an empty list or map when it stops at the list, and a list goes
 * on while its first leaf's next entry repeats at the list's level.
 */
export function assembleNested(col: NestedReadColumn, leaves: DecodedLeaf[]): Value[] {
  const pos = new Int32Array(leaves.length)
  const valuePos = new Int32Array(leaves.length)
  const skip = (node: NestedNode): void => {
    for (let l = node.first; l < node.last; l++) pos[l]++
  }
  const read = (node: NestedNode, d: number): Value => {
    const lead = leaves[node.first]
    const def = lead.defs[pos[node.first]]
    if (def === undefined) throw new Error(`data file column ${col.name}: its leaf columns end before its rows do`)
    const dd = d + (node.optional ? 1 : 0)
    if (def < dd) {
      skip(node)
      return null
    }
    switch (node.kind) {
      case 'leaf': {
        const l = node.first
        pos[l]++
        const leaf = col.leaves[l]
        return leaf.decode(leaves[l].values[valuePos[l]++])
      }
      case 'row':
        return node.fields.map((f) => read(f, dd))
      case 'list': {
        if (def === dd) {
          skip(node)
          return []
        }
        const out: Value[] = []
        do out.push(read(node.element, dd + 1))
        while (lead.reps[pos[node.first]] === node.rep)
        return out
      }
      case 'map': {
        if (def === dd) {
          skip(node)
          return { keys: [], values: [] }
        }
        const keys: Value[] = []
        const values: Value[] = []
        do {
          keys.push(read(node.key, dd + 1))
          values.push(read(node.value, dd + 1))
        } while (lead.reps[pos[node.first]] === node.rep)
        return { keys, values }
      }
    }
  }
  const rows: Value[] = []
  const lead = leaves[0]
  while (pos[0] < lead.defs.length) {
    if (lead.reps[pos[0]] !== 0) throw new Error(`data file column ${col.name}: a row starts at repetition level ${lead.reps[pos[0]]}, expected 0`)
    rows.push(read(col.root, 0))
  }
  for (let l = 0; l < leaves.length; l++) {
    if (pos[l] !== leaves[l].defs.length) throw new Error(`data file column ${col.name}: leaf ${col.leaves[l].path.join('.')} holds ${leaves[l].defs.length} entries, its rows use ${pos[l]}`)
  }
  return rows
}

// Page headers of Parquet column chunks as the readers meet them (Thrift compact protocol,
// parquet.thrift PageHeader): `readPageHeader` for Strata's decoder, `checkPages` for every read.

export const PAGE_DATA = 0
export const PAGE_DICTIONARY = 2
export const PAGE_DATA_V2 = 3
export const ENC_PLAIN = 0
export const ENC_PLAIN_DICTIONARY = 2
export const ENC_RLE = 3
export const ENC_RLE_DICTIONARY = 8

export interface PageHeader {
  type: number
  uncompressed: number
  compressed: number
  /** values in the page (nulls included) */
  numValues: number
  encoding: number
  /** v1: encoding of definition levels */
  defEncoding: number
  /** v2 */
  numNulls: number
  defBytes: number
  repBytes: number
  isCompressed: boolean
}

/** A Thrift compact reader over `buf` from `pos`. */
export class Thrift {
  constructor(
    readonly buf: Uint8Array,
    public pos: number,
  ) {}

  byte(): number {
    if (this.pos >= this.buf.length) throw new Error('page header runs past the end of the column chunk')
    return this.buf[this.pos++]
  }

  varint(): number {
    let v = 0
    for (let shift = 0; ; shift += 7) {
      const b = this.byte()
      v += (b & 0x7f) * 2 ** shift
      if (b < 0x80) return v
      if (shift > 63) throw new Error('page header has a varint over 10 bytes')
    }
  }

  int(): number {
    const z = this.varint()
    return z % 2 === 0 ? z / 2 : -(z + 1) / 2
  }

  skip(type: number): void {
    switch (type) {
      case 1:
      case 2:
        return
      case 3:
        this.pos++
        return
      case 4:
      case 5:
      case 6:
        this.varint()
        return
      case 7:
        this.pos += 8
        return
      case 8:
        this.pos += this.varint()
        return
      case 9:
      case 10: {
        const h = this.byte()
        const size = h >>> 4 === 15 ? this.varint() : h >>> 4
        const et = h & 15
        // every element takes a byte at least: a garbled size fails here, not after 2^60 steps
        if (size > this.buf.length - this.pos) throw new Error(`page header has a list of ${size} elements in ${this.buf.length - this.pos} bytes`)
        for (let i = 0; i < size; i++) et === 1 || et === 2 ? this.pos++ : this.skip(et)
        return
      }
      case 11: {
        const size = this.varint()
        if (size === 0) return
        if (size > this.buf.length - this.pos) throw new Error(`page header has a map of ${size} entries in ${this.buf.length - this.pos} bytes`)
        const kv = this.byte()
        for (let i = 0; i < size; i++) {
          this.skip(kv >>> 4)
          this.skip(kv & 15)
        }
        return
      }
      case 12:
        this.struct(() => false)
        return
      default:
        throw new Error(`page header has an unknown Thrift type ${type}`)
    }
  }

  /** Reads a struct's fields, handing each (id, type) to `field`, which reads it and returns true, or returns false to have it skipped. */
  struct(field: (id: number, type: number) => boolean): void {
    let last = 0
    for (;;) {
      const h = this.byte()
      if (h === 0) return
      const type = h & 15
      const delta = h >>> 4
      const id = delta === 0 ? this.int() : last + delta
      last = id
      if (!field(id, type)) this.skip(type)
    }
  }
}

/**
 * Decodes a page header. Written as plain loops over the fields rather than `Thrift.struct`
 * with closures: V8 then compiles a few small functions once, where the closures inlined
 * into `struct` made one very large compile in a cold process's first job.
 */
export function readPageHeader(t: Thrift): PageHeader {
  const h: PageHeader = { type: -1, uncompressed: -1, compressed: -1, numValues: -1, encoding: -1, defEncoding: ENC_RLE, numNulls: 0, defBytes: 0, repBytes: 0, isCompressed: true }
  let last = 0
  for (;;) {
    const b = t.byte()
    if (b === 0) return h
    const type = b & 15
    const id = b >>> 4 === 0 ? t.int() : last + (b >>> 4)
    last = id
    if (type === 5 && id <= 3) {
      const v = t.int()
      if (id === 1) h.type = v
      else if (id === 2) h.uncompressed = v
      else h.compressed = v
    } else if (type === 12 && id === 5) readDataPageHeader(t, h)
    else if (type === 12 && id === 7) readDictionaryPageHeader(t, h)
    else if (type === 12 && id === 8) readDataPageHeaderV2(t, h)
    else t.skip(type)
  }
}

/** DataPageHeader's num_values, encoding, definition_level_encoding into `h`. */
function readDataPageHeader(t: Thrift, h: PageHeader): void {
  let last = 0
  for (;;) {
    const b = t.byte()
    if (b === 0) return
    const type = b & 15
    const id = b >>> 4 === 0 ? t.int() : last + (b >>> 4)
    last = id
    if (type !== 5 || id > 3) {
      t.skip(type)
      continue
    }
    const v = t.int()
    if (id === 1) h.numValues = v
    else if (id === 2) h.encoding = v
    else h.defEncoding = v
  }
}

/** DictionaryPageHeader's num_values and encoding into `h`. */
function readDictionaryPageHeader(t: Thrift, h: PageHeader): void {
  let last = 0
  for (;;) {
    const b = t.byte()
    if (b === 0) return
    const type = b & 15
    const id = b >>> 4 === 0 ? t.int() : last + (b >>> 4)
    last = id
    if (type !== 5 || id > 2) {
      t.skip(type)
      continue
    }
    const v = t.int()
    if (id === 1) h.numValues = v
    else h.encoding = v
  }
}

/** DataPageHeaderV2's counts, encoding, level lengths and is_compressed into `h`. */
function readDataPageHeaderV2(t: Thrift, h: PageHeader): void {
  let last = 0
  for (;;) {
    const b = t.byte()
    if (b === 0) return
    const type = b & 15
    const id = b >>> 4 === 0 ? t.int() : last + (b >>> 4)
    last = id
    if (id === 7 && (type === 1 || type === 2)) h.isCompressed = type === 1
    else if (type !== 5 || id > 6) t.skip(type)
    else {
      const v = t.int()
      if (id === 1) h.numValues = v
      else if (id === 2) h.numNulls = v
      else if (id === 4) h.encoding = v
      else if (id === 5) h.defBytes = v
      else if (id === 6) h.repBytes = v
    }
  }
}

/** Bits of `checkPages`'s field-presence masks. */
const REQUIRED_PAGE = 0b111
const REQUIRED_DATA_V1 = 0b1111
const REQUIRED_DICTIONARY = 0b11
const REQUIRED_DATA_V2 = 0b111111

/**
 * Walks the page headers of `bytes`, whole pages (a column chunk, or a run of its pages from
 * a page boundary), and checks that each has every field the Parquet format requires of it,
 * sizes that fit, and that the pages end where `bytes` ends. hyparquet trusts page headers:
 * on a data page v2 header that lacks its level lengths it loops forever, so the readers run
 * this over the pages they hand to it; a garbled header then fails here as an Error saying
 * what is wrong (`what` names the column, `fileOffset` is where `bytes` starts in the file).
 * Costs a header parse per page (a page holds about 8 KiB of data).
 */
export function checkPages(bytes: Uint8Array, what: string, fileOffset = 0): void {
  const t = new Thrift(bytes, 0)
  while (t.pos < bytes.length) {
    // (messages give the position in the file)
    const at = fileOffset + t.pos
    let page = 0
    let sub = 0
    let type = -1
    let uncompressed = -1
    let compressed = -1
    let numValues = 0
    let numNulls = 0
    let numRows = 0
    let levelBytes = 0
    const int = (v: number, name: string): number => {
      if (v < 0 || v > 0x7fffffff) throw new Error(`${what}: page header at byte ${at} has ${name} ${v}`)
      return v
    }
    try {
      t.struct((id, ft) => {
        if (ft === 5 && id >= 1 && id <= 3) {
          const v = t.int()
          page |= 1 << (id - 1)
          if (id === 1) type = v
          else if (id === 2) uncompressed = int(v, 'uncompressed_page_size')
          else compressed = int(v, 'compressed_page_size')
          return true
        }
        if (ft !== 12 || (id !== 5 && id !== 7 && id !== 8)) return false
        // the header of the page's type, its required i32 fields noted in `sub`
        const kind = id === 5 ? PAGE_DATA : id === 7 ? PAGE_DICTIONARY : PAGE_DATA_V2
        if (type >= 0 && type !== kind) throw new Error(`${what}: page header at byte ${at} of type ${type} holds the header of type ${kind}`)
        const last = id === 8 ? 6 : id === 5 ? 4 : 2
        t.struct((fid, fft) => {
          if (fft !== 5 || fid < 1 || fid > last) return false
          const v = t.int()
          sub |= 1 << (fid - 1)
          if (fid === 1) numValues = int(v, 'num_values')
          else if (id === 8 && fid === 2) numNulls = int(v, 'num_nulls')
          else if (id === 8 && fid === 3) numRows = int(v, 'num_rows')
          else if (id === 8 && fid >= 5) levelBytes += int(v, fid === 5 ? 'definition_levels_byte_length' : 'repetition_levels_byte_length')
          return true
        })
        page |= 1 << (id - 1)
        return true
      })
    } catch (e) {
      if ((e as Error).message.startsWith(what)) throw e
      throw new Error(`${what}: page header at byte ${at} does not parse (${(e as Error).message})`, { cause: e })
    }
    if ((page & REQUIRED_PAGE) !== REQUIRED_PAGE) throw new Error(`${what}: page header at byte ${at} lacks its type or sizes`)
    const need = type === PAGE_DATA ? [5, REQUIRED_DATA_V1] : type === PAGE_DICTIONARY ? [7, REQUIRED_DICTIONARY] : type === PAGE_DATA_V2 ? [8, REQUIRED_DATA_V2] : null
    if (need === null) throw new Error(`${what}: page header at byte ${at} has page type ${type}, not a data or dictionary page`)
    if ((page & (1 << (need[0] - 1))) === 0 || (sub & need[1]) !== need[1]) throw new Error(`${what}: page header at byte ${at} (page type ${type}) lacks a field its type requires`)
    if (type === PAGE_DATA_V2 && (numNulls > numValues || numRows > numValues || levelBytes > compressed)) {
      throw new Error(`${what}: data page v2 header at byte ${at}: ${numValues} values, ${numNulls} nulls, ${numRows} rows, ${levelBytes} level bytes of ${compressed}`)
    }
    if (t.pos + compressed > bytes.length) throw new Error(`${what}: page at byte ${at} of ${compressed} bytes runs past the end of its pages at byte ${fileOffset + bytes.length}`)
    t.pos += compressed
  }
}

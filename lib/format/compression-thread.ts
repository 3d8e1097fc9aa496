// Snappy compression of a data file's pages on a thread of its own (a Node worker thread), so
// a compaction's writer encodes row group N while the thread compresses row group N - 1, which
// the writer then places in the file (lib/format/page-compression.ts, the port). Measured in
// docs/benchmarks.md ("Output pages compressed on a thread"); a compaction uses it where a
// second thread can run (compressionThreadUseful, lib/lsm/compact/compact-bucket.ts).
//
// - One thread per process, started on first use, unref'd (it never keeps a process alive).
//   Its code is the source text of makeSnappyCompressor, which refers to nothing outside
//   itself, so the thread loads no module: this works the same under tsx, vitest and the
//   minified Lambda bundle (test/compression-thread.test.ts runs it from an esbuild bundle).
// - Pages and results live in SharedArrayBuffers: the writer's arena (pages in), an output
//   buffer and the pages' ends (results out). A job is a message; its end is a counter the
//   writer waits on with Atomics.wait, so the writer stays synchronous. Row groups are about
//   128 KiB, which the thread compresses in well under a millisecond, while the writer takes
//   milliseconds to fill the next one: it rarely waits.
// - If the thread fails a job, or has not answered within WAIT_LIMIT_MS (it died, or never
//   started), the writer compresses that row group itself and never hands that writer's
//   pages to a thread again; a thread that failed is replaced on next use, at most
//   MAX_STARTS times per process. The file's bytes are the same whichever compressed them.

import { availableParallelism } from 'node:os'
import { Worker } from 'node:worker_threads'
import { InlinePageCompressor, PageArena, type PageCompressor } from './page-compression.ts'
import { makeSnappyCompressor, snappyBound, snappyCompressShared } from './snappy.ts'

/**
 * How long a writer waits for one row group's pages before compressing them itself: the
 * thread takes well under a millisecond, and starting takes about 30 ms.
 */
const WAIT_LIMIT_MS = 2_000
/** Compressors kept for later writers at most (each holds two arenas and a result buffer, each about a row group: well under 1 MiB at the default row-group size). */
const POOL_MAX = 16
/** Threads started per process at most (the first, and replacements of threads that failed). */
const MAX_STARTS = 3

// A writer's control words (Int32Array on a SharedArrayBuffer): the job it asked for, the
// job the thread finished last and how, the arena the job's pages are in and how many
const SEQ = 0
const DONE = 1
const STATUS = 2 // 1 compressed, 2 failed
const SLOT = 3
const COUNT = 4
/** A compressor's shared buffers as a message names them to the thread, in ThreadPageCompressor.begin's order. */
const BUFFER_NAMES = ['ctrl', 'ranges', 'output', 'ends', 'input0', 'input1']

// A message is a compressor's id (a job for it, described by its control words), or that id
// with the shared buffers the thread does not have yet (a new compressor, or a buffer grown);
// besides, `forget` (a compressor was collected: a writer that never finished does not give
// its compressor back to the pool) and two test hooks, `stall` and `held`. The thread keeps
// each compressor's buffers until told to forget it.
// __name: what esbuild's keepNames (tsx, vitest) wraps named functions in, here a no-op
const COMPRESSOR_SOURCE = `const __name = (f) => f
const compressInto = (${makeSnappyCompressor.toString()})()`
// The thread's first act, before any job arrives (the writer is still reading its inputs):
// compressing a made-up block once, whose literals and copies take every branch of the
// compressor, so the code V8 optimizes it into has type feedback for all of them. Without
// it, the first jobs' code was optimized before a long literal, a far copy or the last
// literal after the loop had run, and deoptimized there (four to six times in a cold
// compaction), each time back to the interpreter and compiled again on the CPU the writer's
// own compiles wait for. The block's bytes are of no consequence: compressing depends on no
// earlier input (the hash table's older entries are below its base).
const WARM_UP_SOURCE = `{
  const sample = new Uint8Array(new SharedArrayBuffer(1 << 13))
  let x = 12345
  let at = 0
  const noise = (n) => { for (let i = 0; i < n && at < sample.length; i++) { x = (Math.imul(x, 1103515245) + 12345) | 0; sample[at++] = x >>> 24 } }
  const repeat = (back, n) => { for (let i = 0; i < n && at < sample.length; i++, at++) sample[at] = sample[at - back] }
  for (const [lit, back, len] of [[5000, 200, 100], [70, 8, 5], [300, 60, 20], [10, 3000, 66], [10, 2500, 7], [20, 1000, 1000], [40, 5, 67]]) {
    noise(lit)
    repeat(back, len)
  }
  noise(sample.length - at)
  const out = new Uint8Array(new SharedArrayBuffer(${snappyBound(1 << 13) + 64}))
  // V8 records type feedback only once a function has run a few times (lazy feedback allocation)
  for (let k = 0; k < 10; k++) compressInto(sample.subarray(k, k + 10 + 3 * k), out, 0)
  compressInto(sample, out, 0)
}`
const THREAD_SOURCE = `'use strict'
const { parentPort } = require('node:worker_threads')
${COMPRESSOR_SOURCE}
try ${WARM_UP_SOURCE} catch {}
const writers = new Map()
parentPort.on('message', (m) => {
  if (m.stall) return void Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, m.stall)
  if (m.forget) return void writers.delete(m.forget)
  if (m.held) {
    const answer = new Int32Array(m.held)
    Atomics.store(answer, 1, writers.size)
    Atomics.store(answer, 0, 1)
    return void Atomics.notify(answer, 0)
  }
  let w
  if (typeof m === 'number') w = writers.get(m)
  else {
    w = writers.get(m.id)
    if (w === undefined) writers.set(m.id, (w = { inputs: [null, null] }))
    if (m.ctrl) w.ctrl = new Int32Array(m.ctrl)
    if (m.ranges) w.ranges = new Int32Array(m.ranges)
    if (m.output) w.output = new Uint8Array(m.output)
    if (m.ends) w.ends = new Int32Array(m.ends)
    if (m.input0) w.inputs[0] = new Uint8Array(m.input0)
    if (m.input1) w.inputs[1] = new Uint8Array(m.input1)
  }
  const ctrl = w.ctrl
  let status = 1
  try {
    const input = w.inputs[ctrl[${SLOT}]]
    const output = w.output
    const ends = w.ends
    const ranges = w.ranges
    const count = ctrl[${COUNT}]
    let op = 0
    for (let i = 0; i < count; i++) {
      op = compressInto(input.subarray(ranges[2 * i], ranges[2 * i + 1]), output, op)
      ends[i] = op
    }
  } catch {
    status = 2
  }
  Atomics.store(ctrl, ${STATUS}, status)
  Atomics.store(ctrl, ${DONE}, ctrl[${SEQ}])
  Atomics.notify(ctrl, ${DONE})
})
`

interface ThreadState {
  worker: Worker
  failed: boolean
}

let current: ThreadState | null = null
let starts = 0
const counts = { threadBatches: 0, inlineBatches: 0, fallbacks: 0, starts: 0, waits: 0, waitMs: 0 }

/**
 * What the process's compression thread has done: row groups of ThreadPageCompressors
 * compressed on it and inline, fallbacks to inline, threads started, and how often and how
 * long (ms) writers waited for it.
 */
export function compressionThreadCounts(): Readonly<typeof counts> {
  return { ...counts }
}

let fallbacksTaken = 0

/**
 * Row groups compressed inline because the thread failed or had not answered within
 * WAIT_LIMIT_MS (a writer waited up to that long for each), since the last call: what one
 * metrics flush publishes.
 */
export function takeCompressionThreadFallbacks(): number {
  const n = counts.fallbacks - fallbacksTaken
  fallbacksTaken = counts.fallbacks
  return n
}

let sourceRuns: boolean | null = null

/**
 * Whether the compressor's source text runs on its own and compresses as this thread does,
 * checked once here (a thread whose code fails would only show as a writer waiting out
 * WAIT_LIMIT_MS). It fails where a bundler makes the function call helpers outside it: esbuild
 * minifying with keepNames renames its `__name`. Then pages are compressed inline.
 */
function sourceCompresses(): boolean {
  if (sourceRuns === null) {
    try {
      const compressInto = new Function(`'use strict'\n${COMPRESSOR_SOURCE}\nreturn compressInto`)() as (src: Uint8Array, out: Uint8Array, at: number) => number
      const sample = new TextEncoder().encode('strata '.repeat(64) + 'compression thread check')
      const out = new Uint8Array(snappyBound(sample.length))
      const end = compressInto(sample, out, 0)
      const expected = snappyCompressShared(sample)
      sourceRuns = end === expected.length && out.subarray(0, end).every((b, i) => b === expected[i])
    } catch {
      sourceRuns = false
    }
  }
  return sourceRuns
}

/** The process's compression thread, started if need be; null once MAX_STARTS threads have failed, or if its code cannot run. */
function thread(): ThreadState | null {
  if (current !== null && !current.failed) return current
  if (starts >= MAX_STARTS || !sourceCompresses()) return null
  starts++
  counts.starts++
  let worker: Worker
  try {
    worker = new Worker(THREAD_SOURCE, { eval: true, name: 'strata-compression', resourceLimits: { maxOldGenerationSizeMb: 32, maxYoungGenerationSizeMb: 8 } })
  } catch {
    return null
  }
  const state: ThreadState = { worker, failed: false }
  const fail = (): void => {
    state.failed = true
  }
  worker.on('error', fail)
  worker.on('exit', fail)
  worker.unref()
  current = state
  return state
}

/**
 * Whether a second thread can run beside this one: more than one CPU, and on Lambda
 * (AWS_LAMBDA_FUNCTION_MEMORY_SIZE) more than 1,769 MB of memory, the size at which a function
 * gets one whole vCPU (its CPU share grows with memory; two CPUs show at any size).
 */
export function compressionThreadUseful(env: NodeJS.ProcessEnv = process.env, cpus = availableParallelism()): boolean {
  const lambdaMemory = Number(env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE)
  return cpus > 1 && (!(lambdaMemory > 0) || lambdaMemory > 1769)
}

/** Starts the process's compression thread ahead of its first row group (it takes about 30 ms), if it is not running. */
export function startCompressionThread(): void {
  thread()
}

/** Test hook: the thread sleeps `ms` before its next job (a thread that does not answer cannot be caused otherwise). */
export function stallCompressionThread(ms: number): void {
  thread()?.worker.postMessage({ stall: ms })
}

/** Test hook: how many compressors' buffers the running thread holds (-1: no thread, or no answer within a second). */
export function compressionThreadHeld(): number {
  const t = current
  if (t === null || t.failed) return -1
  const answer = new Int32Array(new SharedArrayBuffer(8))
  t.worker.postMessage({ held: answer.buffer })
  return Atomics.wait(answer, 0, 0, 1000) === 'timed-out' ? -1 : answer[1]
}

/** Ends the process's compression thread (tests; a later writer starts another). */
export async function stopCompressionThread(): Promise<void> {
  const state = current
  current = null
  starts = 0
  if (state !== null) await state.worker.terminate()
}

function shared(bytes: number): SharedArrayBuffer {
  return new SharedArrayBuffer(bytes)
}

/** Compressors no writer holds (ThreadPageCompressor.take, done). */
const pool: ThreadPageCompressor[] = []
let nextId = 1

/** A collected compressor's buffers are dropped by the thread that holds them. */
const forget = new FinalizationRegistry<{ id: number; known: { thread: ThreadState | null } }>(({ id, known }) => {
  const t = known.thread
  if (t !== null && t === current && !t.failed) t.worker.postMessage({ forget: id })
})

/**
 * Snappy page compression on the process's compression thread (PageCompressor). Its arenas
 * and result buffers are SharedArrayBuffers, which the thread holds too; a writer takes one
 * from the pool and gives it back when its file is finished.
 */
export class ThreadPageCompressor implements PageCompressor {
  readonly arenas: readonly [PageArena, PageArena]
  readonly #id = nextId++
  readonly #ctrl = new Int32Array(shared(4 * 5))
  readonly #inline: InlinePageCompressor
  #output = new Uint8Array(shared(1 << 16))
  #ends = new Int32Array(shared(4 * 64))
  #ranges = new Int32Array(shared(4 * 128))
  /** the buffers the thread has of this compressor (a new thread has none) */
  readonly #known: { thread: ThreadState | null; bufs: (ArrayBufferLike | null)[] } = { thread: null, bufs: [] }
  #seq = 0
  /** the current row group: on the thread, not yet waited for / waited for / compressed inline */
  #state: 'thread' | 'done' | 'inline' = 'inline'
  /** once the thread failed this compressor, it compresses inline from then on */
  #threadless = false

  private constructor() {
    const allocate = (n: number): Uint8Array => new Uint8Array(shared(n))
    this.arenas = [new PageArena(allocate), new PageArena(allocate)]
    this.#inline = new InlinePageCompressor(snappyCompressShared, this.arenas)
    forget.register(this, { id: this.#id, known: this.#known })
  }

  /** A compressor from the pool, or a new one. */
  static take(): ThreadPageCompressor {
    return pool.pop() ?? new ThreadPageCompressor()
  }

  /** Back to the pool: its writer has placed every page (one that fell back to inline is dropped). */
  done(): void {
    if (!this.#threadless && this.#state !== 'thread' && pool.length < POOL_MAX) pool.push(this)
  }

  begin(slot: 0 | 1, ranges: readonly number[]): void {
    this.#inline.begin(slot, ranges)
    const t = this.#threadless ? null : thread()
    if (t === null) {
      this.#state = 'inline'
      counts.inlineBatches++
      return
    }
    const count = ranges.length / 2
    let bound = 0
    for (let i = 0; i < ranges.length; i += 2) bound += snappyBound(ranges[i + 1] - ranges[i])
    if (this.#output.length < bound) this.#output = new Uint8Array(shared(Math.max(bound, this.#output.length * 2)))
    if (this.#ends.length < count) this.#ends = new Int32Array(shared(4 * Math.max(count, this.#ends.length * 2)))
    if (this.#ranges.length < ranges.length) this.#ranges = new Int32Array(shared(4 * Math.max(ranges.length, this.#ranges.length * 2)))
    this.#ranges.set(ranges)
    const ctrl = this.#ctrl
    const seq = ++this.#seq
    ctrl[SEQ] = seq
    ctrl[SLOT] = slot
    ctrl[COUNT] = count
    // the thread gets the buffers it does not have yet with the job; else the id is the job
    const known = this.#known
    if (known.thread !== t) {
      known.thread = t
      known.bufs = []
    }
    const bufs = [this.#ctrl.buffer, this.#ranges.buffer, this.#output.buffer, this.#ends.buffer, this.arenas[0].bytes.buffer, this.arenas[1].bytes.buffer]
    let message: number | Record<string, unknown> = this.#id
    for (let b = 0; b < bufs.length; b++) {
      if (known.bufs[b] === bufs[b]) continue
      if (typeof message === 'number') message = { id: this.#id }
      message[BUFFER_NAMES[b]] = bufs[b]
      known.bufs[b] = bufs[b]
    }
    t.worker.postMessage(message)
    this.#state = 'thread'
    counts.threadBatches++
  }

  body(i: number): Uint8Array {
    if (this.#state === 'thread') this.#await()
    if (this.#state === 'inline') return this.#inline.body(i)
    return this.#output.subarray(i === 0 ? 0 : this.#ends[i - 1], this.#ends[i])
  }

  #await(): void {
    const ctrl = this.#ctrl
    const seq = this.#seq
    const t0 = performance.now()
    const deadline = t0 + WAIT_LIMIT_MS
    if (Atomics.load(ctrl, DONE) !== seq) counts.waits++
    while (Atomics.load(ctrl, DONE) !== seq) {
      const left = deadline - performance.now()
      if (left <= 0) break
      Atomics.wait(ctrl, DONE, seq - 1, left)
    }
    counts.waitMs += performance.now() - t0
    if (Atomics.load(ctrl, DONE) === seq && Atomics.load(ctrl, STATUS) === 1) {
      this.#state = 'done'
      return
    }
    // failed or silent: that thread may still write to this compressor's buffers, so it never uses a thread again
    this.#threadless = true
    // the thread this compressor used (another writer may have replaced it meanwhile)
    const state = this.#known.thread
    if (state !== null && !state.failed) {
      state.failed = true
      state.worker.terminate().catch(() => {})
    }
    counts.fallbacks++
    counts.threadBatches--
    counts.inlineBatches++
    this.#state = 'inline'
  }
}

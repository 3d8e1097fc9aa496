// One execution environment's runtime, inside a worker thread or a child process of its own
// (the pool's `isolation`): imports the handler module once (the cold start), then serves
// invocations one at a time for as long as the thread or process lives (warm starts), like
// the Node.js runtime interface client of a Lambda sandbox.
// Events and results cross as JSON, as Lambda's invoke payloads do, so a handler sees the
// same values it would in AWS (no Dates, Buffers or undefined fields surviving by accident).
// An uncaught error or process.exit ends this environment only, and so does exceeding the V8
// heap limits the pool starts it with (the function's memory); the pool reports it and
// replaces it. In a process, an uncaught error (or unhandled rejection) is sent to the pool
// before the process exits, so the pool reports the same error a thread's 'error' event gives.
import { isMainThread, parentPort, threadId, workerData } from 'node:worker_threads'
import { basename, join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { getHeapSpaceStatistics, writeHeapSnapshot } from 'node:v8'
import type { Context } from 'aws-lambda'
import { cachedBytesInIsolate } from '../../lib/format/byte-cache.ts'

export interface WorkerInit {
  handlerModule: string
  exportName: string
  /**
   * the module to import instead of handlerModule: its prebuilt bundle (handler-bundles.ts),
   * when this runtime is itself the bundled one; handlerModule still names the handler
   */
  bundle?: string
}

/**
 * The variable a process environment's WorkerInit (JSON) reaches it in: not STRATA_-, AWS_- or
 * POWERTOOLS_-prefixed (those are the function's configuration), and taken out of process.env
 * before the handler is imported, so the handler never sees it.
 */
export const PROCESS_INIT_ENV = 'LOCAL_EXECUTION_ENVIRONMENT_INIT'

/** The plain-data part of a Lambda Context; the worker adds the methods. */
export type ContextData = Omit<Context, 'getRemainingTimeInMillis' | 'done' | 'fail' | 'succeed'>

export interface ErrorInfo {
  name: string
  message: string
  stack?: string
}

export type ToWorker = { type: 'invoke'; id: number; eventJson: string; context: ContextData; deadline: number } | { type: 'memory'; id: number; collect?: boolean; settleMs?: number }

/**
 * One environment's memory as its own isolate sees it (process.memoryUsage()), bytes; rss and
 * pid only when the environment is a process of its own (in a thread, rss is the whole
 * process's, every environment's and the host's together, so it is left out).
 */
export interface ThreadMemory {
  heapUsed: number
  heapTotal: number
  /** memory outside the V8 heap that this isolate's objects hold (Buffers, ArrayBuffers, native) */
  external: number
  /** the part of external held by ArrayBuffers (Buffers included) */
  arrayBuffers: number
  /** what the isolate's bounded caches (lib/format/byte-cache.ts) charge now: heap they may fill up to their bounds */
  cachedBytes: number
  /** committed bytes of each of the isolate's V8 heap spaces (new_space, old_space, code_space, …), which add up to heapTotal */
  spaces: Record<string, number>
  /**
   * an invocation was in progress when these were read (its data then sits in the heap too,
   * beside what the environment keeps between invocations)
   */
  busy: boolean
  /** the resident set of the environment's own process: 'process' isolation only */
  rss?: number
  /** the environment's process id: 'process' isolation only */
  pid?: number
}

export type FromWorker =
  | { type: 'ready' }
  | { type: 'init-error'; error: ErrorInfo }
  | { type: 'result'; id: number; ok: true; valueJson: string | undefined }
  | { type: 'result'; id: number; ok: false; error: ErrorInfo }
  | { type: 'memory'; id: number; memory: ThreadMemory }
  /** a process environment's uncaught error or unhandled rejection, sent just before it exits */
  | { type: 'uncaught'; error: ErrorInfo }

type Handler = (event: unknown, context: Context, callback: (error?: unknown, value?: unknown) => void) => unknown

export function errorInfoOf(error: unknown): ErrorInfo {
  if (error instanceof Error) {
    const info: ErrorInfo = { name: error.name, message: error.message }
    if (error.stack !== undefined) info.stack = error.stack
    return info
  }
  return { name: 'Error', message: typeof error === 'string' ? error : safeString(error) }
}

function safeString(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value)
  } catch {
    return String(value)
  }
}

/** How the runtime talks to its pool: a thread's parentPort or a process's IPC channel. */
interface Channel {
  post(message: FromWorker): void
  onMessage(listener: (message: ToWorker) => void): void
  /** the environment is a process of its own (its rss and pid are its own) */
  ownProcess: boolean
}

async function serve(channel: Channel, init: WorkerInit): Promise<void> {
  const post = (message: FromWorker) => channel.post(message)
  let handler: Handler
  try {
    // a bundle's stack traces name its TypeScript sources, as tsx's do
    if (init.bundle !== undefined) process.setSourceMapsEnabled(true)
    const module = (await import(pathToFileURL(init.bundle ?? init.handlerModule).href)) as Record<string, unknown>
    const exported = module[init.exportName]
    if (typeof exported !== 'function') {
      // Lambda's Node runtime names this failure Runtime.HandlerNotFound.
      post({
        type: 'init-error',
        error: { name: 'Runtime.HandlerNotFound', message: `${init.handlerModule} does not export a function named '${init.exportName}' (found ${typeof exported})` },
      })
      return
    }
    handler = exported as Handler
  } catch (error) {
    const info = errorInfoOf(error)
    post({ type: 'init-error', error: { ...info, name: 'Runtime.ImportModuleError', message: `${info.name}: ${info.message}` } })
    return
  }
  post({ type: 'ready' })
  heapSnapshots(init, channel.ownProcess)

  channel.onMessage((message) => {
    // answered between invocations' steps, like any message: a thread busy on the CPU answers late
    if (message.type === 'memory') {
      // a full collection first, when asked and the process runs with --expose-gc (the soak's
      // settled samples): the heap's committed size then follows its live data
      if (message.collect) (globalThis as { gc?: () => void }).gc?.()
      // and a wait, when asked, for V8 to return the pages it freed (a background task)
      const answer = () => post({ type: 'memory', id: message.id, memory: threadMemory(channel.ownProcess) })
      return message.settleMs ? void setTimeout(answer, message.settleMs) : answer()
    }
    running++
    void invoke(handler, message).then((result) => {
      running--
      post(result)
    })
  })
}

async function invoke(handler: Handler, message: Extract<ToWorker, { type: 'invoke' }>): Promise<FromWorker> {
  const { id, deadline } = message
  try {
    const event: unknown = JSON.parse(message.eventJson)
    const value = await new Promise<unknown>((resolve, reject) => {
      const callback = (error?: unknown, result?: unknown) => (error === undefined || error === null ? resolve(result) : reject(error))
      const context: Context = {
        ...message.context,
        getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
        done: callback,
        fail: (error) => reject(error),
        succeed: (result: unknown) => resolve(result),
      }
      const returned = handler(event, context, callback)
      if (isThenable(returned)) returned.then(resolve, reject)
      // A handler declaring no callback parameter answers with its return value.
      else if (handler.length < 3) resolve(returned)
    })
    let valueJson: string | undefined
    try {
      valueJson = JSON.stringify(value)
    } catch (error) {
      return { type: 'result', id, ok: false, error: { name: 'Runtime.MarshalError', message: `Unable to stringify response body: ${errorInfoOf(error).message}` } }
    }
    return { type: 'result', id, ok: true, valueJson }
  } catch (error) {
    return { type: 'result', id, ok: false, error: errorInfoOf(error) }
  }
}

/** invocations this environment is serving (0 or 1: the pool sends one at a time) */
let running = 0

function threadMemory(ownProcess: boolean): ThreadMemory {
  const { heapUsed, heapTotal, external, arrayBuffers, rss } = process.memoryUsage()
  const memory: ThreadMemory = { heapUsed, heapTotal, external, arrayBuffers, cachedBytes: cachedBytesInIsolate(), spaces: heapSpaces(), busy: running > 0 }
  if (ownProcess) Object.assign(memory, { rss, pid: process.pid })
  return memory
}

/** Committed bytes by V8 heap space, this isolate's. */
export function heapSpaces(): Record<string, number> {
  return Object.fromEntries(getHeapSpaceStatistics().map((s) => [s.space_name, s.space_size]))
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function'
}

/** A process environment's channel: its IPC channel to the pool, which forked it. */
function processChannel(): Channel {
  let dying = false
  const send = (message: FromWorker, sent: () => void = () => {}) => {
    // a send failing (the channel closing) goes to `sent`, not to an 'error' event nobody handles
    if (process.connected) process.send!(message, undefined, {}, sent)
    else sent()
  }
  // What a worker thread's 'error' event gives its pool: the error, then the end of the
  // environment. An unhandled rejection arrives here too (Node's default --unhandled-rejections=throw).
  process.on('uncaughtException', (error) => {
    if (dying) return
    dying = true
    send({ type: 'uncaught', error: errorInfoOf(error) }, () => process.exit(1))
  })
  // the pool is gone (its process exited or closed the channel): so is this environment
  process.on('disconnect', () => process.exit(0))
  return {
    post: (message) => send(message),
    onMessage: (listener) =>
      process.on('message', (message: ToWorker) => {
        if (!dying) listener(message)
      }),
    ownProcess: true,
  }
}

if (!isMainThread && parentPort !== null && (workerData as { strataExecutionEnvironment?: WorkerInit } | null)?.strataExecutionEnvironment) {
  const port = parentPort
  const channel: Channel = { post: (message) => port.postMessage(message), onMessage: (listener) => port.on('message', listener), ownProcess: false }
  await serve(channel, (workerData as { strataExecutionEnvironment: WorkerInit }).strataExecutionEnvironment)
} else if (isMainThread && process.send !== undefined && process.env[PROCESS_INIT_ENV] !== undefined) {
  // forked by the pool as an environment of its own (isolation 'process')
  const init = JSON.parse(process.env[PROCESS_INIT_ENV]) as WorkerInit
  delete process.env[PROCESS_INIT_ENV]
  await serve(processChannel(), init)
}

/**
 * A diagnosis aid for memory that grows in an environment (docs/reliability.md, "Memory"):
 * with LOCAL_HEAP_SNAPSHOT_DIR and LOCAL_HEAP_SNAPSHOT_AT (seconds after the handler loaded,
 * comma-separated) set in the host's environment (not STRATA_-prefixed: a function's
 * environment does not inherit those), every environment writes a V8 heap snapshot of its
 * isolate at each of those times, named after its handler module and thread (its process id,
 * `pid<n>`, for an environment that is a process of its own: every process's threadId is 0);
 * two of one environment show what it keeps. Writing one stops the environment for seconds.
 */
function heapSnapshots(init: WorkerInit, ownProcess: boolean): void {
  const dir = process.env.LOCAL_HEAP_SNAPSHOT_DIR
  if (!dir) return
  for (const at of (process.env.LOCAL_HEAP_SNAPSHOT_AT ?? '').split(',').map(Number).filter((n) => n > 0)) {
    const who = ownProcess ? `pid${process.pid}` : String(threadId)
    setTimeout(() => writeHeapSnapshot(join(dir, `${basename(init.handlerModule).replace(/\.[jt]s$/, '')}-${who}-${at}s.heapsnapshot`)), at * 1000).unref()
  }
}

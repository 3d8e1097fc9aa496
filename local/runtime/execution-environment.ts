// Lambda execution environments for local runs: each environment is one worker thread that
// imports the handler module once and then serves one invocation at a time, so CPU-bound
// handlers run on every core and module-level state (clients, caches) lives exactly as long
// as it would in a warm Lambda sandbox. An invocation goes to an idle warm environment, or
// starts a new one (a cold start) while fewer than `maxEnvironments` exist, or waits.
// A timeout, an uncaught error, process.exit or running out of memory destroys that
// environment only; the next invocation that needs one starts a fresh environment, as Lambda
// does after a sandbox reset.
//
// Memory. A Lambda function's memory size bounds its whole sandbox: the runtime, the JS heap
// and everything else. An environment here is a thread in a shared process, so what can be
// bounded is its V8 heap, through the Worker's resourceLimits, derived from the function's
// memory M (MB) by workerResourceLimits():
//   young generation  maxYoungGenerationSizeMb = M / 16, clamped to [8, 48] (48 is V8's own
//                     default on 64-bit; smaller functions get smaller scavenge spaces)
//   old generation    maxOldGenerationSizeMb    = M - 64 - young, where 64 MB is a fixed
//                     allowance for the runtime outside the JS heap (the thread's Node
//                     instance, libuv, stacks, compiled code), as Lambda's M covers its runtime
//   code              codeRangeSizeMb           = M / 16, clamped to [16, 64]
//   stack             stackSizeMb               = 4 (Node's default)
// e.g. 128 MB → old 56, young 8; 256 MB → old 176, young 16; 1024 MB → old 912, young 48.
// (V8's own heap_size_limit then reads 68, 200 and 960 MB: it counts young-generation headroom.)
// Importing any of Strata's handlers takes about 20 MB of heap. A thread that exceeds its
// heap is terminated by Node (ERR_WORKER_OUT_OF_MEMORY): the invocation in flight fails with
// Runtime.OutOfMemory ("Runtime exited with error: out of memory ..."), as Lambda reports a
// sandbox killed for its memory, and the environment is replaced by a cold one.
// Not counted: memory outside the V8 heap (Buffer and ArrayBuffer contents, native
// allocations), which Lambda would count; a handler can exceed M that way here unnoticed.
// memory() asks every warm environment for its own heap, external and ArrayBuffer bytes
// (the soak samples them), so growth there is at least seen.
import { randomUUID } from 'node:crypto'
import { basename, extname, isAbsolute } from 'node:path'
import { createInterface } from 'node:readline'
import { type ResourceLimits, Worker } from 'node:worker_threads'
import type { Context } from 'aws-lambda'
import { StrataInputError } from '../../lib/types.ts'
import { errorInfoOf, type ContextData, type ErrorInfo, type FromWorker, type ThreadMemory, type ToWorker, type WorkerInit } from './worker.ts'

export type InvokeResult =
  | { ok: true; value: unknown; durationMs: number; coldStart: boolean; environmentId: number }
  | { ok: false; error: ErrorInfo; durationMs: number; crashed: boolean; coldStart: boolean; environmentId: number | null }

/** An environment's memory as its thread reported it (worker.ts ThreadMemory), with the pool's view of it. */
export interface EnvironmentMemory extends ThreadMemory {
  environmentId: number
  /** invocations it served so far */
  invocations: number
  /** the thread did not answer in time (busy on the CPU): these are its last answered figures */
  stale: boolean
}

export interface ExecutionEnvironmentPoolOptions {
  /** absolute path of a .ts (or .js) module exporting the handler */
  handlerModule: string
  /** default 'handler' */
  exportName?: string
  /** the function's environment variables, over the parent's environment and Lambda's defaults */
  env?: Record<string, string>
  /** concurrent environments at most; null = unbounded */
  maxEnvironments: number | null
  /** the function timeout; on expiry the environment is destroyed and the invocation fails. Default 900 000 (Lambda's maximum) */
  timeoutMs?: number
  /** default: the module's file name without extension */
  functionName?: string
  /** default: AWS_REGION, else us-east-1 */
  region?: string
  /** reported in the context and AWS_LAMBDA_FUNCTION_MEMORY_SIZE, and enforced on the JS heap (workerResourceLimits). Default 1024 */
  memoryLimitInMB?: number
  /** Node options for the worker threads; default none (the parent's, e.g. tsx's own loader flags, are not inherited) */
  execArgv?: string[]
  /**
   * Each line the handlers write to stdout (their logs, what CloudWatch Logs would get), with
   * the environment that wrote it; default: the lines go to this process's stdout.
   */
  onLogLine?: (line: string, environmentId: number) => void
}

/** Lambda's placeholder account for local ARNs, matching fauxqs's. */
const ACCOUNT = '000000000000'
const MAX_TIMEOUT_MS = 900_000

/** Memory an environment needs outside its V8 heap, taken off the function's memory. */
export const RUNTIME_ALLOWANCE_MB = 64

/** The V8 limits of an environment's thread for a function of `memoryMb` (the rule in the file's comment). */
export function workerResourceLimits(memoryMb: number): Required<ResourceLimits> {
  const clamp = (x: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, Math.floor(x)))
  const young = clamp(memoryMb / 16, 8, 48)
  return {
    maxYoungGenerationSizeMb: young,
    maxOldGenerationSizeMb: memoryMb - RUNTIME_ALLOWANCE_MB - young,
    codeRangeSizeMb: clamp(memoryMb / 16, 16, 64),
    stackSizeMb: 4,
  }
}

// Workers start from this CommonJS snippet because Node 20 cannot load a .ts entry and does
// not apply `--import tsx` from a worker's execArgv before resolving its entry (checked on
// Node 20.20 with tsx 4.23: ERR_UNKNOWN_FILE_EXTENSION); registering tsx's ESM hooks first
// and then importing the entry works.
// tsx's ESM build: its CommonJS build of the same API cannot register hooks from a worker.
const TSX_ESM_API = import.meta.resolve('tsx/esm/api')
const WORKER_ENTRY = new URL('./worker.ts', import.meta.url).href
const BOOTSTRAP = `import(${JSON.stringify(TSX_ESM_API)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(WORKER_ENTRY)}) })`

interface Pending {
  eventJson: string
  context: ContextData
  settle(result: InvokeResult): void
}

interface Running {
  pending: Pending
  requestId: number
  startedAt: number
  coldStart: boolean
  timer: NodeJS.Timeout
}

interface Environment {
  id: number
  worker: Worker
  ready: boolean
  /** the invocation whose arrival started this environment; it runs first, as a cold start */
  assigned?: Pending
  current?: Running
  uncaught?: unknown
  invocations: number
  /** memory requests sent and not yet answered, by request id */
  memoryRequests: Map<number, (memory: ThreadMemory | null) => void>
  /** the thread's last answer to a memory request */
  lastMemory?: ThreadMemory
}

export class ExecutionEnvironmentPool {
  private readonly handlerModule: string
  private readonly exportName: string
  private readonly maxEnvironments: number | null
  private readonly timeoutMs: number
  private readonly functionName: string
  private readonly region: string
  private readonly memoryLimitInMB: number
  /** the V8 limits every environment's thread runs under, from memoryLimitInMB */
  readonly resourceLimits: Required<ResourceLimits>
  private readonly execArgv: string[]
  private readonly onLogLine?: (line: string, environmentId: number) => void
  private readonly workerEnv: Record<string, string>
  private readonly environments: Environment[] = []
  /** every worker not yet exited, including destroyed ones still terminating */
  private readonly workers = new Set<Worker>()
  private readonly queue: Pending[] = []
  private nextEnvironmentId = 1
  private nextRequestId = 1
  private closed = false

  constructor(opts: ExecutionEnvironmentPoolOptions) {
    if (typeof opts.handlerModule !== 'string' || !isAbsolute(opts.handlerModule)) {
      throw new StrataInputError(`handlerModule: expected an absolute path, got ${JSON.stringify(opts.handlerModule)}`)
    }
    if (opts.maxEnvironments !== null && !(Number.isInteger(opts.maxEnvironments) && opts.maxEnvironments >= 1)) {
      throw new StrataInputError(`maxEnvironments: expected null or an integer >= 1, got ${opts.maxEnvironments}`)
    }
    const timeoutMs = opts.timeoutMs ?? MAX_TIMEOUT_MS
    if (!(Number.isFinite(timeoutMs) && timeoutMs > 0 && timeoutMs <= MAX_TIMEOUT_MS)) {
      throw new StrataInputError(`timeoutMs: expected a number in (0, ${MAX_TIMEOUT_MS}], got ${opts.timeoutMs}`)
    }
    const memory = opts.memoryLimitInMB ?? 1024
    if (!(Number.isInteger(memory) && memory >= 128 && memory <= 10240)) {
      throw new StrataInputError(`memoryLimitInMB: expected an integer in [128, 10240], got ${opts.memoryLimitInMB}`)
    }
    this.handlerModule = opts.handlerModule
    this.exportName = opts.exportName ?? 'handler'
    this.maxEnvironments = opts.maxEnvironments
    this.timeoutMs = timeoutMs
    this.functionName = opts.functionName ?? basename(opts.handlerModule, extname(opts.handlerModule))
    this.region = opts.region ?? process.env.AWS_REGION ?? 'us-east-1'
    this.memoryLimitInMB = memory
    this.resourceLimits = workerResourceLimits(memory)
    this.execArgv = opts.execArgv ?? []
    this.onLogLine = opts.onLogLine
    this.workerEnv = {
      // A Lambda sandbox's environment is its function's configuration, not its host's: the
      // host process's Strata, Powertools and AWS variables (a benchmark's or test's own
      // function config) stay out, so one run cannot leak its table or endpoint into the next.
      ...hostEnvironment(process.env),
      // The reserved variables Lambda sets in every sandbox that handlers and Powertools read.
      AWS_REGION: this.region,
      AWS_DEFAULT_REGION: this.region,
      AWS_LAMBDA_FUNCTION_NAME: this.functionName,
      AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
      AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(memory),
      AWS_LAMBDA_LOG_GROUP_NAME: `/aws/lambda/${this.functionName}`,
      AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs22.x',
      ...(opts.env ?? {}),
    }
  }

  /** environments alive (starting, idle or busy) */
  get size(): number {
    return this.environments.length
  }

  /** environments that imported their handler (warm or busy) */
  get ready(): number {
    return this.environments.filter((e) => e.ready).length
  }

  /**
   * The memory of every environment that has imported its handler, as each thread reports it
   * (its own V8 heap, external and ArrayBuffer bytes). A thread that does not answer within
   * `timeoutMs` (busy on the CPU) is given with its last answer, marked stale; one that never
   * answered, or exited meanwhile, is left out.
   */
  /** `collect`: each environment runs a full GC first (a no-op unless the process has --expose-gc) */
  async memory(timeoutMs = 1000, collect = false): Promise<EnvironmentMemory[]> {
    const answers = await Promise.all(
      this.environments.filter((e) => e.ready).map(
        (environment) =>
          new Promise<EnvironmentMemory | null>((resolve) => {
            const id = this.nextRequestId++
            const timer = setTimeout(() => settle(null, true), timeoutMs)
            const settle = (memory: ThreadMemory | null, timedOut = false) => {
              clearTimeout(timer)
              environment.memoryRequests.delete(id)
              if (memory) environment.lastMemory = memory
              const figures = memory ?? (timedOut ? environment.lastMemory : undefined)
              resolve(figures ? { ...figures, environmentId: environment.id, invocations: environment.invocations, stale: memory === null } : null)
            }
            environment.memoryRequests.set(id, settle)
            const message: ToWorker = { type: 'memory', id, collect }
            environment.worker.postMessage(message)
          }),
      ),
    )
    return answers.filter((m): m is EnvironmentMemory => m !== null)
  }

  /** environments starting for, or running, an invocation */
  get busy(): number {
    return this.environments.filter((e) => e.assigned !== undefined || e.current !== undefined).length
  }

  invoke(event: unknown, context: Partial<Context> = {}): Promise<InvokeResult> {
    if (this.closed) return Promise.reject(new Error(`execution environment pool for ${this.functionName} is closed`))
    let eventJson: string
    try {
      eventJson = JSON.stringify(event) ?? 'null'
    } catch (error) {
      return Promise.reject(new StrataInputError(`event: expected a JSON-serializable value (${errorInfoOf(error).message})`))
    }
    return new Promise<InvokeResult>((resolve) => {
      let settled = false
      this.queue.push({
        eventJson,
        context: this.contextData(context),
        settle(result) {
          if (settled) return
          settled = true
          resolve(result)
        },
      })
      this.dispatch()
    })
  }

  /** Terminates every environment; invocations still queued or running fail with Runtime.PoolClosed. */
  async close(): Promise<void> {
    this.closed = true
    const closedResult = (coldStart: boolean, environmentId: number | null): InvokeResult => ({
      ok: false,
      error: { name: 'Runtime.PoolClosed', message: `execution environment pool for ${this.functionName} was closed` },
      durationMs: 0,
      crashed: false,
      coldStart,
      environmentId,
    })
    for (const pending of this.queue.splice(0)) pending.settle(closedResult(false, null))
    for (const environment of this.environments.splice(0)) {
      if (environment.current) clearTimeout(environment.current.timer)
      environment.assigned?.settle(closedResult(true, environment.id))
      environment.current?.pending.settle(closedResult(environment.current.coldStart, environment.id))
    }
    await Promise.all([...this.workers].map((worker) => worker.terminate()))
  }

  private contextData(context: Partial<Context>): ContextData {
    const plain = Object.fromEntries(Object.entries(context).filter(([, v]) => typeof v !== 'function')) as Partial<ContextData>
    const functionName = plain.functionName ?? this.functionName
    return {
      callbackWaitsForEmptyEventLoop: true,
      functionName,
      functionVersion: '$LATEST',
      invokedFunctionArn: `arn:aws:lambda:${this.region}:${ACCOUNT}:function:${functionName}`,
      memoryLimitInMB: String(this.memoryLimitInMB),
      awsRequestId: randomUUID(),
      logGroupName: `/aws/lambda/${functionName}`,
      logStreamName: `local/[$LATEST]${randomUUID().replaceAll('-', '')}`,
      ...plain,
    }
  }

  private dispatch(): void {
    while (this.queue.length > 0 && !this.closed) {
      const idle = this.environments.find((e) => e.ready && e.current === undefined && e.assigned === undefined)
      if (idle) {
        this.run(idle, this.queue.shift()!, false)
      } else if (this.maxEnvironments === null || this.environments.length < this.maxEnvironments) {
        this.spawn(this.queue.shift()!)
      } else {
        return
      }
    }
  }

  private spawn(first: Pending): void {
    const init: WorkerInit = { handlerModule: this.handlerModule, exportName: this.exportName }
    const worker = new Worker(BOOTSTRAP, {
      eval: true,
      workerData: { strataExecutionEnvironment: init },
      env: this.workerEnv,
      execArgv: this.execArgv,
      resourceLimits: this.resourceLimits,
      stdout: this.onLogLine !== undefined,
    })
    const environment: Environment = { id: this.nextEnvironmentId++, worker, ready: false, assigned: first, invocations: 0, memoryRequests: new Map() }
    if (this.onLogLine) {
      const onLine = this.onLogLine
      createInterface({ input: worker.stdout, crlfDelay: Infinity }).on('line', (line) => onLine(line, environment.id))
    }
    this.environments.push(environment)
    this.workers.add(worker)
    worker.on('message', (message: FromWorker) => this.onMessage(environment, message))
    worker.on('error', (error) => {
      environment.uncaught = error
    })
    worker.on('exit', (code) => {
      this.workers.delete(worker)
      this.onExit(environment, code)
    })
  }

  private run(environment: Environment, pending: Pending, coldStart: boolean): void {
    const requestId = this.nextRequestId++
    const timer = setTimeout(() => this.onTimeout(environment, requestId), this.timeoutMs)
    const startedAt = performance.now()
    environment.current = { pending, requestId, startedAt, coldStart, timer }
    environment.invocations++
    const message: ToWorker = { type: 'invoke', id: requestId, eventJson: pending.eventJson, context: pending.context, deadline: Date.now() + this.timeoutMs }
    environment.worker.postMessage(message)
  }

  private onMessage(environment: Environment, message: FromWorker): void {
    if (message.type === 'memory') {
      environment.memoryRequests.get(message.id)?.(message.memory)
      return
    }
    if (message.type === 'ready') {
      environment.ready = true
      const first = environment.assigned
      environment.assigned = undefined
      if (first) this.run(environment, first, true)
      else this.dispatch()
      return
    }
    if (message.type === 'init-error') {
      const first = environment.assigned
      environment.assigned = undefined
      first?.settle({ ok: false, error: message.error, durationMs: 0, crashed: true, coldStart: true, environmentId: environment.id })
      this.destroy(environment)
      this.dispatch()
      return
    }
    const current = environment.current
    if (current === undefined || current.requestId !== message.id) return
    clearTimeout(current.timer)
    environment.current = undefined
    const common = { durationMs: performance.now() - current.startedAt, coldStart: current.coldStart, environmentId: environment.id }
    if (message.ok) {
      current.pending.settle({ ok: true, value: message.valueJson === undefined ? null : JSON.parse(message.valueJson), ...common })
    } else {
      current.pending.settle({ ok: false, error: message.error, crashed: false, ...common })
    }
    this.dispatch()
  }

  private onTimeout(environment: Environment, requestId: number): void {
    const current = environment.current
    if (current === undefined || current.requestId !== requestId) return
    environment.current = undefined
    this.destroy(environment)
    const seconds = (this.timeoutMs / 1000).toFixed(2)
    current.pending.settle({
      ok: false,
      // Lambda's own wording and error type for a function timeout.
      error: { name: 'Sandbox.Timedout', message: `Task timed out after ${seconds} seconds` },
      durationMs: performance.now() - current.startedAt,
      crashed: true,
      coldStart: current.coldStart,
      environmentId: environment.id,
    })
    this.dispatch()
  }

  private onExit(environment: Environment, code: number): void {
    const wasListed = this.remove(environment)
    for (const settle of [...environment.memoryRequests.values()]) settle(null)
    const current = environment.current
    const first = environment.assigned
    environment.current = undefined
    environment.assigned = undefined
    if (current) clearTimeout(current.timer)
    const error: ErrorInfo =
      (environment.uncaught as { code?: unknown } | undefined)?.code === 'ERR_WORKER_OUT_OF_MEMORY'
        ? this.outOfMemory()
        : environment.uncaught !== undefined
          ? errorInfoOf(environment.uncaught)
          : { name: 'Runtime.ExitError', message: `Runtime exited with error: exit status ${code}` }
    if (current) {
      current.pending.settle({ ok: false, error, durationMs: performance.now() - current.startedAt, crashed: true, coldStart: current.coldStart, environmentId: environment.id })
    }
    first?.settle({ ok: false, error, durationMs: 0, crashed: true, coldStart: true, environmentId: environment.id })
    if (wasListed) this.dispatch()
  }

  /** Node terminated the thread for exceeding its heap: Lambda's error type for a sandbox out of memory. */
  private outOfMemory(): ErrorInfo {
    const { maxOldGenerationSizeMb: old, maxYoungGenerationSizeMb: young } = this.resourceLimits
    return {
      name: 'Runtime.OutOfMemory',
      message: `Runtime exited with error: out of memory (function memory ${this.memoryLimitInMB} MB: the execution environment's JS heap exceeded its limit of ${old} MB old generation + ${young} MB young generation)`,
    }
  }

  /** Takes the environment out of service and terminates its thread. */
  private destroy(environment: Environment): void {
    this.remove(environment)
    void environment.worker.terminate()
  }

  private remove(environment: Environment): boolean {
    const index = this.environments.indexOf(environment)
    if (index < 0) return false
    this.environments.splice(index, 1)
    return true
  }
}

/** Prefixes of the variables a function's configuration sets, which a sandbox does not inherit. */
const FUNCTION_CONFIG_PREFIXES = ['STRATA_', 'POWERTOOLS_', 'AWS_']

export function hostEnvironment(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [key, value] of Object.entries(env)) {
    if (value === undefined || FUNCTION_CONFIG_PREFIXES.some((p) => key.startsWith(p))) continue
    out[key] = value
  }
  return out
}

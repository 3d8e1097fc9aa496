// Lambda execution environments for local runs: each imports the handler module once and serves
// one invocation at a time, as a worker thread or a child process, its V8 heap bounded by the
// function's memory. How they emulate Lambda's sandboxes (reuse, replacement, isolation, memory):
// docs/operations.md "Execution environments of the local runtime".
import { type ChildProcess, fork } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { basename, extname, isAbsolute } from 'node:path'
import { createInterface } from 'node:readline'
import type { Readable } from 'node:stream'
import { fileURLToPath } from 'node:url'
import { type ResourceLimits, Worker } from 'node:worker_threads'
import type { Context } from 'aws-lambda'
import { StrataInputError } from '../../lib/errors.ts'
import { type BundledEnvironment, bundledEnvironment } from './handler-bundles.ts'
import { errorInfoOf, PROCESS_INIT_ENV, type ContextData, type ErrorInfo, type FromWorker, type ThreadMemory, type ToWorker, type WorkerInit } from './worker.ts'

export type InvokeResult =
  | { ok: true; value: unknown; durationMs: number; coldStart: boolean; environmentId: number }
  | { ok: false; error: ErrorInfo; durationMs: number; crashed: boolean; coldStart: boolean; environmentId: number | null }

/** An environment's memory as its thread or process reported it (worker.ts ThreadMemory), with the pool's view of it. */
export interface EnvironmentMemory extends ThreadMemory {
  environmentId: number
  /** invocations it served so far */
  invocations: number
  /** the environment did not answer in time (busy on the CPU): these are its last answered figures */
  stale: boolean
}

/** What ExecutionEnvironmentPool.memory() asks of each environment. */
export interface MemoryRequestOptions {
  /** how long to wait for an environment's answer before giving its last one, marked stale; default 1000 */
  timeoutMs?: number
  /**
   * a full GC first (a no-op unless the environment runs with --expose-gc: a thread when this
   * process does, a process when this process was started with it); default false
   */
  collect?: boolean
  /** after the GC, how long the environment waits before reading, for V8 to unmap the pages it freed (on a background thread); default 0 */
  settleMs?: number
  /**
   * an environment in an invocation is asked once that invocation has ended, and none starts
   * an invocation until it has answered, so that its figures are what it keeps from one
   * invocation to the next, not a job's data in flight (`timeoutMs` should then cover an
   * invocation). One whose invocation has not ended within `timeoutMs` is asked there and
   * then, and given another `timeoutMs` to answer: its figures are then a busy one's
   * (ThreadMemory.busy), not none. Default false: every environment is asked at once, and its
   * answer says whether an invocation was in progress.
   */
  betweenInvocations?: boolean
}

/** What an execution environment is: a worker thread of this process, or a child process of its own (docs/operations.md "Execution environments of the local runtime", "Isolation"). */
export type Isolation = 'thread' | 'process'

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
  /**
   * Node options for the environments' threads or processes, after the pool's own; default
   * none (the parent's, e.g. tsx's own loader flags, are not inherited, but for a process its
   * --expose-gc and --min-semi-space-size: processV8Flags)
   */
  execArgv?: string[]
  /** each environment a worker thread of this process ('thread', the default) or a child process of its own ('process') */
  isolation?: Isolation
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

/** The V8 limits of an environment's thread for a function of `memoryMb` (docs/operations.md "Execution environments of the local runtime"). */
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

/**
 * The V8 flags of an environment's own process for a function's `limits` (workerResourceLimits),
 * bounding its heap as a thread's resourceLimits do: --max-old-space-size, --max-semi-space-size
 * = ⌈young / 3⌉, and this process's --expose-gc and --min-semi-space-size when it has them. Why a
 * third, as measured: docs/operations.md "Execution environments of the local runtime".
 */
export function processV8Flags(limits: Pick<ResourceLimits, 'maxOldGenerationSizeMb' | 'maxYoungGenerationSizeMb'>, parentExecArgv: readonly string[] = process.execArgv): string[] {
  const semi = Math.max(1, Math.ceil(limits.maxYoungGenerationSizeMb! / 3))
  const flags = [`--max-old-space-size=${limits.maxOldGenerationSizeMb}`, `--max-semi-space-size=${semi}`]
  if (parentExecArgv.some((a) => /^--expose[-_]gc$/.test(a))) flags.push('--expose-gc')
  const minSemi = v8FlagValue(parentExecArgv, 'min-semi-space-size')
  if (minSemi !== undefined && minSemi > 0) flags.push(`--min-semi-space-size=${Math.min(minSemi, semi)}`)
  return flags
}

/** A numeric V8 flag's last value in an execArgv (`--name=N` or `--name N`, dashes or underscores), if there. */
function v8FlagValue(execArgv: readonly string[], name: string): number | undefined {
  const spelled = new RegExp(`^--${name.replaceAll('-', '[-_]')}(?:=(.*))?$`)
  let value: number | undefined
  execArgv.forEach((arg, i) => {
    const m = spelled.exec(arg)
    if (!m) return
    const n = Number(m[1] ?? execArgv[i + 1])
    if (Number.isFinite(n)) value = n
  })
  return value
}

// An environment whose handler has a prebuilt bundle (handler-bundles.ts: the test suite
// builds them once per run) starts from the bundled worker.ts, plain JavaScript. Otherwise:
// Workers start from this CommonJS snippet because Node 20 cannot load a .ts entry and does
// not apply `--import tsx` from a worker's execArgv before resolving its entry (checked on
// Node 20.20 with tsx 4.23: ERR_UNKNOWN_FILE_EXTENSION); registering tsx's ESM hooks first
// and then importing the entry works.
// tsx's ESM build: its CommonJS build of the same API cannot register hooks from a worker.
const TSX_ESM_API = import.meta.resolve('tsx/esm/api')
const WORKER_ENTRY = new URL('./worker.ts', import.meta.url).href
const BOOTSTRAP = `import(${JSON.stringify(TSX_ESM_API)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(WORKER_ENTRY)}) })`
// A process does apply `--import` before resolving its .ts entry (checked on Node 20.20 with
// tsx 4.23), so a process environment is worker.ts itself, forked with tsx's loader first
// (resolved here, so a pool works from any working directory).
const TSX_LOADER = import.meta.resolve('tsx')
const WORKER_PATH = fileURLToPath(WORKER_ENTRY)

/** What an environment tells the pool, but for its uncaught error, which its host reports with its exit. */
type FromEnvironment = Exclude<FromWorker, { type: 'uncaught' }>

/** How an environment's thread or process ended, as the invocation in flight is told. */
export type EnvironmentExit =
  | { cause: 'out-of-memory' }
  | { cause: 'uncaught'; error: ErrorInfo }
  | { cause: 'exit'; code: number | null; signal: NodeJS.Signals | null }

/** What the pool needs of the thread or process an environment runs in. */
interface EnvironmentHost {
  /** what the handlers write to stdout, when the pool reads it (onLogLine) */
  readonly stdout: Readable | null
  post(message: ToWorker): void
  /** ends the environment at once (a thread's terminate(), a process's SIGKILL); resolves once it exited */
  terminate(): Promise<void>
}

interface HostSettings {
  init: WorkerInit
  /** the prebuilt runtime and handler to load instead of worker.ts through tsx (handler-bundles.ts), if any */
  bundle: BundledEnvironment | null
  env: Record<string, string>
  execArgv: string[]
  resourceLimits: Required<ResourceLimits>
  pipeStdout: boolean
  onMessage(message: FromEnvironment): void
  /** once, after every message the environment sent */
  onExit(exit: EnvironmentExit): void
}

/** An environment as a worker thread of this process. */
function threadHost(s: HostSettings): EnvironmentHost {
  // a bundle is plain JavaScript: the thread starts from it, with no tsx to register
  const worker = new Worker(s.bundle?.worker ?? BOOTSTRAP, {
    eval: s.bundle === null,
    workerData: { strataExecutionEnvironment: s.bundle ? { ...s.init, bundle: s.bundle.handler } : s.init },
    env: s.env,
    execArgv: s.execArgv,
    resourceLimits: s.resourceLimits,
    stdout: s.pipeStdout,
  })
  let uncaught: unknown
  let exited = false
  worker.on('message', s.onMessage)
  worker.on('error', (error) => {
    uncaught = error
  })
  worker.on('exit', (code) => {
    exited = true
    s.onExit(
      (uncaught as { code?: unknown } | undefined)?.code === 'ERR_WORKER_OUT_OF_MEMORY'
        ? { cause: 'out-of-memory' }
        : uncaught !== undefined
          ? { cause: 'uncaught', error: errorInfoOf(uncaught) }
          : { cause: 'exit', code, signal: null },
    )
  })
  return {
    stdout: s.pipeStdout ? worker.stdout : null,
    post: (message) => worker.postMessage(message),
    terminate: async () => {
      if (!exited) await worker.terminate()
    },
  }
}

/** The line V8 aborts a process with when its heap is exhausted (there are a few wordings before the dash). */
const V8_HEAP_OOM = /^FATAL ERROR: .*JavaScript heap out of memory/
/** The first line of V8's report before it aborts for memory (after a blank line: the last GCs, the JS stack, then the FATAL ERROR line and a native stack). */
const V8_OOM_REPORT = /^<--- Last few GCs --->/

/**
 * A process environment's stderr, line by line: every line goes to `forward` but for V8's
 * report of a heap exhausted, which is held from its first line (and the blank lines before
 * it) and, once its FATAL ERROR line shows what it is, dropped with the rest of the output:
 * the environment's exit reports it, as Runtime.OutOfMemory (a thread out of memory prints
 * nothing either). A report that never reaches that line is forwarded at end().
 */
export function processStderr(forward: (line: string) => void): { line(line: string): void; end(): void; readonly outOfMemory: boolean } {
  let outOfMemory = false
  let blanks = 0
  let held: string[] | null = null
  const flushBlanks = () => {
    for (; blanks > 0; blanks--) forward('')
  }
  return {
    get outOfMemory() {
      return outOfMemory
    },
    line(line) {
      if (outOfMemory) return
      if (V8_HEAP_OOM.test(line)) {
        outOfMemory = true
        held = null
        blanks = 0
      } else if (held !== null) {
        held.push(line)
      } else if (line === '') {
        blanks++
      } else if (V8_OOM_REPORT.test(line)) {
        held = [...Array<string>(blanks).fill(''), line]
        blanks = 0
      } else {
        flushBlanks()
        forward(line)
      }
    },
    end() {
      for (const line of held ?? []) forward(line)
      held = null
      flushBlanks()
    },
  }
}

/** An environment as a child process of its own. */
function processHost(s: HostSettings): EnvironmentHost {
  const child: ChildProcess = fork(s.bundle?.worker ?? WORKER_PATH, [], {
    serialization: 'advanced',
    execArgv: [...(s.bundle ? [] : ['--import', TSX_LOADER]), ...processV8Flags(s.resourceLimits), ...s.execArgv],
    env: { ...s.env, [PROCESS_INIT_ENV]: JSON.stringify(s.bundle ? { ...s.init, bundle: s.bundle.handler } : s.init) },
    stdio: ['ignore', s.pipeStdout ? 'pipe' : 'inherit', 'pipe', 'ipc'],
  })
  let uncaught: ErrorInfo | undefined
  let spawnError: Error | undefined
  let closed = false
  const whenClosed = new Promise<void>((resolve) => child.once('close', () => resolve()))

  child.on('message', (message: FromWorker) => {
    if (message.type === 'uncaught') uncaught ??= message.error
    else s.onMessage(message)
  })
  // spawn and send failures; a failed send's environment exits, which settles its invocation
  child.on('error', (error) => {
    if (child.pid === undefined) spawnError ??= error
  })
  // the handlers' stderr goes to this process's, but for V8's report of a heap exhausted
  const stderr = processStderr((line) => process.stderr.write(line + '\n'))
  createInterface({ input: child.stderr!, crlfDelay: Infinity }).on('line', (line) => stderr.line(line))
  // 'close': the process exited and its stderr and IPC channel are drained, so every message it
  // sent (an uncaught error's included) and its stderr's last line are in
  child.once('close', (code, signal) => {
    closed = true
    stderr.end()
    s.onExit(
      stderr.outOfMemory
        ? { cause: 'out-of-memory' }
        : uncaught !== undefined
          ? { cause: 'uncaught', error: uncaught }
          : spawnError !== undefined
            ? { cause: 'uncaught', error: errorInfoOf(spawnError) }
            : { cause: 'exit', code, signal },
    )
  })
  return {
    stdout: child.stdout,
    post: (message) => {
      // a send to a process exiting fails; its exit settles what was in flight
      if (child.connected) child.send(message, undefined, {}, () => {})
    },
    terminate: async () => {
      if (closed) return
      child.kill('SIGKILL')
      await whenClosed
    },
  }
}

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
  host: EnvironmentHost
  ready: boolean
  /** the invocation whose arrival started this environment; it runs first, as a cold start */
  assigned?: Pending
  current?: Running
  invocations: number
  /** memory requests sent and not yet answered, by request id */
  memoryRequests: Map<number, (memory: ThreadMemory | null) => void>
  /** memory requests to send once the invocation in progress has ended, before the next one (memory()'s betweenInvocations) */
  afterInvocation: ToWorker[]
  /** betweenInvocations memory requests not yet answered: while any is, no invocation is dispatched here */
  held: number
  /** the environment's last answer to a memory request */
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
  /** the V8 limits every environment runs under, from memoryLimitInMB (a process's as V8 flags: processV8Flags) */
  readonly resourceLimits: Required<ResourceLimits>
  readonly isolation: Isolation
  private readonly execArgv: string[]
  private readonly onLogLine?: (line: string, environmentId: number) => void
  private readonly workerEnv: Record<string, string>
  /** the prebuilt runtime and handler its environments load, when there are bundles for it (handler-bundles.ts); else null: tsx */
  private readonly bundle: BundledEnvironment | null
  private readonly environments: Environment[] = []
  /** every environment's thread or process not yet exited, including destroyed ones still terminating */
  private readonly hosts = new Set<EnvironmentHost>()
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
    const isolation = opts.isolation === undefined ? 'thread' : opts.isolation
    if (isolation !== 'thread' && isolation !== 'process') {
      throw new StrataInputError(`isolation: expected 'thread' or 'process', got ${JSON.stringify(opts.isolation)}`)
    }
    this.isolation = isolation
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
    this.bundle = bundledEnvironment(opts.handlerModule)
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
   * The memory of every environment that has imported its handler, as each reports it (its
   * own V8 heap, external and ArrayBuffer bytes; a process also its RSS and pid). One that does
   * not answer within `timeoutMs` (busy on the CPU; `betweenInvocations`: see there) is given
   * with its last answer, marked stale; one that never answered, or exited meanwhile, is left
   * out.
   */
  async memory(opts: MemoryRequestOptions = {}): Promise<EnvironmentMemory[]> {
    const { timeoutMs = 1000, collect = false, settleMs = 0, betweenInvocations = false } = opts
    const answers = await Promise.all(
      this.environments.filter((e) => e.ready).map(
        (environment) =>
          new Promise<EnvironmentMemory | null>((resolve) => {
            const id = this.nextRequestId++
            const message: ToWorker = { type: 'memory', id, collect, settleMs }
            const onTimeout = () => {
              // still waiting behind an invocation that outlasted the wait: ask it now
              const queued = environment.afterInvocation.indexOf(message)
              if (queued < 0) return settle(null, true)
              environment.afterInvocation.splice(queued, 1)
              environment.host.post(message)
              timer = setTimeout(() => settle(null, true), timeoutMs)
            }
            let timer = setTimeout(onTimeout, timeoutMs)
            const settle = (memory: ThreadMemory | null, timedOut = false) => {
              clearTimeout(timer)
              if (!environment.memoryRequests.delete(id)) return
              if (betweenInvocations && --environment.held === 0) this.dispatch()
              if (memory) environment.lastMemory = memory
              const figures = memory ?? (timedOut ? environment.lastMemory : undefined)
              resolve(figures ? { ...figures, environmentId: environment.id, invocations: environment.invocations, stale: memory === null } : null)
            }
            environment.memoryRequests.set(id, settle)
            if (!betweenInvocations) return environment.host.post(message)
            // held out of dispatch() until it answers, so no invocation starts while it is measured
            environment.held++
            if (environment.current !== undefined || environment.assigned !== undefined) environment.afterInvocation.push(message)
            else environment.host.post(message)
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
    await Promise.all([...this.hosts].map((host) => host.terminate()))
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
      const idle = this.environments.find((e) => e.ready && e.current === undefined && e.assigned === undefined && e.held === 0)
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
    const id = this.nextEnvironmentId++
    // the host calls back only asynchronously, once `environment` below exists
    const host: EnvironmentHost = (this.isolation === 'process' ? processHost : threadHost)({
      init: { handlerModule: this.handlerModule, exportName: this.exportName },
      bundle: this.bundle,
      env: this.workerEnv,
      execArgv: this.execArgv,
      resourceLimits: this.resourceLimits,
      pipeStdout: this.onLogLine !== undefined,
      onMessage: (message) => this.onMessage(environment, message),
      onExit: (exit) => {
        this.hosts.delete(host)
        this.onExit(environment, exit)
      },
    })
    const environment: Environment = { id, host, ready: false, assigned: first, invocations: 0, memoryRequests: new Map(), afterInvocation: [], held: 0 }
    if (this.onLogLine && host.stdout) {
      const onLine = this.onLogLine
      createInterface({ input: host.stdout, crlfDelay: Infinity }).on('line', (line) => onLine(line, environment.id))
    }
    this.environments.push(environment)
    this.hosts.add(host)
  }

  private run(environment: Environment, pending: Pending, coldStart: boolean): void {
    const requestId = this.nextRequestId++
    const timer = setTimeout(() => this.onTimeout(environment, requestId), this.timeoutMs)
    const startedAt = performance.now()
    environment.current = { pending, requestId, startedAt, coldStart, timer }
    environment.invocations++
    const message: ToWorker = { type: 'invoke', id: requestId, eventJson: pending.eventJson, context: pending.context, deadline: Date.now() + this.timeoutMs }
    environment.host.post(message)
  }

  private onMessage(environment: Environment, message: FromEnvironment): void {
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
    // asked for between invocations: sent before the next invocation, so answered before it runs
    for (const request of environment.afterInvocation.splice(0)) environment.host.post(request)
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

  private onExit(environment: Environment, exit: EnvironmentExit): void {
    const wasListed = this.remove(environment)
    for (const settle of [...environment.memoryRequests.values()]) settle(null)
    const current = environment.current
    const first = environment.assigned
    environment.current = undefined
    environment.assigned = undefined
    if (current) clearTimeout(current.timer)
    const error: ErrorInfo =
      exit.cause === 'out-of-memory'
        ? this.outOfMemory()
        : exit.cause === 'uncaught'
          ? exit.error
          : {
              name: 'Runtime.ExitError',
              // Lambda's wording for a runtime that exited, or was killed by a signal
              message: `Runtime exited with error: ${exit.signal !== null ? `signal: ${exit.signal}` : `exit status ${exit.code}`}`,
            }
    if (current) {
      current.pending.settle({ ok: false, error, durationMs: performance.now() - current.startedAt, crashed: true, coldStart: current.coldStart, environmentId: environment.id })
    }
    first?.settle({ ok: false, error, durationMs: 0, crashed: true, coldStart: true, environmentId: environment.id })
    if (wasListed) this.dispatch()
  }

  /** Node terminated the thread, or V8 aborted the process, for exceeding its heap: Lambda's error type for a sandbox out of memory. */
  private outOfMemory(): ErrorInfo {
    const { maxOldGenerationSizeMb: old, maxYoungGenerationSizeMb: young } = this.resourceLimits
    return {
      name: 'Runtime.OutOfMemory',
      message: `Runtime exited with error: out of memory (function memory ${this.memoryLimitInMB} MB: the execution environment's JS heap exceeded its limit of ${old} MB old generation + ${young} MB young generation)`,
    }
  }

  /** Takes the environment out of service and ends its thread or process. */
  private destroy(environment: Environment): void {
    this.remove(environment)
    void environment.host.terminate()
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

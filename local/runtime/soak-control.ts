// Fault injection for the soak (bench/soak.ts, test/soak.test.ts), on both sides of the
// boundary between the soak and the function environments (worker threads or processes of
// their own: local/runtime/execution-environment.ts). The soak process arms a fault by writing a file into a control
// directory; the next invocation of the named function claims it with a rename (only one
// rename of a file succeeds, so exactly one invocation gets each fault), appends what it did
// to a log, and misbehaves:
// - throw: the handler fails before doing anything (a function error; SQS redelivers);
// - exit-at-write: the environment exits at the k-th S3 write of the invocation, before that
//   write is sent or after it landed (k from the share the soak chose, scaled by the writes
//   this environment's previous invocation made), so crashes fall anywhere from the first
//   data file to the snapshot and the LATEST hint;
// - exit-after-return: the handler finished (committed, jobs enqueued) and the environment exits
//   before the poller can delete the messages: redelivery of work that is done.
// Restarts go through the control directory too: the soak creates `restart/<role>-<seq>`,
// which every environment of the role watches for (inotify on Linux, through fs.watch), and
// each exits at once (busy ones mid-job), so the next invocations cold-start. A file, not a
// worker_threads channel, so that it reaches environments that are processes of their own. (Each environment's memory is asked through its pool: ExecutionEnvironmentPool.memory().)
//
// The S3 write hook is a store wrapper (lib/store/observed-store.ts) around every S3 store
// the environment's function opens: installSoakControl hands it to the wrapper module, which
// builds the function's runtime with it (functions/shared/runtime.ts, its wrapStore seam). It
// stands for a crash at an exact point of the write path, which a timer could hit only by
// chance.
import { appendFileSync, mkdirSync, readFileSync, readdirSync, renameSync, watch, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { threadId } from 'node:worker_threads'
import { ObservedStore, type StoreRequest } from '../../lib/store/observed-store.ts'
import type { ObjectStore } from '../../lib/store/object-store.ts'
import { S3Store } from '../../lib/store/s3-store.ts'

export const CONTROL_DIR_ENV = 'STRATA_SOAK_CONTROL_DIR'

export type Role = 'writer' | 'compactor'
export type CrashKind = 'throw' | 'exit-at-write' | 'exit-after-return'

export interface ArmedFault {
  seq: number
  role: Role
  kind: CrashKind
  /** exit-at-write: position in [0, 1) of the write to die at, among the invocation's writes */
  share?: number
  /** exit-at-write: die after the write landed (else before it is sent) */
  landed?: boolean
}

/** One line of the fired log. */
export interface FiredFault {
  seq: number
  role: Role
  kind: CrashKind | 'restart'
  /** epoch ms */
  at: number
  /** the environment it struck: "<pid>.<threadId>" */
  environment: string
  /** where it struck, in words: "before write 3 of ~12 (PutObject s3://…/bucket-1/data-….parquet)" */
  point: string
  /** SQS records of the invocation it struck; 0 for an idle environment killed by a restart */
  records: number
}

const ARMED = 'armed'
const CLAIMED = 'claimed'
const RESTART = 'restart'
const FIRED_LOG = 'fired.jsonl'

// ---- the soak process's side ----

export class SoakControl {
  readonly dir: string
  private readOffset = 0

  constructor(dir: string) {
    this.dir = dir
    for (const sub of [ARMED, CLAIMED, RESTART]) mkdirSync(join(dir, sub), { recursive: true })
    writeFileSync(join(dir, FIRED_LOG), '')
  }

  /** The environment variables the wrapped handlers need. */
  env(): Record<string, string> {
    return { [CONTROL_DIR_ENV]: this.dir }
  }

  arm(fault: ArmedFault): void {
    const name = `${fault.role}-${String(fault.seq).padStart(6, '0')}.json`
    const tmp = join(this.dir, `.${name}`)
    writeFileSync(tmp, JSON.stringify(fault))
    // appears whole: a worker never claims a half-written file
    renameSync(tmp, join(this.dir, ARMED, name))
  }

  /** Takes back an armed fault nobody claimed; false when an invocation got it meanwhile. */
  disarm(fault: ArmedFault): boolean {
    const name = `${fault.role}-${String(fault.seq).padStart(6, '0')}.json`
    try {
      renameSync(join(this.dir, ARMED, name), join(this.dir, `.cancelled-${name}`))
      return true
    } catch {
      return false
    }
  }

  /** Every environment of `role` alive now exits (those that start later do not see it). */
  restart(role: Role, seq: number): void {
    writeFileSync(join(this.dir, RESTART, `${role}-${seq}`), '')
  }

  /** Log lines appended since the last call. */
  newlyFired(): FiredFault[] {
    const text = readFileSync(join(this.dir, FIRED_LOG), 'utf8')
    const end = text.lastIndexOf('\n') + 1
    const lines = text.slice(this.readOffset, end).split('\n').filter((l) => l !== '')
    this.readOffset = end
    return lines.map((l) => JSON.parse(l) as FiredFault)
  }

  close(): void {}
}

// ---- the handlers' side (inside an environment) ----

interface Current {
  fault: ArmedFault
  records: number
  writes: number
  /** the write to die at (1-based) */
  target: number
}

let role: Role | null = null
let current: Current | null = null
let busy = 0
let writesThisInvocation = 0
/** writes of this environment's previous invocation: the scale for exit-at-write */
let writesLastInvocation = 0

function controlDir(): string | undefined {
  return process.env[CONTROL_DIR_ENV] || undefined
}

function logFired(f: Omit<FiredFault, 'at' | 'environment'>): void {
  const dir = controlDir()
  if (!dir) return
  const line: FiredFault = { ...f, at: Date.now(), environment: environmentName() }
  appendFileSync(join(dir, FIRED_LOG), JSON.stringify(line) + '\n')
}

function die(point: string): never {
  const c = current!
  logFired({ seq: c.fault.seq, role: c.fault.role, kind: c.fault.kind, point, records: c.records })
  process.exit(1)
}

/** This environment, unique among the soak's: its process and its thread within it. */
function environmentName(): string {
  return `${process.pid}.${threadId}`
}

/**
 * Sets up this environment for `r`: the restart watch; returns the S3 write hook, a store
 * wrapper for the runtime the wrapper module builds. Called once, at the top of a wrapper
 * module; outside an environment of the soak (no control directory in its environment
 * variables, which only the soak's functions get) it watches nothing and the wrapper
 * returns each store as it is.
 */
export function installSoakControl(r: Role): { wrapStore: (store: ObjectStore) => ObjectStore } {
  const dir = controlDir()
  if (!dir || role !== null) return { wrapStore: (store) => store }
  role = r
  const watcher = watch(join(dir, RESTART), (_event, file) => {
    const m = typeof file === 'string' ? /^(writer|compactor)-(\d+)$/.exec(file) : null
    if (m && m[1] === role) {
      logFired({ seq: Number(m[2]), role: role, kind: 'restart', point: busy > 0 ? 'busy: killed mid-invocation' : 'idle', records: current?.records ?? 0 })
      process.exit(1)
    }
  })
  watcher.unref()
  return { wrapStore: (store) => (store instanceof S3Store ? exitAtWrite(store) : store) }
}

/** The store as the environment's code sees it: each write counted, the armed exit-at-write struck at its write. */
function exitAtWrite(store: ObjectStore): ObjectStore {
  const isWrite = (r: StoreRequest) => r.op === 'put' || r.op === 'putIfAbsent'
  const what = (r: StoreRequest) => `${r.op === 'put' ? 'PutObject' : 'PutObject If-None-Match'} ${store.uri}/${r.key}`
  // the write this invocation dies after, once it landed
  let dieAfter: StoreRequest | null = null
  return new ObservedStore(store, {
    before(r) {
      if (!isWrite(r)) return
      writesThisInvocation++
      const c = current
      if (c && c.fault.kind === 'exit-at-write' && ++c.writes === c.target) {
        if (!c.fault.landed) die(`before write ${c.writes} of ~${writesLastInvocation || '?'} (${what(r)})`)
        dieAfter = r
      }
    },
    after(r, outcome) {
      if (r !== dieAfter || !outcome.ok) return
      die(`after write ${current!.writes} of ~${writesLastInvocation || '?'} landed (${what(r)})`)
    },
  })
}

/** The armed fault for this role, if any, now owned by this invocation. */
function claim(r: Role): ArmedFault | null {
  const dir = controlDir()
  if (!dir) return null
  let names: string[]
  try {
    names = readdirSync(join(dir, ARMED)).filter((n) => n.startsWith(`${r}-`)).sort()
  } catch {
    return null
  }
  for (const n of names) {
    const to = join(dir, CLAIMED, `${n}.${environmentName()}`)
    try {
      renameSync(join(dir, ARMED, n), to)
    } catch {
      continue // another invocation got it
    }
    return JSON.parse(readFileSync(to, 'utf8')) as ArmedFault
  }
  return null
}

/**
 * Runs `fn` (the real handler) as invocation of `r`, with this invocation's armed fault if
 * it claims one.
 */
export async function withSoakFaults<T>(r: Role, records: number, fn: () => Promise<T>): Promise<T> {
  busy++
  writesThisInvocation = 0
  try {
    const fault = claim(r)
    if (fault) {
      const scale = writesLastInvocation > 0 ? writesLastInvocation : r === 'writer' ? 20 : 6
      current = { fault, records, writes: 0, target: 1 + Math.floor((fault.share ?? 0) * scale) }
      if (fault.kind === 'throw') {
        logFired({ seq: fault.seq, role: r, kind: 'throw', point: 'before the handler ran', records })
        current = null
        throw new Error(`soak: injected ${r} error (fault ${fault.seq})`)
      }
    }
    const result = await fn()
    if (current) {
      const c = current
      const point = c.fault.kind === 'exit-after-return'
        ? `after the handler returned (${writesThisInvocation} writes), before the poller deleted the messages`
        : `after the handler returned: only ${writesThisInvocation} writes, fewer than ${c.target}, before the poller deleted the messages`
      die(point)
    }
    return result
  } finally {
    writesLastInvocation = writesThisInvocation
    current = null
    busy--
  }
}

// The deterministic simulation of the whole pipeline (docs/reliability.md "The deterministic
// simulation"). One seed drives a world (world.ts) in which writers, committers (lease,
// forwarding, folding), compactors, maintenance and a consumer run the real lib/ code
// against an in-memory store and simulated SQS queues (sim-queue.ts), each Lambda
// invocation in an execution environment of its own that may die at any request, time out,
// run with a skewed clock, or lose its acknowledgement. After every step the invariants
// (checks.ts) are checked; the first one broken ends the run, and its seed replays it exactly.
// Here: the run's phases (set-up, the actors started, stepping until drained, the end state).

import { Checks } from './checks.ts'
import { CONSUMER_EVERY_MS, Consumer, maintenance, startEventSources } from './actors.ts'
import { SimContext, type SimOptions } from './context.ts'
import { runLoad } from './load.ts'
import { NO_FAULTS, type RequestFaults } from './world.ts'


export interface SimResult {
  seed: number
  ok: boolean
  /** the first invariant broken, with what the run knew then */
  failure?: string
  /** a digest of everything that happened, in order: equal for two runs of one seed */
  trace: string
  steps: number
  virtualMs: number
  /** when the pipeline had drained after the load, in virtual ms after the load ended */
  drainedAfterMs: number | null
  stats: Record<string, number>
}

/** Request faults while the load runs (none during the drain: the pipeline must heal). */
const LOAD_FAULTS: RequestFaults = { error: 0.01, lostReply: 0.005, lateApply: 0.002, death: 0.0005, slow: 0.02 }

export async function runSimulation(o: SimOptions): Promise<SimResult> {
  const ctx = new SimContext(o)
  const world = ctx.world
  // no compression thread: its worker would run on real time
  const memorySize = process.env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE
  process.env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE = '1024'
  world.install()
  const progress: RunProgress = { steps: 0, drainedAfterMs: null }
  let endedAt = world.startMs
  try {
    await ctx.setUp()
    const loadEnded = startActors(ctx, o)
    const checks = new Checks(ctx)
    await runUntilDrained(ctx, checks, loadEnded, progress, o)
    if (ctx.failure === null) {
      // consumers and the last maintenance catch up, then everything is judged
      const until = world.now + 2 * CONSUMER_EVERY_MS
      while (world.now < until && world.step()) await world.settle()
      await checks.finalChecks()
    }
    if (ctx.failure === null) await checks.orphanCleanup()
  } catch (e) {
    ctx.fail(`the harness failed: ${(e as Error).stack ?? e}`)
  } finally {
    endedAt = world.now
    world.uninstall()
    if (memorySize === undefined) delete process.env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE
    else process.env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE = memorySize
  }
  const stats = ctx.stats
  Object.assign(stats, world.counts)
  stats.sent = ctx.sent.size
  return { seed: o.seed, ok: ctx.failure === null, failure: ctx.failure ?? undefined, trace: world.trace, steps: progress.steps, virtualMs: endedAt - world.startMs, drainedAfterMs: progress.drainedAfterMs, stats }
}

/**
 * Starts the event sources, maintenance, the consumer and the load, in this order (each
 * runs to its first wait at once, so the order fixes the draws); returns when the load has
 * ended and the faults are off.
 */
function startActors(ctx: SimContext, o: SimOptions): Promise<void> {
  startEventSources(ctx)
  void maintenance(ctx)
  const consumer = new Consumer(ctx)
  void consumer.run()
  const loadEnded = runLoad(ctx, o.loadMs ?? 90_000, o.rate ?? 4).then(() => {
    ctx.faultsOn = false
    ctx.world.faults = NO_FAULTS
  })
  if (o.faults) ctx.world.faults = LOAD_FAULTS
  return loadEnded
}

interface RunProgress {
  steps: number
  drainedAfterMs: number | null
}

/**
 * Steps the world, checking after every step, until the pipeline has drained after the
 * load or an invariant broke.
 */
async function runUntilDrained(ctx: SimContext, checks: Checks, loadEnded: Promise<void>, progress: RunProgress, o: SimOptions): Promise<void> {
  const world = ctx.world
  const drainWithinMs = o.drainWithinMs ?? 30 * 60_000
  const checkEveryMs = o.checkEveryMs ?? 10_000
  let loadDone = false
  void loadEnded.then(() => (loadDone = true))
  let loadEndedAt = 0
  let nextCheck = world.now + checkEveryMs
  let nextDrainLook = 0
  await world.settle()
  while (ctx.failure === null) {
    if (!world.step()) {
      ctx.fail('nothing left to run (every actor waits on nothing)')
      break
    }
    progress.steps++
    await world.settle()
    checks.checkJobsPerBucket()
    if (world.now >= nextCheck) {
      nextCheck = world.now + checkEveryMs
      await checks.checkEverything()
    }
    if (loadDone && loadEndedAt === 0) loadEndedAt = world.now
    if (loadEndedAt && world.now >= nextDrainLook) {
      nextDrainLook = world.now + 5_000
      const left = await checks.drained()
      if (left === null) {
        progress.drainedAfterMs = world.now - loadEndedAt
        break
      }
      if (world.now - loadEndedAt > drainWithinMs) ctx.fail(`not drained ${drainWithinMs / 60_000} virtual minutes after the load ended: ${left}`)
    }
  }
}

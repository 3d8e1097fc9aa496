// Preloaded into a child process (`node --import`) to run it with a wrong wall clock:
// Date.now() and new Date() are shifted by STRATA_TEST_CLOCK_SKEW_MS. A skewed host clock
// cannot be caused otherwise without root and a second machine, so this is a mock of the
// clock alone; everything else in the process is real.
const skew = Number(process.env.STRATA_TEST_CLOCK_SKEW_MS ?? 0)
if (skew !== 0) {
  const realNow = Date.now
  const RealDate = Date
  Date.now = () => realNow() + skew
  globalThis.Date = class extends RealDate {
    constructor(...args) {
      if (args.length === 0) super(realNow() + skew)
      else super(...args)
    }
    static now() {
      return realNow() + skew
    }
  }
}

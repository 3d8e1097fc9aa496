// Preloaded into a `strata` child (`node --import`) by test/consumer-delivery.test.ts: each
// time the process starts waiting for stdout to drain, one line on stderr says so, with the
// bytes stdout still holds. The test sees backpressure as an event instead of guessing with
// a timer; nothing else in the process changes.
process.stdout.on('newListener', (event) => {
  if (event === 'drain') process.stderr.write(`strata-test: waiting for drain, ${process.stdout.writableLength} bytes pending\n`)
})

// A module-resolution hook that answers `fauxqs` as Node answers a package that is not
// installed (ERR_MODULE_NOT_FOUND), for a child process that checks what `strata local` says
// without its optional peer dependency. Registered through module.register (test/local-command.test.ts).
export async function resolve(specifier, context, next) {
  if (specifier === 'fauxqs') {
    const e = new Error(`Cannot find package 'fauxqs' imported from ${context.parentURL}`)
    e.code = 'ERR_MODULE_NOT_FOUND'
    throw e
  }
  return next(specifier, context)
}

// The CloudWatch metrics the functions publish (Powertools EMF, functions/shared/runtime.ts):
// namespace `Strata`, and the dimension set each publish carries. Powertools adds the
// service name as the `service` dimension to every set, next to the default `function`
// dimension; a handler that calls addDimensions({ table }) publishes that invocation's
// metrics under {service, function, table} instead. The bundle test (test/cdk-bundle.test.ts)
// runs the bundled handlers and checks that their EMF output has exactly these sets, so an
// alarm never watches a series nobody writes.

export const METRICS_NAMESPACE = 'Strata'
export const METRICS_SERVICE = 'strata'

/** {service, function, table}: maintenance, compactor and committer (one table each), writer and reader (per table read or written). */
export function tableDimensions(fn: 'maintenance' | 'writer' | 'reader' | 'compactor' | 'committer', table: string): Record<string, string> {
  return { service: METRICS_SERVICE, function: fn, table }
}

/** {service, function}: metrics of an invocation that spans several tables (writer). */
export function functionDimensions(fn: 'compactor' | 'writer'): Record<string, string> {
  return { service: METRICS_SERVICE, function: fn }
}

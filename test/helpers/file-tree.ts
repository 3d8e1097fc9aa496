// A directory's files with their sizes and modification times, to prove a command changed
// nothing on disk (the CLI tests).

import { readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'

/**
 * Every file under `dir` as `path:size:mtime`, sorted. `skip` names files left out: the LATEST
 * hint, for one, which a commit rewrites in the background after it returns
 * (lib/commit/commit.ts), so an in-process write's may land during the next command.
 */
export function fileTree(dir: string, skip: string[] = []): string[] {
  const out: string[] = []
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name)
      const st = statSync(p)
      if (st.isDirectory()) walk(p)
      else if (!skip.includes(name)) out.push(`${p}:${st.size}:${st.mtimeMs}`)
    }
  }
  walk(dir)
  return out.sort()
}

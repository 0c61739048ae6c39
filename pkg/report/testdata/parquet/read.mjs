// read.mjs prints every row of a Parquet file as a JSON line, read with
// hyparquet (installed under the current directory's node_modules; see
// .ci/run): integers as strings of digits (a JSON number would lose an
// int64's digits), doubles as numbers (JavaScript prints the shortest
// text that reads back as the same double), nulls as null.
//
//	node read.mjs FILE.parquet
import { createRequire } from 'node:module'
import { pathToFileURL } from 'node:url'

const require = createRequire(process.cwd() + '/')
const { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects } =
  await import(pathToFileURL(require.resolve('hyparquet')).href)

const file = await asyncBufferFromFile(process.argv[2])
const metadata = await parquetMetadataAsync(file)
// The top-level columns: the schema's root's children, in order.
const names = []
for (let i = 1, left = metadata.schema[0].num_children; left > 0; left--) {
  names.push(metadata.schema[i].name)
  // Skip the column's own children (a LIST's group and element).
  let skip = metadata.schema[i].num_children || 0
  i++
  while (skip > 0) { skip += (metadata.schema[i].num_children || 0) - 1; i++ }
}
const rows = await parquetReadObjects({ file, metadata })
const out = []
for (const row of rows) {
  const o = {}
  for (const name of names) {
    const v = row[name]
    o[name] = v === undefined ? null : v
  }
  out.push(JSON.stringify(o, (_, v) => typeof v === 'bigint' ? v.toString() : v))
}
process.stdout.write(out.join('\n') + (out.length ? '\n' : ''))

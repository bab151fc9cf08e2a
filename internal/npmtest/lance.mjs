// Reads a folder of Parquet files as pyarrow does (arrow-rs through
// parquet-wasm: the files' ARROW:schema restores the types Parquet lacks),
// loads them into a LanceDB table in a temporary folder and runs a
// nearest-neighbour search, for package npmtest's Lance. The request is
// JSON on stdin: {"dir", "column", "query" (a vector, or a list of vectors
// for a multi-vector column), "k"}. The answer on stdout: {"schema":
// {column: Arrow type}, "rows", "hits": [{"id", "distance"}]}.
import { createRequire } from 'node:module'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import * as lancedb from '@lancedb/lancedb'

// LanceDB checks tables with instanceof against its own (CommonJS)
// apache-arrow, so the table is built with that copy.
const require = createRequire(import.meta.url)
const { readParquet } = require('parquet-wasm/node')
const { tableFromIPC, Table } = require('apache-arrow')

const chunks = []
for await (const c of process.stdin) chunks.push(c)
const req = JSON.parse(Buffer.concat(chunks).toString('utf8'))

const files = fs.readdirSync(req.dir).filter(f => f.endsWith('.parquet')).sort()
const tables = files.map(f => tableFromIPC(readParquet(new Uint8Array(fs.readFileSync(path.join(req.dir, f)))).intoIPCStream()))
const table = tables.length === 1 ? tables[0] : new Table(tables.flatMap(t => t.batches))
const schema = Object.fromEntries(table.schema.fields.map(f => [f.name, String(f.type)]))

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'vembed-lance-'))
try {
  const db = await lancedb.connect(tmp)
  const tbl = await db.createTable('items', table)
  const rows = await tbl.countRows()
  // vectorSearch takes a list of vectors as one multi-vector query.
  const res = await tbl.vectorSearch(req.query).column(req.column).distanceType('cosine').limit(req.k).toArray()
  const hits = res.map(r => ({ id: r.id, distance: r._distance }))
  process.stdout.write(JSON.stringify({ schema, rows, hits }) + '\n')
} finally {
  fs.rmSync(tmp, { recursive: true, force: true })
}

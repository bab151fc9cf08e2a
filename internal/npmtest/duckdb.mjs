// Runs the SQL read from stdin in an in-memory DuckDB for package
// npmtest's DuckDB and writes the last statement's rows to stdout as one
// JSON array of objects (DuckDB's JSON conversion: BIGINT, DECIMAL and
// temporal values as strings, FLOAT and DOUBLE as numbers).
import { DuckDBInstance } from '@duckdb/node-api'

const chunks = []
for await (const c of process.stdin) chunks.push(c)
const sql = Buffer.concat(chunks).toString('utf8')

// No extension downloads: a test must not reach the network, and Parquet
// and JSON are built into the package's binary.
const instance = await DuckDBInstance.create(':memory:', {
  autoinstall_known_extensions: 'false',
  autoload_known_extensions: 'true'
})
const conn = await instance.connect()
const reader = await conn.runAndReadAll(sql)
process.stdout.write(JSON.stringify(reader.getRowObjectsJson()) + '\n')
conn.closeSync()
instance.closeSync()

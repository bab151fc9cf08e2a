// Serves an in-memory PGlite database with pgvector over the PostgreSQL
// wire protocol on a free loopback port for package npmtest's StartPGlite.
// The first line on stdout is {"address":"host:port"}; the server runs
// until stdin closes (the Go test ends or dies) or SIGTERM.
import { PGlite } from '@electric-sql/pglite'
import { vector } from '@electric-sql/pglite-pgvector'
import { PGLiteSocketServer } from '@electric-sql/pglite-socket'

const db = await PGlite.create({ extensions: { vector } })
// PGlite is a single backend: the server runs the statements of its
// connections one at a time, and a transaction holds it until it ends, so
// clients keep to one connection. A few are accepted so that a client
// reconnecting is not refused while its old socket is being torn down.
const server = new PGLiteSocketServer({ db, port: 0, host: '127.0.0.1', maxConnections: 4 })
await server.start()
process.stdout.write(JSON.stringify({ address: server.getServerConn() }) + '\n')

let stopping = false
async function stop () {
  if (stopping) return
  stopping = true
  await server.stop()
  await db.close()
  process.exit(0)
}
process.stdin.on('end', stop)
process.stdin.on('error', stop)
process.stdin.resume()
process.on('SIGTERM', stop)

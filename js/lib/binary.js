// Finding the vastfake binary, as the Python package's vastfake.broker
// does: VASTFAKE_BIN, the platform package npm installed (@vastfake/linux-x64
// and so on), vastfake on PATH, or one built with `go build` from a vastfake
// checkout and cached on disk.

'use strict'

const { spawn } = require('node:child_process')
const crypto = require('node:crypto')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

const { BinaryNotFoundError } = require('./errors.js')

const MODULE_LINE = 'module github.com/vastfake/vastfake'
const INSTALL_HINT = 'install vastfake with its optional dependencies (npm then installs the @vastfake package that ' +
  'carries the binary for this platform), or build it in a clone of the vastfake repository with ' +
  '`go install ./cmd/vastfake` (then it is $(go env GOPATH)/bin/vastfake; put that on PATH) or ' +
  '`go build -o /some/dir/vastfake ./cmd/vastfake` and set VASTFAKE_BIN to it, or set VASTFAKE_SRC to the clone ' +
  '(with go on PATH) to have it built and cached; `go install github.com/vastfake/vastfake/cmd/vastfake@latest` ' +
  'works once the module is published'
// What to run in a checkout to replace a binary older than this package.
const UPDATE_HINT = 'rebuild it from an up-to-date vastfake clone: go install ./cmd/vastfake (or, once the module ' +
  'is published, go install github.com/vastfake/vastfake/cmd/vastfake@latest)'
// How many built binaries the cache keeps (one per state of a source tree),
// the most recently used first.
const CACHE_KEEP = 5

function checkout (start) {
  for (let dir = path.resolve(start); ; dir = path.dirname(dir)) {
    try {
      const first = fs.readFileSync(path.join(dir, 'go.mod'), 'utf8').split('\n')[0].trim()
      if (first === MODULE_LINE) return dir
    } catch {}
    if (path.dirname(dir) === dir) return null
  }
}

function executable (file) {
  try {
    fs.accessSync(file, fs.constants.X_OK)
    return fs.statSync(file).isFile()
  } catch {
    return false
  }
}

// which finds name on PATH, passing over this package's own command
// (cli.js, which npm links as node_modules/.bin/vastfake): it runs what
// findBinary finds, so finding it would run itself.
function which (name) {
  const exts = process.platform === 'win32' ? ['.exe', ''] : ['']
  const self = path.join(__dirname, '..', 'cli.js')
  for (const dir of (process.env.PATH || '').split(path.delimiter)) {
    if (!dir) continue
    for (const ext of exts) {
      const file = path.join(dir, name + ext)
      if (!executable(file)) continue
      try {
        if (fs.realpathSync(file) === fs.realpathSync(self)) continue
      } catch {}
      return file
    }
  }
  return null
}

const built = new Map() // checkout -> promise of the binary built from it by this process

// The platform packages, one per Node platform and arch, that carry the
// binary; the main package lists them all as optional dependencies and npm
// installs the one whose os and cpu fields match.
const PLATFORM_PACKAGES = ['linux-x64', 'linux-arm64', 'darwin-x64', 'darwin-arm64', 'win32-x64']

/**
 * The binary the package carries in its own bin/ (the offline package of
 * one platform) or the platform package (@vastfake/linux-x64 and so on)
 * carries, or null when none is installed: an unlisted platform, an install
 * without optional dependencies, or a checkout of the sources.
 */
function carriedBinary () {
  const name = `${process.platform}-${process.arch}`
  const exe = process.platform === 'win32' ? '.exe' : ''
  // The offline package (vastdist's npm/offline/) carries it itself.
  const own = path.join(__dirname, '..', 'bin', 'vastfake' + exe)
  if (fs.existsSync(own)) return runnable(own, 'the binary this package carries')
  if (!PLATFORM_PACKAGES.includes(name)) return null
  let file
  try {
    file = require.resolve(`@vastfake/${name}/bin/vastfake${exe}`)
  } catch {
    return null
  }
  return runnable(file, `the binary @vastfake/${name} carries`)
}

// runnable returns file, made executable if it lost its mode.
function runnable (file, what) {
  if (!executable(file)) {
    // npm keeps the tarball's mode 0755; a tool that drops it leaves a file
    // this process may still make executable.
    try {
      fs.chmodSync(file, 0o755)
    } catch {}
    if (!executable(file)) throw new BinaryNotFoundError(`${file} (${what}) is not executable: chmod +x it`)
  }
  return file
}

// run spawns cmd and resolves to {status, signal, stdout, stderr, error}
// when it ends, killing it after timeoutMs: what spawnSync answers,
// without blocking the event loop while cmd runs.
function run (cmd, args, { cwd, timeoutMs } = {}) {
  return new Promise(resolve => {
    const child = spawn(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] })
    const out = []
    const err = []
    let error = null
    child.stdout.on('data', d => out.push(d))
    child.stderr.on('data', d => err.push(d))
    const timer = timeoutMs && setTimeout(() => {
      error = new Error(`it took over ${timeoutMs} ms`)
      child.kill('SIGKILL')
    }, timeoutMs)
    child.once('error', e => { error = error || e })
    child.once('close', (status, signal) => {
      clearTimeout(timer)
      resolve({ status, signal, error, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') })
    })
  })
}

/**
 * The directory built binaries are cached in: VASTFAKE_CACHE_DIR, else
 * vastfake in the user's cache directory (XDG_CACHE_HOME or ~/.cache,
 * ~/Library/Caches on macOS, LOCALAPPDATA on Windows).
 */
function cacheDir () {
  if (process.env.VASTFAKE_CACHE_DIR) return path.resolve(process.env.VASTFAKE_CACHE_DIR)
  let base
  if (process.platform === 'win32') base = process.env.LOCALAPPDATA
  else if (process.platform === 'darwin') base = path.join(os.homedir(), 'Library', 'Caches')
  else base = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache')
  return path.join(base || os.tmpdir(), 'vastfake')
}

// buildFiles lists, sorted, the files of the checkout at root that go build
// ./cmd/vastfake can read: go.mod, go.sum and every file but tests in a
// directory with Go code (embedded files sit next to it), skipping what the
// go command skips (testdata, names starting with . or _) and nested modules.
function buildFiles (root) {
  const files = []
  const walk = rel => {
    let entries
    try {
      entries = fs.readdirSync(path.join(root, rel), { withFileTypes: true })
    } catch {
      return
    }
    const names = entries.filter(e => e.isFile()).map(e => e.name)
    if (rel === '') files.push(...names.filter(n => n === 'go.mod' || n === 'go.sum'))
    if (names.some(n => n.endsWith('.go') && !n.endsWith('_test.go'))) {
      for (const n of names) {
        if (!n.endsWith('_test.go') && !(rel === '' && (n === 'go.mod' || n === 'go.sum'))) files.push(rel ? rel + '/' + n : n)
      }
    }
    for (const e of entries) {
      if (!e.isDirectory() || /^[._]/.test(e.name) || e.name === 'testdata' || e.name === 'node_modules') continue
      const sub = rel ? rel + '/' + e.name : e.name
      if (!fs.existsSync(path.join(root, sub, 'go.mod'))) walk(sub)
    }
  }
  walk('')
  return files.sort()
}

// sourceKey names the binary go would build from the checkout at src: a
// hash of the go version, the environment that changes what it builds, and
// the path, size and contents of every file buildFiles lists. The Python
// package computes the same key, so both share the cache.
async function sourceKey (src, go) {
  const h = crypto.createHash('sha256')
  const v = await run(go, ['version'], { timeoutMs: 60_000 })
  h.update((v.stdout || '').trim() + '\0')
  for (const name of ['GOOS', 'GOARCH', 'GOFLAGS', 'CGO_ENABLED', 'GOEXPERIMENT']) h.update((process.env[name] || '') + '\0')
  for (const rel of buildFiles(src)) {
    const data = await fs.promises.readFile(path.join(src, ...rel.split('/')))
    h.update(`${rel}\0${data.length}\0`)
    h.update(data)
  }
  return h.digest('hex').slice(0, 20)
}

// pruneCache removes all but the CACHE_KEEP most recently used binaries,
// never keep, and the temporary files of builds that died over an hour ago.
function pruneCache (dir, keep) {
  let names
  try {
    names = fs.readdirSync(dir)
  } catch {
    return
  }
  const bins = []
  for (const name of names) {
    try {
      const file = path.join(dir, name)
      const st = fs.statSync(file)
      if (name.startsWith('.vastfake-') && Date.now() - st.mtimeMs > 3600_000) fs.rmSync(file, { force: true })
      else if (name.startsWith('vastfake-') && file !== keep) bins.push({ file, mtime: st.mtimeMs })
    } catch {}
  }
  bins.sort((a, b) => b.mtime - a.mtime)
  for (const { file } of bins.slice(CACHE_KEEP - 1)) {
    try {
      fs.rmSync(file, { force: true })
    } catch {}
  }
}

// buildBinary builds ./cmd/vastfake in src into the cache, or resolves to
// the cached build of the same sources. go runs in a child process (spawn,
// not spawnSync), so timers, servers and other tests go on while it builds. Concurrent builders (node --test runs each file in a
// process of its own) each build to a file of their own and rename it into
// place, so a reader sees no binary or a whole one.
async function buildBinary (src, go, buildTimeoutMs) {
  const exe = process.platform === 'win32' ? '.exe' : ''
  const key = await sourceKey(src, go)
  let dir = cacheDir()
  try {
    fs.mkdirSync(dir, { recursive: true })
  } catch {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vastfake-')) // no cache: a directory for this process
    process.once('exit', () => fs.rmSync(dir, { recursive: true, force: true }))
  }
  const out = path.join(dir, `vastfake-${key}${exe}`)
  if (executable(out)) {
    try {
      const now = new Date()
      fs.utimesSync(out, now, now) // used: the last to go when the cache is pruned
    } catch {}
    return out
  }
  const tmp = path.join(dir, `.vastfake-${key}-${process.pid}-${crypto.randomBytes(4).toString('hex')}${exe}`)
  process.stderr.write(`vastfake: building the broker from ${src} (go build ./cmd/vastfake); it is cached in ${dir} ` +
    'until the sources change\n')
  const done = await run(go, ['build', '-o', tmp, './cmd/vastfake'], { cwd: src, timeoutMs: buildTimeoutMs })
  if (done.error || done.status !== 0) {
    fs.rmSync(tmp, { force: true })
    if (done.error) throw new BinaryNotFoundError(`go build ./cmd/vastfake in ${src}: ${done.error.message}`)
    throw new BinaryNotFoundError(`go build ./cmd/vastfake in ${src} failed:\n${done.stderr.slice(-4000)}`)
  }
  fs.renameSync(tmp, out)
  pruneCache(dir, out)
  return out
}

/**
 * Resolves to the path of a vastfake binary: VASTFAKE_BIN; else the one the
 * installed platform package carries; else vastfake on PATH; else one built
 * with `go build` from VASTFAKE_SRC or from the vastfake checkout the
 * working directory or this package is in, without blocking the event loop.
 * Rejects with BinaryNotFoundError saying how to get one otherwise.
 */
async function findBinary ({ buildTimeoutMs = 300_000 } = {}) {
  const env = process.env.VASTFAKE_BIN
  if (env) {
    if (!executable(env)) throw new BinaryNotFoundError(`VASTFAKE_BIN=${env} is not an executable file; ${INSTALL_HINT}`)
    return env
  }
  const onPath = carriedBinary() || which('vastfake')
  if (onPath) return onPath
  let src
  if (process.env.VASTFAKE_SRC) {
    src = path.resolve(process.env.VASTFAKE_SRC)
    if (checkout(src) !== src) {
      throw new BinaryNotFoundError(`VASTFAKE_SRC=${src} is not a vastfake checkout (no go.mod starting "${MODULE_LINE}")`)
    }
  } else {
    src = checkout(process.cwd()) || checkout(__dirname)
  }
  if (!src) {
    throw new BinaryNotFoundError('no vastfake binary: VASTFAKE_BIN is not set, vastfake is not on PATH, and this ' +
      'is not a vastfake checkout; ' + INSTALL_HINT)
  }
  const go = which('go')
  if (!go) throw new BinaryNotFoundError(`no vastfake binary: ${src} is a vastfake checkout but go is not on PATH to build it; ${INSTALL_HINT}`)
  // One build per checkout however many brokers start at once; a failed
  // one is tried again by the next call.
  if (!built.has(src)) built.set(src, buildBinary(src, go, buildTimeoutMs).catch(e => { built.delete(src); throw e }))
  const out = await built.get(src)
  if (executable(out)) return out
  built.delete(src) // removed from the cache since: build it again
  return findBinary({ buildTimeoutMs })
}

module.exports = { findBinary, carriedBinary, PLATFORM_PACKAGES, INSTALL_HINT, UPDATE_HINT }

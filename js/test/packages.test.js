// The npm packages that carry the binary (go run ./cmd/vastdist): the
// offline package of this platform, installed from its tarball into a
// project of its own and again by npm ci from the lock file, offline,
// starts a broker with no Go on PATH and kafkajs produces and consumes
// through it; the registry's pair (the main package and the platform
// package) finds the platform package's binary; and the fallback that
// builds from source leaves the event loop running.
//
// The packages are VASTFAKE_DIST's (the -o directory of vastdist, as
// test.sh gives it), else built here for this platform.
'use strict'

const test = require('node:test')
const assert = require('node:assert')
const { spawn } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

const jsDir = path.join(__dirname, '..')
const root = path.join(jsDir, '..')
const exe = process.platform === 'win32' ? '.exe' : ''

// run resolves to {status, stdout, stderr} of cmd, which must end within
// timeoutMs.
function run (cmd, args, { cwd, env, timeoutMs = 300_000 } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', d => { stdout += d })
    child.stderr.on('data', d => { stderr += d })
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
    child.once('error', e => { clearTimeout(timer); reject(e) })
    child.once('close', (status, signal) => { clearTimeout(timer); resolve({ status, signal, stdout, stderr }) })
  })
}

function tmpdir (t) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vastfake-pkg-'))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  return dir
}

function onPath (name) {
  const dir = (process.env.PATH || '').split(path.delimiter).find(d => d && fs.existsSync(path.join(d, name + exe)))
  return dir ? path.join(dir, name + exe) : null
}

// pathWithout is PATH less every directory holding one of names.
function pathWithout (...names) {
  return (process.env.PATH || '').split(path.delimiter)
    .filter(d => d && !names.some(n => fs.existsSync(path.join(d, n + exe))))
    .join(path.delimiter)
}

// A child environment with none of the launcher's variables.
function cleanEnv (extra) {
  const env = { ...process.env, ...extra }
  for (const k of ['VASTFAKE_BIN', 'VASTFAKE_SRC', 'VASTFAKE_ARGS']) delete env[k]
  return env
}

async function dist (t) {
  if (process.env.VASTFAKE_DIST) return process.env.VASTFAKE_DIST
  if (!onPath('go')) return null
  const out = tmpdir(t)
  const built = await run('go', ['run', './cmd/vastdist', '-o', out, '-platforms', 'host'], { cwd: root })
  assert.strictEqual(built.status, 0, built.stderr)
  return out
}

// newProject makes an empty project of the user's in work.
function newProject (work, name) {
  const project = path.join(work, name)
  fs.mkdirSync(project)
  fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'uses-vastfake', private: true }))
  return project
}

// useBroker runs, in project, the user's test: no Go on PATH, outside any
// checkout, an empty build cache; kafkajs from js/'s devDependencies. A
// vastfake on PATH comes after the carried binary, which matches the
// package. It resolves to the binary found and the records read back.
async function useBroker (work, project) {
  const cache = path.join(work, 'cache-' + path.basename(project))
  const other = path.join(work, 'other')
  fs.mkdirSync(other, { recursive: true })
  fs.writeFileSync(path.join(other, 'vastfake'), '#!/bin/sh\necho "not the carried binary" >&2\nexit 1\n', { mode: 0o755 })
  const script = `
    const { Kafka, logLevel } = require(${JSON.stringify(path.join(jsDir, 'node_modules', 'kafkajs'))})
    const vastfake = require('vastfake')
    ;(async () => {
      const found = await vastfake.findBinary()
      const broker = await vastfake.startBroker({ topics: ['orders:1'] })
      try {
        const kafka = new Kafka({ clientId: 'packages-test', brokers: [broker.bootstrap], logLevel: logLevel.NOTHING })
        const producer = kafka.producer()
        await producer.connect()
        await producer.send({ topic: 'orders', messages: [{ value: 'a' }, { value: 'b' }, { value: 'c' }] })
        await producer.disconnect()
        const consumer = kafka.consumer({ groupId: 'billing' })
        await consumer.connect()
        await consumer.subscribe({ topics: ['orders'], fromBeginning: true })
        const got = []
        let done
        const all = new Promise(resolve => { done = resolve })
        await consumer.run({ eachMessage: async ({ message }) => { got.push(message.value.toString()); if (got.length === 3) done() } })
        await all
        await broker.waitCommitted('billing', 'orders', 0, 3)
        await consumer.disconnect()
        console.log(JSON.stringify({ found, got }))
      } finally {
        await broker.stop()
      }
    })().catch(e => { console.error(e); process.exit(1) })
  `
  const used = await run(process.execPath, ['-e', script], {
    cwd: project,
    env: cleanEnv({ PATH: [other, pathWithout('go', 'vastfake')].join(path.delimiter), VASTFAKE_CACHE_DIR: cache })
  })
  assert.strictEqual(used.status, 0, used.stderr)
  assert.doesNotMatch(used.stderr, /building/)
  assert.ok(!fs.existsSync(cache), 'nothing was built into the cache')
  return JSON.parse(used.stdout.trim().split('\n').pop())
}

function version (d) {
  const tgz = fs.readdirSync(path.join(d, 'npm')).find(f => /^vastfake-\d.*\.tgz$/.test(f))
  assert.ok(tgz, `${d}/npm holds the main package's tarball`)
  return tgz.slice('vastfake-'.length, -'.tgz'.length)
}

test('the offline package installs from its tarball, survives npm ci offline, and starts a broker with no Go on PATH', { timeout: 600_000 }, async (t) => {
  const npm = onPath('npm')
  if (!npm) return t.skip('needs npm on PATH')
  const d = await dist(t)
  if (!d) return t.skip('needs VASTFAKE_DIST or go on PATH')
  const v = version(d)
  const work = tmpdir(t)
  const project = newProject(work, 'offline')
  // As docs/packages.md says: the tarball beside the project's package.json.
  const tgz = `vastfake-${v}-${process.platform}-${process.arch}.tgz`
  fs.copyFileSync(path.join(d, 'npm', 'offline', tgz), path.join(project, tgz))
  const installed = await run(npm, ['install', '--offline', '--no-audit', '--no-fund', './' + tgz], { cwd: project, env: cleanEnv() })
  assert.strictEqual(installed.status, 0, installed.stderr)
  // What CI does with the lock file: a clean install from it, offline.
  assert.ok(fs.existsSync(path.join(project, 'package-lock.json')))
  fs.rmSync(path.join(project, 'node_modules'), { recursive: true, force: true })
  const ci = await run(npm, ['ci', '--offline', '--no-audit', '--no-fund'], { cwd: project, env: cleanEnv() })
  assert.strictEqual(ci.status, 0, ci.stderr)

  const { found, got } = await useBroker(work, project)
  assert.strictEqual(fs.realpathSync(found), fs.realpathSync(path.join(project, 'node_modules', 'vastfake', 'bin', 'vastfake' + exe)))
  assert.deepStrictEqual(got, ['a', 'b', 'c'])

  // npx vastfake runs the carried binary, for development.
  const out = await run(path.join(project, 'node_modules', '.bin', 'vastfake' + (process.platform === 'win32' ? '.cmd' : '')), ['-version'], {
    cwd: project,
    env: cleanEnv({ PATH: [path.dirname(process.execPath), pathWithout('go', 'vastfake')].join(path.delimiter) })
  })
  assert.strictEqual(out.status, 0, out.stderr)
  assert.ok(out.stdout.startsWith(`vastfake ${v} `), out.stdout)
})

test('the registry packages, the main one with its platform one, find the binary the platform package carries', { timeout: 600_000 }, async (t) => {
  const npm = onPath('npm')
  if (!npm) return t.skip('needs npm on PATH')
  const d = await dist(t)
  if (!d) return t.skip('needs VASTFAKE_DIST or go on PATH')
  const v = version(d)
  const platformTgz = path.join(d, 'npm', `vastfake-${process.platform}-${process.arch}-${v}.tgz`)
  assert.ok(fs.existsSync(platformTgz), `${d}/npm holds ${fs.readdirSync(path.join(d, 'npm')).join(', ')}`)
  const work = tmpdir(t)
  const project = newProject(work, 'registry')
  // What npm install vastfake does from the registry, with the tarballs the
  // registry would serve.
  const installed = await run(npm, ['install', '--offline', '--no-audit', '--no-fund', path.join(d, 'npm', `vastfake-${v}.tgz`), platformTgz], { cwd: project, env: cleanEnv() })
  assert.strictEqual(installed.status, 0, installed.stderr)
  const found = await run(process.execPath, ['-e', "require('vastfake').findBinary().then(console.log)"], {
    cwd: project, env: cleanEnv({ PATH: pathWithout('go', 'vastfake') })
  })
  assert.strictEqual(found.status, 0, found.stderr)
  assert.strictEqual(fs.realpathSync(found.stdout.trim()), fs.realpathSync(path.join(project, 'node_modules', '@vastfake', `${process.platform}-${process.arch}`, 'bin', 'vastfake' + exe)))
  const main = JSON.parse(fs.readFileSync(path.join(project, 'node_modules', 'vastfake', 'package.json'), 'utf8'))
  assert.ok(main.optionalDependencies[`@vastfake/${process.platform}-${process.arch}`], 'the main package lists its platform packages')
})

test('the vastfake command on PATH is not taken for the binary it runs', { skip: process.platform === 'win32' && 'a symlink stands in for npm\'s shim' }, async (t) => {
  // npm links node_modules/.bin/vastfake to cli.js, which runs what
  // findBinary finds: finding the link would run itself.
  const dir = tmpdir(t)
  const bin = path.join(dir, 'bin')
  fs.mkdirSync(bin)
  fs.symlinkSync(path.join(jsDir, 'cli.js'), path.join(bin, 'vastfake'))
  const script = `require(${JSON.stringify(jsDir)}).findBinary().then(b => { console.log(b); process.exit(3) }, e => { console.log(e.name); process.exit(0) })`
  const res = await run(process.execPath, ['-e', script], {
    cwd: dir,
    env: cleanEnv({ PATH: [bin, pathWithout('go', 'vastfake')].join(path.delimiter), VASTFAKE_CACHE_DIR: path.join(dir, 'cache') })
  })
  assert.strictEqual(res.status, 0, `findBinary found ${res.stdout}`)
  assert.strictEqual(res.stdout.trim(), 'BinaryNotFoundError')
})

test('building from source does not block the event loop and says so', { skip: process.platform === 'win32' && 'a shell script stands in for go' }, async (t) => {
  // A go that, once building, waits for the test's interval to see it
  // building and answer: if the build blocked the event loop (spawnSync),
  // no interval could run and this go would give up after 30 s.
  const dir = tmpdir(t)
  const started = path.join(dir, 'started')
  const release = path.join(dir, 'release')
  const fake = path.join(dir, 'bin')
  fs.mkdirSync(fake)
  fs.writeFileSync(path.join(fake, 'go'), `#!/bin/sh
case "$1" in
version) echo "go version go0-fake ${process.platform}/${process.arch}" ;;
build)
  : > '${started}'
  i=0
  while [ ! -e '${release}' ]; do
    i=$((i + 1)); [ $i -gt 300 ] && { echo "the event loop did not run while go built" >&2; exit 3; }
    sleep 0.1
  done
  printf '#!/bin/sh\\necho fake vastfake\\n' > "$3" && chmod +x "$3" ;;
*) exit 2 ;;
esac
`, { mode: 0o755 })
  const script = `
    const fs = require('fs')
    const vastfake = require(${JSON.stringify(jsDir)})
    let ticks = 0
    const ticker = setInterval(() => {
      if (!fs.existsSync(${JSON.stringify(started)})) return
      ticks++
      fs.writeFileSync(${JSON.stringify(release)}, '')
    }, 5)
    vastfake.findBinary().then(b => {
      clearInterval(ticker)
      console.log(JSON.stringify({ b, ticks }))
    }, e => { console.error(e); process.exit(1) })
  `
  const cache = path.join(dir, 'cache')
  const res = await run(process.execPath, ['-e', script], {
    cwd: dir,
    env: cleanEnv({ PATH: [fake, pathWithout('go', 'vastfake')].join(path.delimiter), VASTFAKE_SRC: root, VASTFAKE_CACHE_DIR: cache })
  })
  assert.strictEqual(res.status, 0, res.stderr)
  assert.match(res.stderr, /^vastfake: building the broker from .* \(go build \.\/cmd\/vastfake\); it is cached in /)
  const { b, ticks } = JSON.parse(res.stdout)
  assert.strictEqual(path.dirname(b), cache)
  assert.ok(ticks > 0, 'the interval ran while go built')
})

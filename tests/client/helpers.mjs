// Shared by the client tests, which run from a scratch project where tests/client/run.sh
// installed the packed tarball: EDGEBUCKET_REPO is the repository, for the client's internal
// modules (tested on their own with the package's real Bucket injected).
import path from 'node:path';
import { pathToFileURL } from 'node:url';

export const repo = process.env.EDGEBUCKET_REPO;
if (!repo) throw new Error('EDGEBUCKET_REPO must name the repository (see tests/client/run.sh)');

/** A module of js/client/ in the repository. */
export function source(file) {
  return import(pathToFileURL(path.join(repo, 'js/client', file)).href);
}

/** A root devDependency of the repository (ky, axios, playwright-core), as an ES module. */
export async function devImport(name) {
  const { createRequire } = await import('node:module');
  const require = createRequire(path.join(repo, 'package.json'));
  return import(pathToFileURL(require.resolve(name)).href);
}

/**
 * Takes the lead of the shared pacers named `name` (Node 24: Web Locks), as a leading tab would,
 * once the lock is held; returns the function that steps down.
 */
export function holdLeaderLock(name) {
  return new Promise((held) => {
    navigator.locks.request(`edgebucket:${name}:leader`, () => new Promise((stepDown) => held(stepDown)));
  });
}

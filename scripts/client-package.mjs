// Builds `edgebucket/client` into pkg/dist (called by scripts/npm-package.mjs before it packs).
//
// js/client/ is bundled by esbuild into one file per runtime, with structured-headers inside it:
// a page that imports the client without a bundler cannot resolve bare specifiers, so the
// package ships no runtime dependency. The one import left is the package's own entry beside it
// (js/client/engine.js), so the client and the main export share one wasm instance:
//
//   client.js          ESM, ./entry-inline.js   (Node, browsers, bundlers)
//   client-workerd.js  ESM, ./entry-workerd.js  (Cloudflare Workers: no wasm compiled from bytes)
//   client.cjs         CommonJS, ./edgebucket.cjs
import fs from 'node:fs';
import path from 'node:path';
import * as esbuild from 'esbuild';

/** esbuild plugin: the engine's `../entry-inline.js` becomes `entry`, left external. */
function packageEntry(entry) {
  return {
    name: 'edgebucket-entry',
    setup(build) {
      build.onResolve({ filter: /^\.\.\/entry-inline\.js$/ }, (args) =>
        path.basename(args.importer) === 'engine.js' ? { path: entry, external: true } : undefined,
      );
    },
  };
}

/**
 * @param {string} root the repository
 * @param {string} dist pkg/dist
 */
export async function buildClient(root, dist) {
  const entryPoint = path.join(root, 'js/client/index.js');
  // The bundled parser's MIT license travels with it.
  const license = fs.readFileSync(path.join(root, 'node_modules/structured-headers/LICENSE'), 'utf8');
  const banner = `/*! edgebucket/client bundles structured-headers (https://github.com/evert/structured-header):\n${license.trim()}\n*/`;
  const builds = [
    { outfile: 'client.js', format: 'esm', entry: './entry-inline.js' },
    { outfile: 'client-workerd.js', format: 'esm', entry: './entry-workerd.js' },
    { outfile: 'client.cjs', format: 'cjs', entry: './edgebucket.cjs' },
  ];
  for (const { outfile, format, entry } of builds) {
    await esbuild.build({
      entryPoints: [entryPoint],
      outfile: path.join(dist, outfile),
      bundle: true,
      format,
      platform: 'neutral',
      target: 'es2022',
      logLevel: 'error',
      legalComments: 'inline',
      banner: { js: banner },
      plugins: [packageEntry(entry)],
    });
  }
  fs.copyFileSync(path.join(root, 'js/client/index.d.ts'), path.join(dist, 'client.d.ts'));
  fs.copyFileSync(path.join(root, 'js/client/index.d.ts'), path.join(dist, 'client.d.cts'));
}

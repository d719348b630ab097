// Rewrites a copy of package.json so every @jupyterlab/* package the extension reaches, direct
// or transitive, comes from one end of the range the extension declares: the lowest versions
// (each declared range's floor, and the floors of what those ask for), or the newest published
// JupyterLab 4.x, pre-releases included. Used by scripts/lab-matrix.sh, which then builds and
// unit-tests the extension there.
//
// Usage: node scripts/lab-matrix.mjs <package.json to rewrite> <lowest|newest>
//
// npm `overrides` pin the transitive packages: without them a package of the lowest release
// would pull in its dependencies' newest 4.x versions, and the lowest would test the newest.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const semver = createRequire(import.meta.url)('semver');

const [file, which] = process.argv.slice(2);
if (!file || !['lowest', 'newest'].includes(which)) {
  console.error(
    'usage: node scripts/lab-matrix.mjs <package.json> <lowest|newest>'
  );
  process.exit(2);
}

const pkg = JSON.parse(readFileSync(file, 'utf8'));
const LAB = '@jupyterlab/';

function npmView(spec, field) {
  const out = execFileSync('npm', ['view', spec, field, '--json'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit']
  });
  return out.trim() ? JSON.parse(out) : undefined;
}

const published = new Map();
function versions(name) {
  if (!published.has(name)) {
    const list = npmView(name, 'versions');
    published.set(name, Array.isArray(list) ? list : [list]);
  }
  return published.get(name);
}

/** The version of `name` this end of the matrix takes within `range`. */
function pick(name, range) {
  const options = { includePrerelease: which === 'newest' };
  const found =
    which === 'lowest'
      ? semver.minSatisfying(versions(name), range, options)
      : semver.maxSatisfying(versions(name), range, options);
  if (!found) {
    throw new Error(`${name}: no published version in ${range}`);
  }
  return found;
}

/** A declared range widened to its whole major, pre-releases included (for newest). */
function wholeMajor(range) {
  return `>=${semver.minVersion(range).major}.0.0-0 <${semver.minVersion(range).major + 1}.0.0-0`;
}

const declared = { ...pkg.dependencies, ...pkg.devDependencies };
const pins = {};
// The shared document model comes with the lab's release (the tests build its notebooks): the
// version the lab's packages ask for wins over the one the extension declares for its tests.
const FOLLOWED = name => name.startsWith(LAB) || name === '@jupyter/ydoc';
const queue = Object.entries(declared)
  .filter(([name]) => name.startsWith(LAB))
  .map(([name, range]) => [
    name,
    which === 'newest' ? wholeMajor(range) : range
  ]);
while (queue.length) {
  const [name, range] = queue.shift();
  if (pins[name]) {
    continue;
  }
  const version = pick(name, range);
  pins[name] = version;
  const deps = npmView(`${name}@${version}`, 'dependencies') ?? {};
  for (const [dep, depRange] of Object.entries(deps)) {
    if (FOLLOWED(dep) && !pins[dep]) {
      queue.push([dep, which === 'newest' ? wholeMajor(depRange) : depRange]);
    }
  }
}

for (const section of ['dependencies', 'devDependencies']) {
  for (const name of Object.keys(pkg[section] ?? {})) {
    if (pins[name]) {
      pkg[section][name] = pins[name];
    }
  }
}
pkg.overrides = { ...pkg.overrides, ...pins };
writeFileSync(file, JSON.stringify(pkg, null, 2) + '\n');
console.log(
  `JupyterLab ${which}: application ${pins['@jupyterlab/application']}, ` +
    `${Object.keys(pins).length} packages pinned (@jupyter/ydoc ${pins['@jupyter/ydoc']})`
);

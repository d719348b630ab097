/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

/**
 * Generate the TypeScript types of the server's event payloads from
 * jupyter_xcsh/events/schemas/*.yaml (the schemas the server validates its
 * emissions against), as `npm run build:api` generates the REST types from
 * rest-api.yml: `npm run build:events` writes labextension/src/events.generated.ts.
 */

import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import yaml from 'js-yaml';
import { compile } from 'json-schema-to-typescript';

const SCHEMAS = 'jupyter_xcsh/events/schemas';
const OUTPUT = 'labextension/src/events.generated.ts';

/**
 * An object schema without properties (a cell as nbformat JSON, a display) is a
 * record of unknown values; one with properties has only those.
 */
function closeObjects(schema) {
  if (Array.isArray(schema)) {
    return schema.map(closeObjects);
  }
  if (typeof schema !== 'object' || schema === null) {
    return schema;
  }
  const copy = Object.fromEntries(
    Object.entries(schema).map(([key, value]) => [key, closeObjects(value)])
  );
  const types = [].concat(copy.type ?? []);
  if (types.includes('object') && copy.additionalProperties === undefined) {
    copy.additionalProperties = copy.properties === undefined;
  }
  return copy;
}

/** `notebook.v1.yaml` → [`NotebookEventV1`, `NOTEBOOK_EVENT_V1_ID`]. */
function names(file) {
  const [kind, version] = file.split('.');
  return [
    `${kind[0].toUpperCase()}${kind.slice(1)}Event${version.toUpperCase()}`,
    `${kind.toUpperCase()}_EVENT_${version.toUpperCase()}_ID`
  ];
}

const parts = [
  '/**\n' +
    " * The payloads of the server's events, generated from jupyter_xcsh/events/schemas/*.yaml\n" +
    ' * by scripts/build-event-types.mjs. Do not edit: change the schema and rebuild.\n' +
    ' */\n'
];
for (const file of readdirSync(SCHEMAS)
  .filter(f => f.endsWith('.yaml'))
  .sort()) {
  const schema = closeObjects(
    yaml.load(readFileSync(join(SCHEMAS, file), 'utf8'))
  );
  const [name, idName] = names(file);
  // The title would name the type; the schema id says which events it is.
  const { title, ...rest } = schema;
  const code = await compile(
    {
      ...rest,
      title: name,
      description: `${title} (${schema.$id}).\n\n${schema.description ?? ''}`
    },
    name,
    {
      bannerComment: '',
      unknownAny: true,
      format: true,
      declareExternallyReferenced: true
    }
  );
  parts.push(
    `/** The schema id of {@link ${name}}. */\n` +
      `export const ${idName} = ${JSON.stringify(schema.$id)};\n\n` +
      code
  );
}
writeFileSync(OUTPUT, parts.join('\n'));
console.log(`${SCHEMAS}/*.yaml → ${OUTPUT}`);

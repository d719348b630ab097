// The stock Jupyter Server kernel websocket, driven by JupyterLab's own client
// (@jupyterlab/services' KernelConnection, over the `ws` package as in Node).
//
// Usage: node bench/websocket_client.js <base url> <token> <kernel id>
// Reads one command per line on stdin: `run <rounds> <code>` runs <code> <rounds> times, each
// to its end (the reply and the idle status, as the lab waits for them: `future.done`) and
// answers one line of JSON: the milliseconds of each round. `quit` ends.
'use strict';

const readline = require('readline');
const { ServerConnection, KernelConnection } = require('@jupyterlab/services');

// The client logs its connection attempts with console.log; stdout carries only the answers.
console.log = console.debug = (...args) => console.error(...args);

async function main() {
  const [baseUrl, token, kernelId] = process.argv.slice(2);
  const serverSettings = ServerConnection.makeSettings({
    baseUrl,
    wsUrl: baseUrl.replace(/^http/, 'ws'),
    token,
    appendToken: true
  });
  const kernel = new KernelConnection({
    model: { id: kernelId, name: 'python3' },
    serverSettings,
    handleComms: false
  });
  await kernel.info; // connected and answering
  const lines = readline.createInterface({ input: process.stdin });
  for await (const line of lines) {
    const [command, rounds, ...rest] = line.split(' ');
    if (command === 'quit') {
      break;
    }
    const code = rest.join(' ');
    const times = [];
    for (let i = 0; i < Number(rounds); i++) {
      const start = process.hrtime.bigint();
      await kernel.requestExecute({ code }).done;
      times.push(Number(process.hrtime.bigint() - start) / 1e6);
    }
    process.stdout.write(JSON.stringify(times) + '\n');
  }
  kernel.dispose();
  process.exit(0);
}

main().catch(error => {
  process.stderr.write(String(error && error.stack ? error.stack : error) + '\n');
  process.exit(1);
});

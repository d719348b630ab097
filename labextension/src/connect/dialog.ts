/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

/**
 * The "Connect an agent" dialog: each agent's configuration for this server, as
 * `jupyter xcsh mcp-config` prints it (`GET /api/xcsh/mcp-config`: one source of truth), the
 * token hidden until asked, a copy button per configuration, and a test of the connection.
 */

import { Clipboard, Dialog, showDialog } from '@jupyterlab/apputils';
import { ServerConnection } from '@jupyterlab/services';
import type { TranslationBundle } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';

import { mcpConfig, type IMcpConfig } from '../client';
import { h } from '../core/dom';
import type { ActivityModel } from '../core/activity';
import { xcshUrl } from '../request';
import {
  describeHandshake,
  describeLastCall,
  lastAgentCall,
  mcpResult,
  type IHandshake
} from './model';

/** The MCP protocol version the test handshake asks for. */
const PROTOCOL_VERSION = '2025-06-18';

/**
 * Send one JSON-RPC request to the server's MCP endpoint with the page's own credentials.
 */
async function mcpRequest(
  settings: ServerConnection.ISettings,
  id: number,
  method: string,
  params: Record<string, unknown>
): Promise<Record<string, unknown>> {
  const response = await ServerConnection.makeRequest(
    xcshUrl(settings, 'mcp'),
    {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        Accept: 'application/json',
        'MCP-Protocol-Version': PROTOCOL_VERSION
      },
      body: JSON.stringify({ jsonrpc: '2.0', id, method, params })
    },
    settings
  );
  const text = await response.text();
  if (!response.ok) {
    throw new Error(`${response.status} ${text.slice(0, 200)}`);
  }
  return mcpResult(text);
}

/**
 * `initialize` then `tools/list` on the MCP endpoint: what an agent's first requests are.
 */
export async function testHandshake(
  settings: ServerConnection.ISettings
): Promise<IHandshake> {
  const hello = await mcpRequest(settings, 1, 'initialize', {
    protocolVersion: PROTOCOL_VERSION,
    capabilities: {},
    clientInfo: { name: 'jupyter-xcsh connect dialog', version: '1' }
  });
  const info = (hello.serverInfo ?? {}) as { name?: string; version?: string };
  const listed = await mcpRequest(settings, 2, 'tools/list', {});
  const tools = ((listed.tools ?? []) as { name: string }[]).map(t => t.name);
  return {
    serverName: info.name ?? '',
    serverVersion: info.version ?? '',
    tools
  };
}

/**
 * The body of the dialog.
 */
export class ConnectBody extends Widget {
  constructor(
    private readonly settings: ServerConnection.ISettings,
    private readonly activity: ActivityModel | null,
    private readonly trans: TranslationBundle
  ) {
    super();
    this.addClass('jp-xcsh-Connect');
    this._url = h('code', { class: 'jp-xcsh-Connect-url' });
    this._tokenButton = h(
      'button',
      { class: 'jp-mod-styled jp-xcsh-Connect-token', type: 'button' },
      trans.__('Show token')
    );
    this._tokenButton.addEventListener('click', () => {
      void this.load(!this._shown);
    });
    this._note = h('p', { class: 'jp-xcsh-Connect-note' });
    this._clients = h('div', { class: 'jp-xcsh-Connect-clients' });
    this._testButton = h(
      'button',
      {
        class: 'jp-mod-styled jp-mod-accept jp-xcsh-Connect-test',
        type: 'button'
      },
      trans.__('Test the connection')
    );
    this._testButton.addEventListener('click', () => void this.test());
    this._testResult = h('div', {
      class: 'jp-xcsh-Connect-result',
      role: 'status'
    });
    this.node.append(
      h(
        'p',
        {},
        trans.__(
          'Give your agent this server as an MCP server: copy its configuration to where it says. The agent then works in this lab: its edits appear in the open notebooks, its calls in the Agent activity panel.'
        )
      ),
      h(
        'p',
        { class: 'jp-xcsh-Connect-endpoint' },
        trans.__('MCP endpoint: '),
        this._url,
        ' ',
        this._tokenButton
      ),
      this._note,
      this._clients,
      h('div', { class: 'jp-xcsh-Connect-testRow' }, this._testButton),
      this._testResult
    );
  }

  /**
   * Fetch the configurations (with the token when `showToken`) and show them.
   */
  async load(showToken: boolean): Promise<void> {
    const trans = this.trans;
    let config: IMcpConfig;
    try {
      config = await mcpConfig(showToken, this.settings);
    } catch (error) {
      this._note.textContent = trans.__(
        'The configurations could not be read: %1',
        (error as Error).message
      );
      return;
    }
    this._config = config;
    this._shown = showToken && config.tokenShown;
    this._url.textContent = config.url;
    this._tokenButton.hidden = config.hub;
    this._tokenButton.textContent = this._shown
      ? trans.__('Hide token')
      : trans.__('Show token');
    this._note.textContent = config.hub
      ? trans.__(
          'Behind JupyterHub an agent needs a token of its own: each configuration says how to get one.'
        )
      : config.tokenShown
        ? trans.__(
            'The token gives full access to this server: keep it private.'
          )
        : trans.__(
            'The token is hidden: Copy puts the configuration with the token on the clipboard.'
          );
    // One tab per agent (Claude Code has two ways: its command and its .mcp.json).
    const titles = [...new Set(config.clients.map(c => c.title))];
    if (!titles.includes(this._selected)) {
      this._selected = titles[0] ?? '';
    }
    const tabs = h('div', { class: 'jp-xcsh-Connect-tabs', role: 'tablist' });
    const panes = titles.map(title => {
      const tab = h(
        'button',
        {
          class: 'jp-mod-styled jp-xcsh-Connect-tab',
          type: 'button',
          role: 'tab',
          'aria-selected': String(title === this._selected)
        },
        title
      );
      tab.addEventListener('click', () => {
        this._selected = title;
        for (const other of tabs.children) {
          other.setAttribute('aria-selected', String(other === tab));
        }
        for (const pane of panes) {
          pane.hidden = pane.dataset.title !== title;
        }
      });
      tabs.append(tab);
      const pane = h('div', {
        class: 'jp-xcsh-Connect-pane',
        role: 'tabpanel'
      });
      pane.dataset.title = title;
      pane.hidden = title !== this._selected;
      for (const client of config.clients.filter(c => c.title === title)) {
        const copy = h(
          'button',
          {
            class: 'jp-mod-styled jp-xcsh-Connect-copy',
            type: 'button',
            'data-client': client.client
          },
          trans.__('Copy')
        );
        copy.addEventListener(
          'click',
          () => void this.copy(client.client, copy)
        );
        pane.append(
          h(
            'section',
            { class: 'jp-xcsh-Connect-client', 'data-client': client.client },
            h(
              'div',
              { class: 'jp-xcsh-Connect-clientHead' },
              h('span', { class: 'jp-xcsh-Connect-where' }, client.where),
              copy
            ),
            h('pre', { class: 'jp-xcsh-Connect-text' }, client.text)
          )
        );
      }
      return pane;
    });
    this._clients.replaceChildren(tabs, ...panes);
  }

  /**
   * Copy one client's configuration, with the token (read again when hidden on screen).
   */
  async copy(client: string, button: HTMLButtonElement): Promise<void> {
    const trans = this.trans;
    let config = this._config;
    if (config !== null && !config.tokenShown) {
      try {
        config = await mcpConfig(true, this.settings);
      } catch {
        // Not allowed to see the token: the configuration as shown.
      }
    }
    const text = config?.clients.find(c => c.client === client)?.text ?? '';
    Clipboard.copyToSystem(text);
    button.textContent = trans.__('Copied');
    window.setTimeout(() => {
      button.textContent = trans.__('Copy');
    }, 2000);
  }

  /**
   * Make an agent's first requests from here, and say which agent called last.
   */
  async test(): Promise<void> {
    const trans = this.trans;
    this._testResult.replaceChildren(trans.__('Testing…'));
    const lines: HTMLElement[] = [];
    try {
      const handshake = await testHandshake(this.settings);
      lines.push(
        h(
          'p',
          { class: 'jp-xcsh-Connect-ok' },
          describeHandshake(handshake, trans)
        )
      );
    } catch (error) {
      lines.push(
        h(
          'p',
          { class: 'jp-xcsh-Connect-failed' },
          trans.__(
            'The MCP endpoint did not answer: %1',
            (error as Error).message
          )
        )
      );
    }
    const last = lastAgentCall(this.activity?.calls ?? []);
    lines.push(
      h(
        'p',
        { class: 'jp-xcsh-Connect-last' },
        describeLastCall(last, Date.now(), trans)
      )
    );
    this._testResult.replaceChildren(...lines);
    this._testResult.scrollIntoView({ block: 'nearest' });
  }

  private _config: IMcpConfig | null = null;
  private _shown = false;
  private _selected = '';
  private _url: HTMLElement;
  private _tokenButton: HTMLButtonElement;
  private _note: HTMLElement;
  private _clients: HTMLElement;
  private _testButton: HTMLButtonElement;
  private _testResult: HTMLElement;
}

/**
 * Open the dialog.
 */
export async function showConnectDialog(
  settings: ServerConnection.ISettings,
  activity: ActivityModel | null,
  trans: TranslationBundle
): Promise<void> {
  const body = new ConnectBody(settings, activity, trans);
  void body.load(false);
  await showDialog({
    title: trans.__('Connect an agent'),
    body,
    buttons: [Dialog.okButton({ label: trans.__('Close') })]
  });
}

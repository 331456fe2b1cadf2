// The extension bridge side: a WebSocket client of the hub a CLI embeds.
// It dials ws://127.0.0.1:<port>/ws, says browser_hello with the token,
// runs every browser_command on the tab it controls and answers exactly one
// browser_result per id, answers approval requests as configured, sends a
// JSON ping every 20 s, and reconnects with backoff (1 s doubling to 30 s).
// Unknown, non-JSON and non-object frames are ignored.
import { extensionVersion, loadConfig } from './config.js';
import { activeTab, capture, navigate, runInPage, withTimeout } from './browser.js';

const DEFAULT_TIMEOUT_MS = 30000;
// How many answered command ids are remembered, so that a command sent
// again after its result gets no second one.
const ANSWERED_MAX = 1024;

export class HubSide {
  constructor({ log }) {
    this.log = log;
    this.ws = null;
    this.timer = null;
    this.connecting = false;
    this.backoff = 0; // next reconnect delay; 0 until the first failure
    this.ping = null;
    this.inflight = new Set(); // command ids being run
    this.answered = new WeakMap(); // WebSocket -> the last ANSWERED_MAX ids answered on it, oldest first
    this.controlledTabId = null;
  }

  async ensure() {
    if (this.ws || this.timer || this.connecting) return;
    this.connecting = true;
    try {
      const cfg = await loadConfig();
      if (!cfg.hub) return;
      this.connect(cfg);
    } finally {
      this.connecting = false;
    }
  }

  connect(cfg) {
    const hub = cfg.hub;
    let ws;
    try {
      ws = new WebSocket(hub.url);
    } catch (e) {
      this.log('hub: dial failed', e.message);
      this.schedule(hub);
      return;
    }
    this.ws = ws;
    this.answered.set(ws, new Set());
    ws.onopen = () => {
      this.send(ws, { type: 'browser_hello', token: hub.token, extension_version: extensionVersion() });
      this.ping = setInterval(() => this.send(ws, { type: 'ping' }), hub.pingMs);
      this.log('hub: hello sent');
    };
    ws.onmessage = (ev) => this.onFrame(ws, cfg, ev.data);
    ws.onerror = () => {}; // a close event follows
    ws.onclose = (ev) => {
      this.log('hub: closed', ev.code, ev.reason);
      clearInterval(this.ping);
      this.ping = null;
      if (this.ws === ws) this.ws = null;
      this.schedule(hub);
    };
  }

  // schedule reconnects after the current backoff, then doubles it up to
  // the maximum. A successful hello resets it.
  schedule(hub) {
    if (this.timer) return;
    this.backoff = this.backoff ? Math.min(this.backoff * 2, hub.backoffMaxMs) : hub.backoffMinMs;
    this.log('hub: reconnecting in', this.backoff, 'ms');
    this.timer = setTimeout(() => {
      this.timer = null;
      this.ensure();
    }, this.backoff);
  }

  send(ws, frame) {
    if (ws.readyState !== WebSocket.OPEN) return false;
    ws.send(JSON.stringify(frame));
    return true;
  }

  onFrame(ws, cfg, data) {
    if (typeof data !== 'string') return;
    let f;
    try {
      f = JSON.parse(data);
    } catch {
      return;
    }
    if (!f || typeof f !== 'object' || Array.isArray(f)) return;
    switch (f.type) {
      case 'browser_hello_ack':
        this.backoff = 0;
        this.log('hub: connected');
        return;
      case 'browser_command':
        this.command(ws, f);
        return;
      case 'approval_request':
        this.approval(ws, cfg, f);
        return;
      // approval_resolved clears a prompt; with no prompt shown there is
      // nothing to do, like for any other frame.
    }
  }

  approval(ws, cfg, f) {
    if (typeof f.request_id !== 'string' || f.request_id === '') return;
    if (cfg.approvals === 'approve' || cfg.approvals === 'reject') {
      this.send(ws, { type: 'approval_response', request_id: f.request_id, action: cfg.approvals });
    }
  }

  async command(ws, f) {
    const id = f.id;
    // Exactly one browser_result per id: a repeat of an id that is running
    // or was answered on this connection is ignored.
    const answered = this.answered.get(ws);
    if (typeof id !== 'string' || id === '' || this.inflight.has(id) || answered.has(id)) return;
    this.inflight.add(id);
    const timeoutMs = Number.isFinite(f.timeout_ms) && f.timeout_ms > 0 ? f.timeout_ms : DEFAULT_TIMEOUT_MS;
    let result;
    try {
      result = await withTimeout(this.run(f), timeoutMs, `timed out after ${timeoutMs} ms`);
    } catch (e) {
      result = { error: String((e && e.message) || e) || 'failed' };
    } finally {
      this.inflight.delete(id);
      answered.add(id);
      if (answered.size > ANSWERED_MAX) answered.delete(answered.values().next().value);
    }
    if (!('url' in result)) {
      try {
        const tab = await chrome.tabs.get(this.controlledTabId);
        result.url = tab.url || '';
        result.title = tab.title || '';
      } catch {
        result.url = '';
        result.title = '';
      }
    }
    this.send(ws, { type: 'browser_result', id, events: [], error: '', ...result });
  }

  // controlledTab is the tab this side drives: the one it used last while
  // it is open, else the active tab.
  async controlledTab() {
    if (this.controlledTabId !== null) {
      try {
        return await chrome.tabs.get(this.controlledTabId);
      } catch {
        this.controlledTabId = null;
      }
    }
    const tab = await activeTab();
    this.controlledTabId = tab.id;
    return tab;
  }

  async run(f) {
    const tab = await this.controlledTab();
    const page = async (op, args) => {
      const out = await runInPage(tab.id, op, args);
      if (!out.ok) throw new Error(out.error);
      return out;
    };
    switch (f.action) {
      case 'navigate': {
        const done = await navigate(tab.id, f.url);
        return { url: done.url || '', title: done.title || '' };
      }
      case 'click':
        await page('click', { selector: f.selector });
        return {};
      case 'type':
        await page('type', { selector: f.selector, text: typeof f.text === 'string' ? f.text : '', mode: 'replace', submit: f.press_enter === true });
        return {};
      case 'read': {
        const out = await page('read', { selector: f.selector });
        return { content: out.content };
      }
      case 'screenshot': {
        const dataUrl = await capture(tab.id, 'png');
        const comma = dataUrl.indexOf(',');
        return { image: dataUrl.slice(comma + 1), image_mime_type: 'image/png' };
      }
      case 'tabs': {
        const tabs = await chrome.tabs.query({});
        return {
          tabs: tabs.map((t) => ({
            id: t.id, index: t.index, url: t.url || '', title: t.title || '', active: t.active, controlled: t.id === tab.id,
          })),
        };
      }
    }
    throw new Error(`unknown action ${JSON.stringify(String(f.action))}`);
  }
}

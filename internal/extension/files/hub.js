// The extension bridge side: a WebSocket client of the hub a CLI embeds.
// It dials ws://127.0.0.1:<port>/ws, says browser_hello with the token,
// runs every browser_command on the tab it controls and answers exactly one
// browser_result per id, answers approval requests as configured, sends a
// JSON ping every 20 s, and reconnects with backoff (1 s doubling to 30 s).
// Unknown, non-JSON and non-object frames are ignored. With hub.protocol 2
// it speaks the infer daemon binding dialect (protocol 2) of the newest
// opentask extension; with hub.panel it also acts as a user at its side
// panel (see ScriptedPanel), for the end-to-end tests of both dialects.
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
    this.panels = new WeakMap(); // WebSocket -> its ScriptedPanel
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
      const hello = { type: 'browser_hello', token: hub.token, extension_version: extensionVersion() };
      if (hub.protocol) Object.assign(hello, { client: 'extension', protocol_version: hub.protocol });
      this.send(ws, hello);
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
    const panel = this.panels.get(ws);
    switch (f.type) {
      case 'browser_hello_ack':
        this.backoff = 0;
        this.log('hub: connected', f.protocol_version || 0);
        if (cfg.hub.panel) {
          const p = new ScriptedPanel(this, ws, cfg);
          this.panels.set(ws, p);
          p.start();
        }
        return;
      case 'tool_result':
      case 'chat_event':
        if (panel) panel.frame(f);
        return;
      case 'browser_command':
        this.command(ws, f);
        return;
      case 'approval_request':
        this.approval(ws, cfg, f);
        if (panel && typeof f.request_id === 'string' && cfg.approvals !== 'ignore') panel.report.approvals.push(f.request_id);
        return;
      // approval_resolved clears a prompt; with no prompt shown there is
      // nothing to do, like for any other frame.
    }
    // Protocol 2: an uppercase type is a bare AG-UI event.
    if (panel && typeof f.type === 'string' && f.type === f.type.toUpperCase()) panel.event(f);
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

// ScriptedPanel acts as a user at the side panel of one connection: it
// starts a session, sends the configured message and tool request, folds
// the chat into a transcript, answers approvals as configured, fetches the
// artifacts the assistant links to, and reports what it saw as a
// tool_request of the report tool after every run's end and after its tool
// request's result.
class ScriptedPanel {
  constructor(side, ws, cfg) {
    this.side = side;
    this.ws = ws;
    this.cfg = cfg;
    this.p2 = cfg.hub.protocol >= 2;
    this.toolId = null;
    this.fetched = new Set();
    this.report = { messages: [], events: [], thread: '', interrupts: [], approvals: [], toolResult: null, artifacts: [] };
    this.calls = new Map(); // toolCallId -> true, the calls a run streamed
  }

  send(frame) {
    return this.side.send(this.ws, frame);
  }

  scoped(frame) {
    if (this.p2 && this.cfg.hub.projectDir) frame.project_dir = this.cfg.hub.projectDir;
    return frame;
  }

  start() {
    const panel = this.cfg.hub.panel;
    if (this.p2) this.send(this.scoped({ type: 'new_session' }));
    if (panel.message) {
      if (this.p2) {
        this.send({ type: 'run_agent_input', input: { threadId: this.report.thread, runId: crypto.randomUUID(),
          messages: [{ id: crypto.randomUUID(), role: 'user', content: panel.message }] } });
      } else {
        this.send({ type: 'user_message', content: panel.message });
      }
    }
    if (panel.toolName) {
      this.toolId = crypto.randomUUID();
      this.send(this.scoped({ type: 'tool_request', id: this.toolId, tool_name: panel.toolName, tool_args: panel.toolArgs || '' }));
    }
  }

  frame(f) {
    if (f.type === 'chat_event') {
      if (f.event && typeof f.event === 'object') this.event(f.event);
      return;
    }
    if (f.type === 'tool_result' && f.id === this.toolId) {
      this.report.toolResult = { success: f.success === true, output: String(f.output || ''), error: String(f.error || '') };
      this.sendReport();
    }
  }

  event(e) {
    if (typeof e.type !== 'string') return;
    const r = this.report;
    r.events.push(e.type);
    const last = r.messages[r.messages.length - 1];
    switch (e.type) {
      case 'RUN_STARTED':
        if (typeof e.threadId === 'string') r.thread = e.threadId;
        return;
      case 'TEXT_MESSAGE_START':
        r.messages.push({ role: typeof e.role === 'string' ? e.role : 'assistant', text: '', id: e.messageId });
        return;
      case 'TEXT_MESSAGE_CONTENT':
        if (last && last.id === e.messageId) last.text += String(e.delta || '');
        else r.messages.push({ role: 'assistant', text: String(e.delta || ''), id: e.messageId });
        return;
      case 'TEXT_MESSAGE_END':
        if (last && last.role === 'assistant') this.fetchArtifacts(last.text);
        return;
      case 'MESSAGES_SNAPSHOT':
        r.messages = (Array.isArray(e.messages) ? e.messages : [])
          .filter((m) => m && typeof m.content === 'string' && m.content)
          .map((m) => ({ role: String(m.role), text: m.content, id: m.id }));
        return;
      case 'CUSTOM':
        this.custom(e);
        return;
      case 'RUN_ERROR':
        if (typeof e.runId === 'string') this.sendReport();
        return;
      case 'RUN_FINISHED':
        if (e.outcome && e.outcome.type === 'interrupt') {
          this.resume(Array.isArray(e.outcome.interrupts) ? e.outcome.interrupts : []);
          return;
        }
        this.sendReport();
    }
  }

  // resume answers every tool_call interrupt of the suspended run in one
  // resume, as configured; with "ignore" it leaves them open.
  resume(interrupts) {
    const policy = this.cfg.approvals;
    if (policy === 'ignore' || interrupts.length === 0) return;
    const entries = interrupts.filter((it) => it && typeof it.id === 'string').map((it) => {
      this.report.interrupts.push(it.id);
      return { interruptId: it.id, status: policy === 'approve' && it.reason === 'tool_call' ? 'resolved' : 'cancelled' };
    });
    this.send({ type: 'run_agent_input', input: { threadId: this.report.thread, runId: crypto.randomUUID(), messages: [], resume: entries } });
  }

  custom(e) {
    const v = e.value;
    if (e.name !== 'approval_request' || !v || typeof v.tool_call_id !== 'string' || v.tool_call_id === '') return;
    const policy = this.cfg.approvals;
    if (policy === 'ignore') return;
    this.report.approvals.push(v.tool_call_id);
    this.send({ type: 'approval_response', tool_call_id: v.tool_call_id, approved: policy === 'approve' });
  }

  // fetchArtifacts loads the artifacts a markdown image in text links to,
  // rewritten onto the hub's /artifacts/ route as the real panel does.
  fetchArtifacts(text) {
    const base = this.cfg.hub.url.replace(/^ws:/, 'http:').replace(/\/ws$/, '');
    const re = this.p2 ? /!\[[^\]]*\]\([^)]*\/\.infer\/projects\/([^/)]+)\/artifacts\/([^)]+)\)/g
      : /!\[[^\]]*\]\([^)]*\/\.infer\/artifacts\/([^)]+)\)/g;
    for (const m of text.matchAll(re)) {
      const rel = this.p2 ? `${m[1]}/${m[2]}` : m[1];
      const url = `${base}/artifacts/${rel}`;
      if (this.fetched.has(url)) continue;
      this.fetched.add(url);
      this.pending = (this.pending || Promise.resolve()).then(async () => {
        try {
          const res = await fetch(url, { cache: 'no-store' });
          this.report.artifacts.push({ url, status: res.status, body: (await res.text()).slice(0, 256) });
        } catch (err) {
          this.report.artifacts.push({ url, status: 0, body: String((err && err.message) || err) });
        }
      });
    }
  }

  async sendReport() {
    await this.pending;
    const r = this.report;
    const report = { ...r, messages: r.messages.map(({ role, text }) => ({ role, text })) };
    this.send(this.scoped({ type: 'tool_request', id: crypto.randomUUID(), tool_name: this.cfg.hub.panel.reportTool, tool_args: JSON.stringify(report) }));
  }
}

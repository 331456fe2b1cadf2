// The agent protocol's commands as the extension implements them: each
// browser.* command does real work in the page and is wrapped in a
// synthetic "External Agent" task whose events reach every agent; tasks.*
// go to the scripted task runner.
import { capture, navigate, resolveTab, runInAllFrames, runInPage } from './browser.js';

// AgentCommands answers bridge:request frames. emit(event) sends a
// bridge:event; tasks is the TaskRunner.
export class AgentCommands {
  constructor({ emit, tasks, log }) {
    this.emit = emit;
    this.tasks = tasks;
    this.log = log;
    this.externalSeq = 0;
  }

  // handle returns the result of one request, or throws: a thrown error
  // becomes the response's error string.
  async handle(type, payload) {
    if (typeof type === 'string' && type.startsWith('browser.')) {
      const action = BROWSER[type];
      if (!action) throw new Error(`Unknown bridge request: ${type}`);
      return this.external(type, payload, action);
    }
    switch (type) {
      case 'tasks.list': return this.tasks.list();
      case 'tasks.get': return this.tasks.get(payload.id);
      case 'tasks.start': return this.tasks.start(payload);
      case 'tasks.stop': return this.tasks.stop(payload.id);
      case 'tasks.pause': return this.tasks.pause(payload.id);
      case 'tasks.resume': return this.tasks.resume(payload.id);
      case 'tasks.confirm': return this.tasks.confirm(payload.id, payload.allow);
      case 'tasks.wait': return this.tasks.wait(payload.id, payload.timeoutMs);
    }
    throw new Error(`Unknown bridge request: ${String(type)}`);
  }

  // external runs one browser action as a one-step task of its own, so
  // agents see task:update, task:step, task:update before the response,
  // as with the reference extension.
  async external(type, payload, action) {
    const now = Date.now();
    let tab;
    try {
      tab = await resolveTab(payload.tabId);
    } catch {
      // The action reports the error below.
    }
    const task = {
      id: `external-${now}-${++this.externalSeq}`,
      goal: 'External Agent',
      tabId: tab ? tab.id : null,
      status: 'running',
      steps: [],
      createdAt: now,
      updatedAt: now,
      profile: 'external-agent',
    };
    const step = {
      id: `${task.id}-step-1`,
      index: 0,
      status: 'running',
      startedAt: now,
      toolCall: { name: type, arguments: eventArguments(payload) },
    };
    this.emit({ kind: 'task:update', task: { ...task } });
    let result;
    let error;
    try {
      result = await action(payload, tab || (await resolveTab(payload.tabId)));
    } catch (e) {
      error = e;
    }
    const finished = Date.now();
    const ok = !error && !(result && result.kind === 'action:result' && result.result && result.result.ok === false);
    step.status = ok ? 'ok' : 'fail';
    step.finishedAt = finished;
    step.result = { ok, durationMs: finished - now };
    if (!ok) step.result.error = error ? error.message : result.result.error;
    this.emit({ kind: 'task:step', taskId: task.id, step });
    task.steps = [step];
    task.status = ok ? 'done' : 'failed';
    task.updatedAt = finished;
    if (!ok) task.error = step.result.error;
    this.emit({ kind: 'task:update', task });
    if (error) throw error;
    return result;
  }
}

// eventArguments is a command's payload as live events show it: typed
// text is left out, since every connected agent receives every event.
function eventArguments(payload) {
  const args = { ...payload };
  if (typeof args.text === 'string') args.text = '[redacted]';
  return args;
}

// Refs inside frames are @f<frameId>e<N>; the page agent of each frame
// numbers its own nodes @e<N>.
const FRAME_REF = /^@f(\d+)e(\d+)$/;

function splitRef(ref) {
  const m = typeof ref === 'string' ? FRAME_REF.exec(ref.trim()) : null;
  return m ? { frameId: Number(m[1]), ref: `@e${m[2]}` } : { frameId: 0, ref };
}

function frameRef(frameId, ref) {
  return frameId === 0 || !ref ? ref : `@f${frameId}${ref.slice(1)}`;
}

// runInFrame is runInPage for the frame a ref names. A frame that cannot
// be reached any more (it navigated or was removed since the snapshot)
// makes the ref stale: an action failure, like a stale ref in the top
// frame, not a thrown error.
async function runInFrame(tabId, op, args, frameId) {
  try {
    return await runInPage(tabId, op, args, frameId);
  } catch (e) {
    if (frameId === 0) throw e;
    return { ok: false, error: `Frame ${frameId} of this ref is gone (${e.message}): take a new snapshot` };
  }
}

// pageAction runs op in the frame its ref names and wraps the outcome in
// the agent protocol's action result: failures are results with ok:false.
async function pageAction(tab, op, args) {
  const started = Date.now();
  const { frameId, ref } = splitRef(args.ref);
  const out = await runInFrame(tab.id, op, { ...args, ref }, frameId);
  return { kind: 'action:result', result: { ...out, durationMs: Date.now() - started } };
}

async function snapshot(p, tab) {
  const frames = await runInAllFrames(tab.id, 'snapshot', { allElements: p.allElements === true });
  const top = frames.find((f) => f.frameId === 0);
  if (!top) throw new Error('The page returned no result (it may have navigated away)');
  if (!top.out.ok) throw new Error(top.out.error);
  // Viewport first across frames: the top frame's nodes, then the
  // frames', in each group.
  const inside = [];
  const outside = [];
  for (const f of frames) {
    if (!f.out.ok) continue;
    for (const n of f.out.snapshot.nodes) {
      if (f.frameId !== 0) {
        n.ref = frameRef(f.frameId, n.ref);
        n.frameId = f.frameId;
      }
      (n.inViewport ? inside : outside).push(n);
    }
  }
  const snap = top.out.snapshot;
  snap.nodes = inside.concat(outside);
  return { kind: 'snapshot', snapshot: snap };
}

async function extract(p, tab) {
  const started = Date.now();
  const which = p.refs === undefined || p.refs === null || p.refs === '' ? 'visible' : p.refs;
  const done = (result) => ({ kind: 'action:result', result: { ...result, durationMs: Date.now() - started } });
  const extracted = [];
  if (which === 'visible' || which === 'all') {
    for (const f of await runInAllFrames(tab.id, 'extract', { refs: which })) {
      if (!f.out.ok) {
        if (f.frameId === 0) return done(f.out);
        continue;
      }
      for (const e of f.out.extracted) extracted.push({ ...e, ref: frameRef(f.frameId, e.ref) });
    }
    return done({ ok: true, extracted });
  }
  // A list of refs: ask each frame once for its own, then answer in the
  // order asked.
  const refs = (Array.isArray(which) ? which : String(which).split(',')).map((r) => String(r).trim()).filter(Boolean);
  const byFrame = new Map();
  for (const r of refs) {
    const { frameId, ref } = splitRef(r);
    if (!byFrame.has(frameId)) byFrame.set(frameId, []);
    byFrame.get(frameId).push(ref);
  }
  const found = new Map();
  for (const [frameId, list] of byFrame) {
    const out = await runInFrame(tab.id, 'extract', { refs: list.join(',') }, frameId);
    if (!out.ok) return done({ ok: false, error: out.error });
    for (const e of out.extracted) found.set(frameRef(frameId, e.ref), { ...e, ref: frameRef(frameId, e.ref) });
  }
  for (const r of refs) {
    const { frameId, ref } = splitRef(r);
    extracted.push(found.get(frameRef(frameId, ref)));
  }
  return done({ ok: true, extracted });
}

const BROWSER = {
  'browser.snapshot': snapshot,
  'browser.screenshot': async (p, tab) => {
    return { kind: 'screenshot', dataUrl: await capture(tab.id, 'jpeg') };
  },
  'browser.navigate': async (p, tab) => {
    const done = await navigate(tab.id, p.url);
    return { ok: true, tabId: done.id, url: done.url };
  },
  'browser.click': (p, tab) => pageAction(tab, 'click', { ref: p.ref, selector: p.selector }),
  'browser.type': (p, tab) => pageAction(tab, 'type', {
    ref: p.ref, selector: p.selector, text: p.text, mode: p.mode === 'append' ? 'append' : 'replace', submit: p.submit,
  }),
  'browser.press': (p, tab) => pageAction(tab, 'press', { key: p.key, modifiers: p.modifiers, ref: p.ref, selector: p.selector }),
  'browser.scroll': (p, tab) => pageAction(tab, 'scroll', {
    direction: p.direction, amountPx: Number(p.amountPx) || undefined, ref: p.ref, selector: p.selector,
  }),
  'browser.extract': extract,
};

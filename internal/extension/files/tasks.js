// A small in-memory task runner for tasks.*. The reference extension plans
// a goal with a language model; this one has none: a goal is a script of
// plain steps, separated by ";" or new lines:
//
//   navigate <url>
//   click <css selector or @ref>
//   type <css selector or @ref> "<text, a JSON string>"
//   press <key> [<modifiers such as ctrl+shift>]
//   scroll up|down|top|bottom [<px>]
//   extract [<css selector>]        (the step's result carries extracted[])
//   wait <ms>                       (at most 60000)
//   confirm <question>              (awaiting_confirm until tasks.confirm, unless autoConfirm)
//   fail <message>                  (the task fails: for tests)
//
// A goal with any other step fails while planning, naming the step.
import { navigate, resolveTab, runInPage, withTimeout } from './browser.js';

const FINAL = new Set(['done', 'failed', 'stopped']);
// tasks.wait returns on these, as the reference does (plus stopped, which
// the reference forgets).
const SETTLED = new Set(['done', 'failed', 'stopped', 'paused', 'awaiting_confirm']);
const MAX_TASKS = 100;
const LIST_LIMIT = 50;
const DEFAULT_WAIT_MS = 120000;
const MAX_WAIT_MS = 600000;
const MAX_GOAL = 10000;

export class TaskRunner {
  constructor({ emit, log }) {
    this.emit = emit;
    this.log = log;
    this.tasks = new Map(); // id -> task, oldest first
    this.waiters = new Map(); // id -> Set of functions called on every change
    this.seq = 0;
  }

  list() {
    return Array.from(this.tasks.values()).reverse().slice(0, LIST_LIMIT).map(copy);
  }

  get(id) {
    const t = this.tasks.get(id);
    return t ? copy(t) : null;
  }

  async start(p) {
    if (typeof p.goal !== 'string' || p.goal.trim() === '') throw new Error('tasks.start: goal is required');
    if (p.goal.length > MAX_GOAL) throw new Error(`tasks.start: goal is longer than ${MAX_GOAL} characters`);
    if (p.startUrl !== undefined && typeof p.startUrl !== 'string') throw new Error('tasks.start: startUrl must be a string');
    if (p.timeoutMs !== undefined && !(Number.isFinite(p.timeoutMs) && p.timeoutMs > 0)) {
      throw new Error('tasks.start: timeoutMs must be a positive number');
    }
    const attachments = checkAttachments(p.attachments);
    const tab = await resolveTab(p.tabId);
    const now = Date.now();
    const task = {
      id: `task-${now}-${++this.seq}`,
      goal: p.goal,
      tabId: tab.id,
      status: 'idle',
      steps: [],
      createdAt: now,
      updatedAt: now,
      profile: 'scripted',
    };
    if (attachments.length) task.attachments = attachments;
    const control = {
      startUrl: p.startUrl,
      autoConfirm: p.autoConfirm === true,
      deadline: p.timeoutMs ? now + p.timeoutMs : Infinity,
      confirm: null, // resolve function while awaiting_confirm
      resume: null, // resolve function while paused
      interrupt: null, // ends a wait step early when the task stops
    };
    Object.defineProperty(task, 'control', { value: control, enumerable: false });
    this.tasks.set(task.id, task);
    this.evict();
    const created = copy(task);
    this.emit({ kind: 'task:update', task: copy(task) });
    setTimeout(() => this.run(task), 0);
    return created;
  }

  stop(id) {
    const t = this.must(id);
    if (!FINAL.has(t.status)) {
      this.update(t, { status: 'stopped' });
      this.wake(t);
    }
    return { ok: true };
  }

  pause(id) {
    const t = this.must(id);
    if (['idle', 'planning', 'running'].includes(t.status)) {
      this.update(t, { status: 'paused', pauseReason: 'Paused by the agent' });
    }
    return { ok: true };
  }

  resume(id) {
    const t = this.must(id);
    if (t.status === 'paused') {
      delete t.pauseReason;
      this.update(t, { status: 'running' });
      this.wake(t);
    }
    return { ok: true };
  }

  confirm(id, allow) {
    const t = this.must(id);
    if (t.status === 'awaiting_confirm' && t.control.confirm) {
      // Only JSON true approves.
      t.control.confirm(allow === true);
    }
    return { ok: true };
  }

  wait(id, timeoutMs) {
    const t = this.tasks.get(id);
    if (!t) return null;
    const ms = Number.isFinite(timeoutMs) && timeoutMs > 0 ? Math.min(timeoutMs, MAX_WAIT_MS) : DEFAULT_WAIT_MS;
    return new Promise((resolve) => {
      const check = () => {
        if (!SETTLED.has(t.status)) return false;
        done();
        return true;
      };
      const done = () => {
        clearTimeout(timer);
        this.unwatch(id, check);
        resolve(copy(t));
      };
      const timer = setTimeout(done, ms);
      if (!check()) this.watch(id, check);
    });
  }

  must(id) {
    const t = this.tasks.get(id);
    if (!t) throw new Error(`Task not found: ${String(id)}`);
    return t;
  }

  watch(id, fn) {
    if (!this.waiters.has(id)) this.waiters.set(id, new Set());
    this.waiters.get(id).add(fn);
  }

  unwatch(id, fn) {
    const set = this.waiters.get(id);
    if (!set) return;
    set.delete(fn);
    if (!set.size) this.waiters.delete(id);
  }

  update(t, fields) {
    Object.assign(t, fields, { updatedAt: Date.now() });
    this.emit({ kind: 'task:update', task: copy(t) });
    for (const fn of Array.from(this.waiters.get(t.id) || [])) fn();
  }

  wake(t) {
    if (t.control.resume) t.control.resume();
    if (t.control.confirm) t.control.confirm(false);
    if (FINAL.has(t.status) && t.control.interrupt) t.control.interrupt();
  }

  evict() {
    for (const [id, t] of this.tasks) {
      if (this.tasks.size <= MAX_TASKS) break;
      if (FINAL.has(t.status)) this.tasks.delete(id);
    }
  }

  async run(t) {
    if (t.status !== 'idle') {
      if (t.status === 'paused') await this.paused(t);
      if (FINAL.has(t.status)) return;
    }
    this.update(t, { status: 'planning' });
    let plan;
    try {
      plan = parseGoal(t.goal);
      if (t.control.startUrl) plan.unshift({ verb: 'navigate', arg: t.control.startUrl, text: `navigate ${t.control.startUrl}` });
    } catch (e) {
      return this.failTask(t, e.message);
    }
    if (t.status === 'planning') this.update(t, { status: 'running', plan: plan.map((s) => s.text) });
    else t.plan = plan.map((s) => s.text);

    for (let i = 0; i < plan.length; i++) {
      if (t.status === 'paused') await this.paused(t);
      if (FINAL.has(t.status)) return;
      if (Date.now() > t.control.deadline) return this.failTask(t, 'Task timed out');
      const s = plan[i];
      const step = {
        id: `${t.id}-step-${i + 1}`,
        index: i,
        status: 'running',
        startedAt: Date.now(),
        thought: s.text,
        toolCall: { name: s.verb, arguments: s.verb === 'type' ? { target: s.target, text: '[redacted]' } : { arg: s.arg } },
      };
      t.steps.push(step);
      this.emit({ kind: 'task:step', taskId: t.id, step: { ...step } });
      let result;
      try {
        const left = t.control.deadline - Date.now();
        result = await (left === Infinity ? this.perform(t, s) : withTimeout(this.perform(t, s), Math.max(left, 0), 'Task timed out'));
      } catch (e) {
        result = { ok: false, error: e.message };
      }
      if (FINAL.has(t.status)) {
        step.status = 'skipped';
        step.finishedAt = Date.now();
        this.emit({ kind: 'task:step', taskId: t.id, step: { ...step } });
        return;
      }
      step.finishedAt = Date.now();
      step.status = result.ok ? 'ok' : 'fail';
      step.result = { ok: result.ok, durationMs: step.finishedAt - step.startedAt };
      if (result.error) step.result.error = result.error;
      if (result.extracted) step.result.extracted = result.extracted;
      this.emit({ kind: 'task:step', taskId: t.id, step: { ...step } });
      if (!result.ok) return this.failTask(t, `Step ${i + 1} (${s.text}) failed: ${result.error}`);
    }
    this.update(t, { status: 'done', partialSummary: summary(t) });
  }

  failTask(t, error) {
    this.update(t, { status: 'failed', error });
    this.emit({ kind: 'task:error', taskId: t.id, error });
  }

  paused(t) {
    return new Promise((resolve) => {
      t.control.resume = () => {
        t.control.resume = null;
        resolve();
      };
      if (t.status !== 'paused') t.control.resume();
    });
  }

  async perform(t, s) {
    const tabId = t.tabId;
    switch (s.verb) {
      case 'navigate':
        await navigate(tabId, s.arg);
        return { ok: true };
      case 'click':
        return runInPage(tabId, 'click', { selector: s.arg });
      case 'type':
        return runInPage(tabId, 'type', { selector: s.target, text: s.value, mode: 'replace' });
      case 'press': {
        const [key, modifiers] = s.arg.split(/\s+/);
        return runInPage(tabId, 'press', { key, modifiers });
      }
      case 'scroll': {
        const [direction, px] = s.arg.split(/\s+/);
        return runInPage(tabId, 'scroll', { direction, amountPx: px ? Number(px) : undefined });
      }
      case 'extract': {
        if (s.arg) {
          const out = await runInPage(tabId, 'read', { selector: s.arg });
          if (!out.ok) return out;
          return { ok: true, extracted: [{ ref: s.arg, text: out.content }] };
        }
        await runInPage(tabId, 'snapshot', {});
        return runInPage(tabId, 'extract', { refs: 'visible' });
      }
      case 'wait':
        await new Promise((resolve) => {
          const timer = setTimeout(done, Math.min(Number(s.arg) || 0, 60000));
          function done() {
            clearTimeout(timer);
            t.control.interrupt = null;
            resolve();
          }
          t.control.interrupt = done;
        });
        return { ok: true };
      case 'confirm': {
        if (t.control.autoConfirm) return { ok: true };
        this.update(t, { status: 'awaiting_confirm', pauseReason: s.arg || 'Confirm to continue' });
        const allowed = await new Promise((resolve) => {
          t.control.confirm = (v) => {
            t.control.confirm = null;
            resolve(v);
          };
        });
        if (FINAL.has(t.status)) return { ok: false, error: 'Task stopped' };
        delete t.pauseReason;
        if (!allowed) return { ok: false, error: 'Confirmation denied' };
        this.update(t, { status: 'running' });
        return { ok: true };
      }
      case 'fail':
        return { ok: false, error: s.arg || 'Failed on request' };
    }
    return { ok: false, error: `Unknown step ${s.verb}` };
  }
}

const VERBS = ['navigate', 'click', 'type', 'press', 'scroll', 'extract', 'wait', 'confirm', 'fail'];

// parseGoal turns a goal into steps, or throws naming the first step it
// cannot read.
export function parseGoal(goal) {
  const steps = [];
  for (const raw of splitSteps(goal)) {
    const text = raw.trim();
    if (!text) continue;
    const m = /^(\S+)\s*([\s\S]*)$/.exec(text);
    const verb = m[1].toLowerCase();
    const arg = m[2].trim();
    if (!VERBS.includes(verb)) {
      throw new Error(`Cannot plan step ${JSON.stringify(text)}: this scripted runner knows ${VERBS.join(', ')}`);
    }
    const step = { verb, arg, text };
    const need = (ok, what) => {
      if (!ok) throw new Error(`Cannot plan step ${JSON.stringify(text)}: ${what}`);
    };
    switch (verb) {
      case 'navigate': case 'click': case 'press':
        need(arg !== '', `${verb} needs an argument`);
        break;
      case 'type': {
        const t = /^(.+?)\s+("(?:[^"\\]|\\.)*")$/.exec(arg);
        need(t, 'use: type <selector> "<text>"');
        step.target = t[1];
        try {
          step.value = JSON.parse(t[2]);
        } catch {
          need(false, 'the text is not a valid JSON string');
        }
        break;
      }
      case 'scroll':
        need(/^(up|down|top|bottom)(\s+\d+)?$/.test(arg), 'use: scroll up|down|top|bottom [px]');
        break;
      case 'wait':
        need(/^\d+$/.test(arg), 'use: wait <milliseconds>');
        break;
    }
    steps.push(step);
  }
  if (!steps.length) throw new Error('The goal has no steps');
  return steps;
}

// splitSteps splits on ";" and new lines outside double-quoted text.
function splitSteps(goal) {
  const out = [];
  let cur = '';
  let quoted = false;
  for (let i = 0; i < goal.length; i++) {
    const c = goal[i];
    if (quoted && c === '\\' && i + 1 < goal.length) {
      cur += c + goal[++i];
      continue;
    }
    if (c === '"') quoted = !quoted;
    if (!quoted && (c === ';' || c === '\n')) {
      out.push(cur);
      cur = '';
      continue;
    }
    cur += c;
  }
  out.push(cur);
  return out;
}

function checkAttachments(list) {
  if (list === undefined || list === null) return [];
  if (!Array.isArray(list)) throw new Error('tasks.start: attachments must be an array');
  return list.map((a, i) => {
    if (!a || typeof a !== 'object') throw new Error(`tasks.start: attachments[${i}] must be an object`);
    for (const f of ['id', 'name', 'path']) {
      if (typeof a[f] !== 'string' || a[f] === '') throw new Error(`tasks.start: attachments[${i}].${f} is required`);
    }
    if (!a.path.startsWith('/') && !/^[A-Za-z]:[\\/]/.test(a.path)) {
      throw new Error(`tasks.start: attachments[${i}].path must be absolute`);
    }
    const out = { id: a.id, name: a.name, path: a.path };
    if (typeof a.mimeType === 'string') out.mimeType = a.mimeType;
    return out;
  });
}

function summary(t) {
  const texts = [];
  for (const s of t.steps) {
    for (const e of (s.result && s.result.extracted) || []) {
      if (e.text) texts.push(e.text);
    }
  }
  return texts.join('\n').slice(0, 2000);
}

function copy(t) {
  return JSON.parse(JSON.stringify(t));
}

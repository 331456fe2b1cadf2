// The part of the extension that runs inside the page.
//
// pageAgent is injected with chrome.scripting.executeScript({func}), which
// serialises the function's source: it must be self-contained, so every
// helper lives inside it. It runs in the extension's isolated world, whose
// globals persist for the life of the document: that is where the refs of
// the last snapshot are kept (a new document starts with none).
//
// It never throws: every outcome is {ok: true, ...} or {ok: false, error},
// because Chrome does not carry exceptions out of injected functions.
export async function pageAgent(op, args) {
  // Kept under a symbol: a string-named global can be shadowed by the
  // page, whose elements with an id or name show as named properties of
  // window in every world (<div id="__agentbridge"> would stand in for the
  // state, and removing it would drop the refs).
  const STATE = Symbol.for('agentbridge.pageAgent');
  const state = (globalThis[STATE] ??= { refs: new Map() });
  args = args || {};

  const SECRET_NAME = /pass|secret|token|otp|cvc|card/i;
  const SECRET_AUTOCOMPLETE = /(^|\s)(current-password|new-password|one-time-code)(\s|$)/i;
  const REDACTED = '[redacted]';
  const MAX_NAME = 200;
  const MAX_TEXT = 2000;
  const DEFAULT_NODE_LIMIT = 400;
  const MAX_SNIPPETS = 80;

  const clean = (s, max) => {
    s = String(s ?? '').replace(/\s+/g, ' ').trim();
    return s.length > max ? s.slice(0, max - 1) + '…' : s;
  };

  // isSecret applies the extension bridge's redaction rule to every value
  // this agent can return, on both protocols.
  const isSecret = (el) => {
    if (!(el instanceof HTMLElement)) return false;
    if (el instanceof HTMLInputElement && el.type === 'password') return true;
    if (SECRET_AUTOCOMPLETE.test(el.getAttribute('autocomplete') || '')) return true;
    for (const a of ['name', 'id', 'aria-label']) {
      if (SECRET_NAME.test(el.getAttribute(a) || '')) return true;
    }
    return false;
  };

  const isField = (el) =>
    el instanceof HTMLInputElement || el instanceof HTMLTextAreaElement || el instanceof HTMLSelectElement;

  const VALUELESS_INPUTS = ['checkbox', 'radio', 'button', 'submit', 'reset', 'image', 'file', 'hidden'];

  // holdsValue reports whether el holds a value someone typed or chose: a
  // text field, a select or editable content.
  const holdsValue = (el) =>
    el instanceof HTMLTextAreaElement || el instanceof HTMLSelectElement ||
    (el instanceof HTMLInputElement && !VALUELESS_INPUTS.includes(el.type)) ||
    (el instanceof HTMLElement && el.isContentEditable);

  const isSecretHolder = (el) => holdsValue(el) && isSecret(el);

  const fieldValue = (el) => {
    if (!holdsValue(el)) return undefined;
    if (el instanceof HTMLSelectElement) {
      const v = Array.from(el.selectedOptions).map((o) => o.text).join(', ');
      return isSecret(el) && v ? REDACTED : v;
    }
    if (isField(el)) return isSecret(el) ? (el.value ? REDACTED : '') : el.value;
    return clean(safeText(el), MAX_TEXT);
  };

  // underSecret reports whether el is, or is inside, a secret holder (an
  // option of a secret select, a paragraph of secret editable content).
  const underSecret = (el) => {
    for (let n = el; n; n = n.parentElement) {
      if (isSecretHolder(n)) return true;
    }
    return false;
  };

  // secretTexts returns the texts the secret holders inside el put into
  // its innerText, longest first: input and textarea values never appear
  // there, but a select shows all its options (so which one is chosen
  // must not show either) and editable content its text.
  const secretTexts = (el) => {
    const texts = [];
    for (const h of el.querySelectorAll('select,[contenteditable],[name],[id],[aria-label],[autocomplete]')) {
      if (!isSecretHolder(h)) continue;
      texts.push(h.innerText.trim());
      if (h instanceof HTMLSelectElement) {
        for (const o of h.options) texts.push(o.text.trim());
      }
    }
    return texts.filter(Boolean).sort((a, b) => b.length - a.length);
  };

  // safeText is el's innerText with every secret holder's text inside it
  // replaced by "[redacted]", the same rule values follow.
  const safeText = (el) => {
    const text = el.innerText ?? el.textContent ?? '';
    if (underSecret(el)) return text.trim() ? REDACTED : '';
    let out = text;
    for (const s of secretTexts(el)) out = out.split(s).join(REDACTED);
    return out;
  };

  const INPUT_ROLES = {
    button: 'button', submit: 'button', reset: 'button', image: 'button',
    checkbox: 'checkbox', radio: 'radio', range: 'slider', number: 'spinbutton',
    search: 'searchbox', email: 'textbox', tel: 'textbox', text: 'textbox', url: 'textbox',
    password: 'textbox', date: 'textbox', 'datetime-local': 'textbox', month: 'textbox',
    time: 'textbox', week: 'textbox', color: 'button', file: 'button',
  };
  const INTERACTIVE_ROLES = new Set([
    'button', 'link', 'checkbox', 'radio', 'textbox', 'searchbox', 'combobox', 'listbox',
    'option', 'menuitem', 'menuitemcheckbox', 'menuitemradio', 'switch', 'tab', 'slider',
    'spinbutton', 'treeitem', 'heading',
  ]);

  const roleOf = (el) => {
    const explicit = (el.getAttribute('role') || '').trim().split(/\s+/)[0];
    if (explicit) return explicit;
    const tag = el.tagName.toLowerCase();
    switch (tag) {
      case 'a': return el.hasAttribute('href') ? 'link' : '';
      case 'button': return 'button';
      case 'summary': return 'button';
      case 'textarea': return 'textbox';
      case 'select': return el.multiple || el.size > 1 ? 'listbox' : 'combobox';
      case 'input': return el.type === 'hidden' ? '' : (INPUT_ROLES[el.type] || 'textbox');
      case 'h1': case 'h2': case 'h3': case 'h4': case 'h5': case 'h6': return 'heading';
      case 'option': return 'option';
    }
    if (el.isContentEditable) return 'textbox';
    if (el.hasAttribute('tabindex') && el.tabIndex >= 0) return 'generic';
    return '';
  };

  const textOf = (el) => clean(safeText(el), MAX_NAME);

  // nameOf is a simplified accessible-name computation: the sources, in
  // the order the ARIA spec tries them.
  const nameOf = (el) => {
    const labelledBy = el.getAttribute('aria-labelledby');
    if (labelledBy) {
      // The ids name elements of el's own tree, which may be a shadow root.
      const root = el.getRootNode();
      const byId = (id) => (typeof root.getElementById === 'function' ? root.getElementById(id) : document.getElementById(id));
      const parts = labelledBy.split(/\s+/).filter(Boolean).map(byId).filter(Boolean).map(textOf);
      const s = clean(parts.join(' '), MAX_NAME);
      if (s) return s;
    }
    const aria = clean(el.getAttribute('aria-label'), MAX_NAME);
    if (aria) return aria;
    if (isField(el) && el.labels && el.labels.length) {
      const s = clean(Array.from(el.labels).map(textOf).join(' '), MAX_NAME);
      if (s) return s;
    }
    if (el instanceof HTMLInputElement && ['button', 'submit', 'reset'].includes(el.type)) {
      return clean(el.value || (el.type === 'submit' ? 'Submit' : el.type === 'reset' ? 'Reset' : ''), MAX_NAME);
    }
    if (el instanceof HTMLInputElement && el.type === 'image') return clean(el.alt, MAX_NAME);
    if (!isField(el)) {
      const s = textOf(el);
      if (s) return s;
      const img = el.querySelector && el.querySelector('img[alt]');
      if (img) return clean(img.alt, MAX_NAME);
    }
    return clean(el.getAttribute('placeholder') || el.getAttribute('title') || '', MAX_NAME);
  };

  const stateOf = (el) => {
    const s = [];
    if (el.disabled || el.getAttribute('aria-disabled') === 'true') s.push('disabled');
    if (el.checked || el.getAttribute('aria-checked') === 'true') s.push('checked');
    if (el.selected || el.getAttribute('aria-selected') === 'true') s.push('selected');
    const expanded = el.getAttribute('aria-expanded');
    if (expanded === 'true') s.push('expanded');
    if (expanded === 'false') s.push('collapsed');
    if (el.tagName === 'SUMMARY' && el.parentElement instanceof HTMLDetailsElement) {
      s.push(el.parentElement.open ? 'expanded' : 'collapsed');
    }
    if (el.required || el.getAttribute('aria-required') === 'true') s.push('required');
    if (el.readOnly || el.getAttribute('aria-readonly') === 'true') s.push('readonly');
    if (document.activeElement === el) s.push('focused');
    return s;
  };

  const rendered = (el) => {
    if (typeof el.checkVisibility === 'function' && !el.checkVisibility({ checkOpacity: false, checkVisibilityCSS: true })) return false;
    const r = el.getBoundingClientRect();
    return r.width > 0 || r.height > 0;
  };

  const bboxOf = (el) => {
    const r = el.getBoundingClientRect();
    return { x: Math.round(r.x), y: Math.round(r.y), w: Math.round(r.width), h: Math.round(r.height) };
  };

  const overlaps = (b, v) => b.x < v.x1 && b.y < v.y1 && b.x + b.w > v.x0 && b.y + b.h > v.y0;

  // frameView returns the part of this frame's viewport that shows in the
  // top-level viewport, in this frame's coordinates: the whole viewport in
  // the top frame; in a frame, its viewport clipped by the box and the
  // viewport of every frame around it. null when a frame around it is
  // cross-origin, whose geometry cannot be read from here.
  const frameView = () => {
    let v = { x0: 0, y0: 0, x1: innerWidth, y1: innerHeight };
    let dx = 0;
    let dy = 0;
    for (let w = window; w !== w.top; w = w.parent) {
      let fe = null;
      try {
        fe = w.frameElement;
      } catch {
        // a cross-origin parent
      }
      if (!fe) return null;
      const r = fe.getBoundingClientRect();
      let padLeft = 0;
      let padTop = 0;
      try {
        const cs = fe.ownerDocument.defaultView.getComputedStyle(fe);
        padLeft = parseFloat(cs.paddingLeft) || 0;
        padTop = parseFloat(cs.paddingTop) || 0;
      } catch {
        // no style: no padding
      }
      const left = r.left + fe.clientLeft + padLeft;
      const top = r.top + fe.clientTop + padTop;
      dx += left;
      dy += top;
      const p = w.parent;
      v = {
        x0: Math.max(v.x0 + left, 0), y0: Math.max(v.y0 + top, 0),
        x1: Math.min(v.x1 + left, p.innerWidth), y1: Math.min(v.y1 + top, p.innerHeight),
      };
    }
    return { x0: v.x0 - dx, y0: v.y0 - dy, x1: v.x1 - dx, y1: v.y1 - dy };
  };

  const IO_WAIT_MS = 5000;

  // viewportTest returns a function (element, bbox) telling whether the
  // element shows in the top-level viewport, which is what inViewport
  // means in every frame. In a frame inside a cross-origin one it asks an
  // IntersectionObserver, whose implicit root is the top-level viewport,
  // about els. It answers within milliseconds, off-screen frames included,
  // but only in a tab that renders, and a loaded machine can make it take
  // more than a second: it is given IO_WAIT_MS, and in a hidden tab, which
  // renders nothing, it is not asked. What it says nothing about counts as
  // outside.
  const viewportTest = async (els) => {
    const view = frameView();
    if (view) return (el, b) => overlaps(b, view);
    const seen = new Map();
    if (els.length && document.visibilityState === 'visible') {
      await new Promise((resolve) => {
        let timer;
        const io = new IntersectionObserver((entries) => {
          for (const e of entries) seen.set(e.target, e.isIntersecting);
          if (seen.size >= els.length) done();
        });
        const done = () => {
          clearTimeout(timer);
          io.disconnect();
          resolve();
        };
        timer = setTimeout(done, IO_WAIT_MS);
        for (const el of els) io.observe(el);
      });
    }
    return (el) => seen.get(el) === true;
  };

  const hash = (s) => {
    // FNV-1a, 32 bits: cheap, and enough to tell "the page changed".
    let h = 0x811c9dc5;
    for (let i = 0; i < s.length; i++) {
      h ^= s.charCodeAt(i);
      h = Math.imul(h, 0x01000193) >>> 0;
    }
    return h.toString(16).padStart(8, '0');
  };

  const byRef = (ref) => {
    if (typeof ref !== 'string' || !/^@e\d+$/.test(ref)) {
      return { error: `Invalid ref ${JSON.stringify(String(ref))}: refs look like @e1` };
    }
    const el = state.refs.get(ref);
    if (!el) return { error: `Unknown ref ${ref}: take a new snapshot` };
    if (!el.isConnected) return { error: `Ref ${ref} is no longer in the page: take a new snapshot` };
    return { el };
  };

  const bySelector = (selector) => {
    if (selector === undefined || selector === null || selector === '') return { el: document.body };
    if (typeof selector !== 'string') return { error: 'selector must be a string' };
    let el;
    try {
      el = document.querySelector(selector);
    } catch (e) {
      return { error: `Invalid selector: ${e.message}` };
    }
    if (!el) return { error: `No element matches selector ${JSON.stringify(selector)}` };
    return { el };
  };

  // target finds the element an action names: a ref from the last snapshot,
  // or a CSS selector (a ref given as a selector works too).
  const target = (a) => {
    if (a.ref !== undefined && a.ref !== null && a.ref !== '') return byRef(a.ref);
    if (typeof a.selector === 'string' && a.selector.startsWith('@')) return byRef(a.selector);
    return bySelector(a.selector);
  };

  // watchNavigation runs fn and reports whether it started a cross-document
  // navigation of this frame (a link, a form submission): false, or the
  // URL being left, so the caller can wait for the next page to load
  // before answering.
  const watchNavigation = async (fn) => {
    let navigating = false;
    const nav = globalThis.navigation;
    const onNavigate = (e) => {
      if (!e.destination || !e.destination.sameDocument) navigating = true;
    };
    const onUnload = () => { navigating = true; };
    nav?.addEventListener('navigate', onNavigate);
    addEventListener('beforeunload', onUnload);
    try {
      fn();
      // Form submissions navigate from a task queued after the submit
      // event; let those tasks run.
      for (let i = 0; i < 3 && !navigating; i++) await new Promise((r) => setTimeout(r, 0));
    } finally {
      nav?.removeEventListener('navigate', onNavigate);
      removeEventListener('beforeunload', onUnload);
    }
    return navigating && location.href;
  };

  const setValue = (el, value) => {
    // Call the prototype's setter so frameworks that track the value
    // (React's value tracker) see the change.
    const proto = el instanceof HTMLTextAreaElement ? HTMLTextAreaElement.prototype
      : el instanceof HTMLSelectElement ? HTMLSelectElement.prototype : HTMLInputElement.prototype;
    const setter = Object.getOwnPropertyDescriptor(proto, 'value').set;
    setter.call(el, value);
  };

  const parseModifiers = (mods) => {
    const m = { ctrlKey: false, shiftKey: false, altKey: false, metaKey: false };
    for (const part of String(mods || '').toLowerCase().split(/[+\s,]+/).filter(Boolean)) {
      if (part === 'ctrl' || part === 'control') m.ctrlKey = true;
      else if (part === 'shift') m.shiftKey = true;
      else if (part === 'alt' || part === 'option') m.altKey = true;
      else if (part === 'meta' || part === 'cmd' || part === 'command') m.metaKey = true;
      else return { error: `Unknown modifier ${JSON.stringify(part)} (use ctrl, shift, alt, meta)` };
    }
    return { m };
  };

  const KEY_CODES = { Enter: 'Enter', Tab: 'Tab', Escape: 'Escape', Backspace: 'Backspace', Delete: 'Delete', ' ': 'Space',
    ArrowUp: 'ArrowUp', ArrowDown: 'ArrowDown', ArrowLeft: 'ArrowLeft', ArrowRight: 'ArrowRight', Home: 'Home', End: 'End',
    PageUp: 'PageUp', PageDown: 'PageDown' };

  // pressKey dispatches a key press and performs the default action a
  // real key would have where the page did not cancel it: synthetic
  // keyboard events have none of their own.
  const pressKey = (el, key, mods) => {
    const code = KEY_CODES[key] || (key.length === 1 ? (/[a-z]/i.test(key) ? 'Key' + key.toUpperCase() : /\d/.test(key) ? 'Digit' + key : '') : key);
    const init = { key, code, bubbles: true, cancelable: true, composed: true, ...mods };
    const down = el.dispatchEvent(new KeyboardEvent('keydown', init));
    if (down && key.length === 1) el.dispatchEvent(new KeyboardEvent('keypress', init));
    if (down && !mods.ctrlKey && !mods.altKey && !mods.metaKey) {
      if (key === 'Enter') {
        if (el instanceof HTMLInputElement && el.form) {
          el.form.requestSubmit();
        } else if (el instanceof HTMLButtonElement || el instanceof HTMLAnchorElement || el.getAttribute('role') === 'button') {
          el.click();
        }
      } else if (key === ' ' && (el instanceof HTMLButtonElement || (el instanceof HTMLInputElement && ['checkbox', 'radio', 'button', 'submit'].includes(el.type)))) {
        el.click();
      } else if (key.length === 1 && (el instanceof HTMLInputElement || el instanceof HTMLTextAreaElement) && !el.readOnly) {
        setValue(el, el.value + key);
        el.dispatchEvent(new InputEvent('input', { bubbles: true, data: key, inputType: 'insertText' }));
      } else if (key === 'Backspace' && (el instanceof HTMLInputElement || el instanceof HTMLTextAreaElement) && !el.readOnly) {
        setValue(el, el.value.slice(0, -1));
        el.dispatchEvent(new InputEvent('input', { bubbles: true, inputType: 'deleteContentBackward' }));
      }
    }
    el.dispatchEvent(new KeyboardEvent('keyup', init));
  };

  const fail = (error) => ({ ok: false, error });

  // shadowRootOf returns el's shadow root, open or closed (an extension's
  // content script may read closed ones through chrome.dom), or null.
  const shadowRootOf = (el) => {
    try {
      return globalThis.chrome?.dom?.openOrClosedShadowRoot?.(el) ?? el.shadowRoot ?? null;
    } catch {
      return el.shadowRoot ?? null;
    }
  };

  // eachElement calls fn for every element under root in document order,
  // entering shadow roots where they are attached (a host's shadow tree
  // right after the host), and returns the shadow roots it entered.
  const eachElement = (root, fn, roots = []) => {
    for (const el of root.querySelectorAll('*')) {
      fn(el);
      const shadow = shadowRootOf(el);
      if (shadow) {
        roots.push(shadow);
        eachElement(shadow, fn, roots);
      }
    }
    return roots;
  };

  const CANDIDATES = 'a[href],button,input,select,textarea,summary,[role],[contenteditable],[tabindex],h1,h2,h3,h4,h5,h6';

  const snapshot = async () => {
    const limit = args.allElements === true ? Infinity : DEFAULT_NODE_LIMIT;
    const found = [];
    const shadowRoots = eachElement(document, (el) => {
      if (!el.matches(CANDIDATES)) return;
      const role = roleOf(el);
      if (!role || (!INTERACTIVE_ROLES.has(role) && role !== 'generic')) return;
      if (role === 'generic' && !(el.hasAttribute('tabindex') && el.tabIndex >= 0)) return;
      if (!rendered(el)) return;
      found.push({ el, role, bbox: bboxOf(el) });
    });
    const shows = await viewportTest(found.map((n) => n.el));
    for (const n of found) n.inViewport = shows(n.el, n.bbox);
    // Viewport first, then the rest, each in document order.
    const ordered = found.filter((n) => n.inViewport).concat(found.filter((n) => !n.inViewport));
    state.refs = new Map();
    const nodes = [];
    for (const n of ordered.slice(0, limit)) {
      const ref = '@e' + (nodes.length + 1);
      state.refs.set(ref, n.el);
      const node = { ref, role: n.role, name: nameOf(n.el) };
      const value = fieldValue(n.el);
      if (value !== undefined) node.value = value;
      if (n.el instanceof HTMLAnchorElement && n.el.href) node.href = n.el.href;
      const st = stateOf(n.el);
      if (st.length) node.state = st;
      node.bbox = n.bbox;
      node.inViewport = n.inViewport;
      nodes.push(node);
    }
    const textSnippets = [];
    const parents = new Set();
    for (const root of [document.body || document.documentElement, ...shadowRoots]) {
      const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
      while (textSnippets.length < MAX_SNIPPETS && walker.nextNode()) {
        const parent = walker.currentNode.parentElement;
        if (!parent || parents.has(parent) || /^(SCRIPT|STYLE|NOSCRIPT|TEMPLATE|TEXTAREA|OPTION)$/.test(parent.tagName)) continue;
        parents.add(parent);
        if (!rendered(parent)) continue;
        const text = clean(safeText(parent), MAX_NAME);
        if (text && !textSnippets.includes(text)) textSnippets.push(text);
      }
    }
    return {
      ok: true,
      snapshot: {
        url: location.href,
        title: document.title,
        viewport: { w: innerWidth, h: innerHeight, scrollX: Math.round(scrollX), scrollY: Math.round(scrollY) },
        nodes,
        textSnippets,
        domHash: hash(document.documentElement.outerHTML + shadowRoots.map((r) => r.innerHTML).join('')),
        takenAt: Date.now(),
      },
    };
  };

  const extractOne = (ref, el) => {
    const item = { ref, text: isField(el) ? '' : clean(safeText(el), MAX_TEXT) };
    const value = fieldValue(el);
    if (value !== undefined) item.value = value;
    if (el instanceof HTMLAnchorElement && el.href) item.href = el.href;
    return item;
  };

  // readText is innerText plus the values of the form fields inside, each
  // secret one (and a secret select's or editable's text in innerText)
  // replaced by "[redacted]".
  const readText = (el) => {
    if (isField(el)) {
      const v = fieldValue(el);
      return v === undefined ? '' : v;
    }
    let text = safeText(el);
    const fields = Array.from(el.querySelectorAll('input,textarea,select')).filter((f) => fieldValue(f) !== undefined);
    if (fields.length) {
      const lines = fields.map((f) => {
        const label = nameOf(f) || f.getAttribute('name') || f.id || f.tagName.toLowerCase();
        return `${label}: ${fieldValue(f)}`;
      });
      text += '\n\nForm fields:\n' + lines.join('\n');
    }
    return text;
  };

  try {
    switch (op) {
      case 'snapshot':
        return await snapshot();

      case 'click': {
        const t = target(args);
        if (t.error) return fail(t.error);
        const el = t.el;
        if (el.disabled) return fail('Element is disabled');
        el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
        const navigating = await watchNavigation(() => {
          const r = el.getBoundingClientRect();
          const init = { bubbles: true, cancelable: true, composed: true, view: window, clientX: r.x + r.width / 2, clientY: r.y + r.height / 2, button: 0 };
          el.dispatchEvent(new PointerEvent('pointerdown', init));
          el.dispatchEvent(new MouseEvent('mousedown', init));
          if (typeof el.focus === 'function') el.focus({ preventScroll: true });
          el.dispatchEvent(new PointerEvent('pointerup', init));
          el.dispatchEvent(new MouseEvent('mouseup', init));
          el.click();
        });
        return { ok: true, navigating };
      }

      case 'type': {
        const t = target(args);
        if (t.error) return fail(t.error);
        const el = t.el;
        const text = String(args.text ?? '');
        if (el instanceof HTMLSelectElement) {
          // Typing into a select picks the option with that label or value.
          const option = Array.from(el.options).find((o) => o.text.trim() === text.trim() || o.value === text);
          if (!option) return fail(`No option ${JSON.stringify(text)} in this select`);
          if (el.disabled) return fail('Element is not editable');
          el.value = option.value;
          el.dispatchEvent(new Event('input', { bubbles: true }));
          el.dispatchEvent(new Event('change', { bubbles: true }));
          return { ok: true, navigating: false };
        }
        const editable = (el instanceof HTMLInputElement || el instanceof HTMLTextAreaElement);
        if (!editable && !el.isContentEditable) return fail('Element does not accept text');
        if (el.disabled || el.readOnly) return fail('Element is not editable');
        el.scrollIntoView({ block: 'center', behavior: 'instant' });
        el.focus({ preventScroll: true });
        const append = args.mode === 'append';
        if (editable) {
          setValue(el, append ? el.value + text : text);
        } else {
          el.textContent = append ? el.textContent + text : text;
        }
        el.dispatchEvent(new InputEvent('input', { bubbles: true, data: text, inputType: 'insertText' }));
        el.dispatchEvent(new Event('change', { bubbles: true }));
        let navigating = false;
        // submit travels as the string "true" or "false" on the agent protocol.
        if (args.submit === true || args.submit === 'true') {
          navigating = await watchNavigation(() => pressKey(el, 'Enter', {}));
        }
        return { ok: true, navigating };
      }

      case 'press': {
        const key = typeof args.key === 'string' && args.key !== '' ? args.key : 'Enter';
        const mods = parseModifiers(args.modifiers);
        if (mods.error) return fail(mods.error);
        let el;
        if ((args.ref ?? '') !== '' || (args.selector ?? '') !== '') {
          const t = target(args);
          if (t.error) return fail(t.error);
          el = t.el;
          if (typeof el.focus === 'function') el.focus({ preventScroll: true });
        } else {
          el = document.activeElement || document.body;
        }
        const navigating = await watchNavigation(() => pressKey(el, key, mods.m));
        return { ok: true, navigating };
      }

      case 'scroll': {
        const dir = args.direction || 'down';
        const amount = Number.isFinite(args.amountPx) && args.amountPx > 0 ? args.amountPx : Math.round(innerHeight * 0.8);
        const scroller = document.scrollingElement || document.documentElement;
        switch (dir) {
          case 'down': scroller.scrollBy({ top: amount, behavior: 'instant' }); break;
          case 'up': scroller.scrollBy({ top: -amount, behavior: 'instant' }); break;
          case 'top': scroller.scrollTo({ top: 0, behavior: 'instant' }); break;
          case 'bottom': scroller.scrollTo({ top: scroller.scrollHeight, behavior: 'instant' }); break;
          case 'to_ref': {
            const t = target(args);
            if (t.error) return fail(t.error);
            t.el.scrollIntoView({ block: 'center', behavior: 'instant' });
            break;
          }
          default:
            return fail(`Unknown scroll direction ${JSON.stringify(String(dir))} (use up, down, top, bottom, to_ref)`);
        }
        return { ok: true, scrollX: Math.round(scrollX), scrollY: Math.round(scrollY) };
      }

      case 'extract': {
        const which = args.refs === undefined || args.refs === null || args.refs === '' ? 'visible' : args.refs;
        const extracted = [];
        if (which === 'visible' || which === 'all') {
          const live = Array.from(state.refs).filter(([, el]) => el.isConnected);
          const shows = which === 'visible' ? await viewportTest(live.map(([, el]) => el)) : () => true;
          for (const [ref, el] of live) {
            if (!shows(el, bboxOf(el))) continue;
            extracted.push(extractOne(ref, el));
          }
          if (state.refs.size === 0 && globalThis.top === globalThis) {
            // No snapshot yet: the page's text is still worth returning.
            extracted.push({ ref: '', text: clean(document.body ? safeText(document.body) : '', MAX_TEXT * 10) });
          }
        } else {
          const list = Array.isArray(which) ? which : String(which).split(',');
          for (const raw of list) {
            const ref = String(raw).trim();
            if (!ref) continue;
            const t = byRef(ref);
            if (t.error) return fail(t.error);
            extracted.push(extractOne(ref, t.el));
          }
        }
        return { ok: true, extracted };
      }

      case 'read': {
        const t = bySelector(args.selector);
        if (t.error) return fail(t.error);
        return { ok: true, content: readText(t.el) };
      }

      case 'paint':
        // Resolves once the page has rendered a frame since the call (two
        // animation frames), or after 1 s in a tab that does not render.
        await new Promise((resolve) => {
          const timer = setTimeout(resolve, 1000);
          requestAnimationFrame(() => requestAnimationFrame(() => {
            clearTimeout(timer);
            resolve();
          }));
        });
        return { ok: true };

      case 'info':
        return { ok: true, url: location.href, title: document.title, readyState: document.readyState };

      default:
        return fail(`Unknown page operation ${op}`);
    }
  } catch (e) {
    return fail(String((e && e.message) || e));
  }
}

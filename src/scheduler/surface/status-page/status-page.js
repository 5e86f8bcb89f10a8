(() => {
  performance.mark('svcsync-script');
  const $ = (s) => document.querySelector(s),
    $$ = (s) => [...document.querySelectorAll(s)];
  const orgs = $$('details.org'),
    box = $('#filter'),
    canvas = $('#map'),
    tip = $('#tip');
  const streams = canvas.dataset.streams ? canvas.dataset.streams.split(',') : [];
  const NAMES = { F: 'fresh', L: 'late', S: 'stale', X: 'failed', N: 'never synced', U: 'not scheduled', '.': 'not synced here' };
  const COLORS = { F: '#2f9e55', L: '#e0a100', S: '#e8590c', X: '#c92a2a', N: '#adb5bd', U: '#d0d7de', '.': '#ffffff' };
  let state = new URLSearchParams(location.search).get('state') || '';
  // Counts in the reader's locale: the server grouped them the English way ("12,345"), not knowing it.
  // Only those that change are written: 3,000 text nodes replaced cost a quarter of a second at 1,000 organizations.
  const num = new Intl.NumberFormat().format;
  for (const d of $$('data[value]')) {
    const t = num(Number(d.value));
    if (d.textContent !== t) d.textContent = t;
  }

  // The local time on hover, worked out when first hovered (thousands of times on a fleet's page).
  document.addEventListener('mouseover', (ev) => {
    const t = ev.target.closest && ev.target.closest('time[datetime]');
    if (t && !t.title) t.title = new Date(t.getAttribute('datetime')).toLocaleString();
  });
  function rel(ms) {
    const s = Math.max(0, Math.round(Math.abs(ms) / 1000));
    let a = Math.round(s / 86400) + ' d';
    if (s < 90) a = s + ' s';
    else if (s < 5400) a = Math.round(s / 60) + ' min';
    else if (s < 129600) a = Math.round(s / 3600) + ' h';
    return ms < -1000 ? 'in ' + a : a + ' ago';
  }
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    for (const k of kids) if (k !== null && k !== undefined && k !== '') e.append(k);
    return e;
  }
  const when = (iso, now) => el('time', { datetime: iso }, rel(now - Date.parse(iso)));
  const nameOf = (d) => d.querySelector('summary b:nth-of-type(2)').textContent;

  function matches(d, q) {
    if (state && d.dataset.state !== state) return false;
    if (!q) return true;
    const m = /^stream:(\S+)$/.exec(q);
    if (m) {
      const c = d.dataset.f[streams.indexOf(m[1])];
      return c !== undefined && c !== 'F' && c !== '.';
    }
    return d.querySelector('summary').textContent.toLowerCase().includes(q);
  }
  function apply() {
    const q = box.value.trim().toLowerCase();
    let n = 0;
    for (const d of orgs) {
      const show = matches(d, q);
      d.hidden = !show;
      if (show) n++;
    }
    $('#shown').textContent = n === orgs.length ? '' : num(n) + ' of ' + num(orgs.length) + ' shown';
    for (const b of $$('#states .chip')) b.setAttribute('aria-pressed', String((b.dataset.state || '') === state));
    const u = new URLSearchParams();
    if (box.value) u.set('q', box.value);
    if (state) u.set('state', state);
    history.replaceState(null, '', location.pathname + (u.toString() ? '?' + u : ''));
  }

  // An organization's streams, from /status.json, when it is opened. The columns are a list so that one more is one more entry.
  const COLUMNS = [
    ['stream', (s) => s.stream],
    [
      'last success',
      (s, c, now) => [s.lastSuccessAt ? when(s.lastSuccessAt, now) : 'never', c !== 'F' && c !== 'N' ? ' (' + NAMES[c] + ')' : ''],
    ],
    ['rows', (s) => num(s.rows), 'num'],
    ['history', (s) => (s.history ? (s.history.on ? 'on' : 'off') + ' · ' + num(s.history.versions) + ' versions' : '—')],
    [
      'last run',
      (s) => [
        [
          s.lastStatus || 'never run',
          s.inProgress,
          s.pending ? num(s.pending) + ' pending' : null,
          s.deleted ? num(s.deleted) + ' deleted' : null,
        ]
          .filter(Boolean)
          .join(' · '),
        s.lastError && s.lastStatus !== 'ok' ? el('div', { class: 'err' }, s.lastError) : null,
        s.drift.length
          ? el(
              'div',
              { class: 'sub' },
              'drift: ' + s.drift.length + ' field(s) the catalog does not know: ' + s.drift.slice(0, 3).join(', '),
            )
          : null,
      ],
    ],
  ];
  function detail(doc, o, codes) {
    const live = doc.daemon,
      now = Date.parse(doc.generatedAt);
    const mine = (x) => x.connection === o.connection && x.organizationId === o.organizationId;
    const conn = doc.connections.find((c) => c.connection === o.connection);
    let hooks = conn && conn.webhooks ? 'on' : 'off';
    const fell = conn && conn.webhooks && live ? live.hookFallbacks.find(mine) : null;
    const due = conn && conn.webhooks && live ? live.hookRunsDue.find(mine) : null;
    if (fell) hooks += ' — fell back to the schedule: ' + fell.reason;
    else if (due) hooks += ' — run due ' + due.at;
    const short = (id) => id.split('/').slice(2).join('/');
    const running = live ? live.running.filter(mine).map((r) => short(r.job)) : [];
    const runs = live ? live.nextRuns.filter(mine).map((r) => ({ at: r.at, job: short(r.job) })) : o.nextRuns;
    const next = runs.sort((a, b) => (a.at < b.at ? -1 : 1))[0];
    const p = o.projectedToday;
    const meta = el(
      'p',
      { class: 'sub' },
      o.families.join(', ') +
        ' · requests today ' +
        num(o.requestsToday) +
        ' of ' +
        num(o.budget) +
        ', ' +
        num(o.budgetLeft) +
        ' left' +
        (p ? ', about ' + num(p.requests) + ' by the end of the quota day' : '') +
        (p && !p.fits ? ' (over the budget: runs will be skipped)' : '') +
        (o.blockedUntil ? ' · quota spent until ' + o.blockedUntil : '') +
        ' · next run ',
      next ? when(next.at, now) : '—',
      next ? ' (' + next.job + ')' : '',
      ' · running ' + (running.join(', ') || 'nothing') + ' · webhooks ' + hooks,
    );
    const head = el('tr', {}, ...COLUMNS.map(([h, , cls]) => el('th', cls ? { class: cls } : {}, h)));
    const rows = o.streams.map((s) => {
      const c = codes[streams.indexOf(s.stream)] || '.';
      return el(
        'tr',
        { 'data-stream': s.stream, 'data-freshness': NAMES[c] },
        ...COLUMNS.map(([, f, cls], i) => {
          // The last success takes the stream's freshness colour.
          const k = i === 1 ? 'f-' + c : cls;
          return el('td', k ? { class: k } : {}, ...[].concat(f(s, c, now)));
        }),
      );
    });
    return el('div', {}, meta, el('table', { class: 'streams' }, el('thead', {}, head), el('tbody', {}, ...rows)));
  }
  async function load(d) {
    if (d.dataset.loaded) return;
    d.dataset.loaded = 'loading';
    let out = d.querySelector('.detail');
    if (!out) d.append((out = el('div', { class: 'detail' }, 'Loading the streams…')));
    try {
      const q = new URLSearchParams({ connection: d.dataset.c, organization: d.dataset.id });
      const r = await fetch('status.json?' + q);
      if (!r.ok) throw new Error('HTTP ' + r.status);
      const doc = await r.json();
      const o = doc.organizations[0];
      if (!o) throw new Error('the warehouse no longer lists it');
      out.replaceChildren(detail(doc, o, d.dataset.f));
      d.dataset.loaded = 'yes';
    } catch (e) {
      out.textContent = 'Could not load the streams: ' + e.message;
      delete d.dataset.loaded;
    }
  }

  // The heat map (organizations × streams) and the budget bars beneath it, one column per organization, in bands as wide as the page.
  const LABEL = 170,
    CELL = streams.length > 30 ? 7 : 12,
    BARS = 40,
    GAP = 16;
  let geo = null;
  function draw() {
    const n = orgs.length,
      m = streams.length,
      W = Math.max(360, canvas.parentElement.clientWidth);
    const cw = Math.max(2, Math.min(24, Math.floor((W - LABEL) / Math.max(1, n))));
    const per = Math.max(1, Math.floor((W - LABEL) / cw)),
      bands = Math.max(1, Math.ceil(n / per));
    const band = m * CELL + 6 + BARS + GAP,
      H = n ? bands * band : 0,
      dpr = window.devicePixelRatio || 1;
    canvas.width = W * dpr;
    canvas.height = H * dpr;
    canvas.style.width = W + 'px';
    canvas.style.height = H + 'px';
    geo = { cw, per, bands, band, m, n };
    Object.assign(canvas.dataset, { cw, per, bands, band, cell: CELL, label: LABEL, bars: BARS });
    const g = canvas.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.font = '10px system-ui,sans-serif';
    g.textBaseline = 'middle';
    const scale = BARS / 1.25,
      w = cw > 3 ? cw - 1 : cw;
    for (let b = 0; b < bands; b++) {
      const y0 = b * band,
        yb = y0 + m * CELL + 6,
        last = Math.min(n, (b + 1) * per);
      g.fillStyle = '#444';
      for (let j = 0; j < m; j++) g.fillText(streams[j], 0, y0 + j * CELL + CELL / 2, LABEL - 6);
      g.fillText('requests today', 0, yb + BARS / 2, LABEL - 6);
      for (let i = b * per; i < last; i++) {
        const d = orgs[i].dataset,
          x = LABEL + (i - b * per) * cw;
        for (let j = 0; j < m; j++) {
          g.fillStyle = COLORS[d.f[j]] || '#fff';
          g.fillRect(x, y0 + j * CELL, w, CELL - 1);
        }
        const budget = +d.b,
          share = budget > 0 ? +d.u / budget : 0,
          h = Math.min(1.25, share) * scale;
        g.fillStyle = barColour('blocked' in d, share);
        g.fillRect(x, yb + BARS - h, w, h);
        if (d.p !== undefined && budget > 0) {
          g.fillStyle = +d.p > budget ? '#c92a2a' : '#222';
          g.fillRect(x, yb + BARS - Math.min(1.25, +d.p / budget) * scale - 1, w, 2);
        }
      }
      g.fillStyle = '#888';
      g.fillRect(LABEL, yb + BARS - scale, (last - b * per) * cw, 1);
    }
    performance.mark('svcsync-map-drawn');
  }
  /** A budget bar's colour, as the list's bars (status-page.ts, barClass): full, high, or within the budget. */
  function barColour(blocked, share) {
    if (blocked || share >= 1) return '#c92a2a';
    return share >= 0.8 ? '#e0a100' : '#4c7bd9';
  }
  function hit(ev) {
    if (!geo) return null;
    const r = canvas.getBoundingClientRect(),
      x = ev.clientX - r.left,
      y = ev.clientY - r.top;
    const b = Math.floor(y / geo.band),
      yIn = y - b * geo.band,
      j = Math.floor(yIn / CELL);
    if (b < 0 || b >= geo.bands) return null;
    if (x < LABEL) return j < geo.m ? { stream: j } : null;
    const col = Math.floor((x - LABEL) / geo.cw),
      i = b * geo.per + col;
    if (col >= geo.per || i >= geo.n) return null;
    return { org: i, stream: j < geo.m ? j : null };
  }
  canvas.addEventListener('mousemove', (ev) => {
    const h = hit(ev);
    if (!h) {
      tip.hidden = true;
      return;
    }
    if (h.org === undefined) tip.textContent = streams[h.stream] + ': click to show the organizations where it is not fresh';
    else {
      const d = orgs[h.org].dataset;
      tip.textContent =
        nameOf(orgs[h.org]) +
        ' — ' +
        (h.stream !== null
          ? streams[h.stream] + ': ' + NAMES[d.f[h.stream]]
          : num(+d.u) +
            ' of ' +
            num(+d.b) +
            ' requests today' +
            (d.p !== undefined ? ', about ' + num(+d.p) + ' by the end of the day' : ''));
    }
    const f = canvas.parentElement.getBoundingClientRect();
    tip.style.left = ev.clientX - f.left + 12 + 'px';
    tip.style.top = ev.clientY - f.top + 12 + 'px';
    tip.hidden = false;
  });
  canvas.addEventListener('mouseleave', () => {
    tip.hidden = true;
  });
  canvas.addEventListener('click', (ev) => {
    const h = hit(ev);
    if (!h) return;
    state = '';
    if (h.org === undefined) {
      box.value = 'stream:' + streams[h.stream];
      apply();
      return;
    }
    const d = orgs[h.org];
    box.value = d.dataset.id;
    apply();
    d.open = true;
    d.scrollIntoView({ block: 'nearest' });
  });

  for (const b of $$('#states .chip'))
    b.addEventListener('click', () => {
      state = b.dataset.state || '';
      apply();
    });
  box.addEventListener('input', apply);
  $('#list').addEventListener(
    'toggle',
    (ev) => {
      if (ev.target.open) load(ev.target);
    },
    true,
  );
  // After the page's own reload: the organizations that were open, and where the page was scrolled.
  const kept = JSON.parse(sessionStorage.getItem('svcsync-reload') || 'null');
  sessionStorage.removeItem('svcsync-reload');
  if (kept) for (const d of orgs) if (kept.open.includes(d.dataset.c + '/' + d.dataset.id)) d.open = true;
  apply();
  draw();
  if (kept) scrollTo(0, kept.y);
  performance.mark('svcsync-ready');
  let resized;
  addEventListener('resize', () => {
    clearTimeout(resized);
    resized = setTimeout(draw, 100);
  });
  setTimeout(() => {
    const open = orgs.filter((d) => d.open).map((d) => d.dataset.c + '/' + d.dataset.id);
    sessionStorage.setItem('svcsync-reload', JSON.stringify({ open, y: scrollY }));
    location.reload();
  }, 60000);
})();

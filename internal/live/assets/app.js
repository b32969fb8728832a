// The live page: plain JS over the page's own JSON API (/api/v1/...). Every text is set with
// textContent: nothing from the API is parsed as HTML.
"use strict";

(function () {
  const errors = document.getElementById("page-errors");
  function pageError(msg) {
    const li = document.createElement("li");
    li.textContent = String(msg);
    errors.appendChild(li);
  }
  // The page's own error collector: what went wrong shows on the page (and a test reads it).
  window.addEventListener("error", (e) => pageError(e.message || e));
  window.addEventListener("unhandledrejection", (e) => pageError(e.reason));

  const REFRESH_MS = 5000;
  const charts = {};
  // The run in the link's fragment. Any fragment is taken: one that is not valid percent-encoding
  // (a link cut short, typed by hand) is taken as written rather than stopping the page.
  function fragmentRun() {
    const raw = location.hash.slice(1);
    try {
      return decodeURIComponent(raw);
    } catch (e) {
      return raw;
    }
  }
  let selected = fragmentRun();
  // encodeURIComponent throws on a lone surrogate, which a JSON string may hold.
  function encodeRun(id) {
    try {
      return encodeURIComponent(id);
    } catch (e) {
      return encodeURIComponent(id.toWellFormed());
    }
  }

  function el(tag, text, cls) {
    const e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = text;
    if (cls) e.className = cls;
    return e;
  }
  function fmt(n) {
    if (n === null || n === undefined) return "–";
    if (Number.isInteger(n)) return String(n);
    return n.toFixed(Math.abs(n) >= 100 ? 0 : 2);
  }
  function usd(n) {
    if (n === null || n === undefined) return "–";
    return "$" + n.toFixed(Math.abs(n) >= 1 ? 2 : 4);
  }
  function bytes(n) {
    if (n === null || n === undefined) return "–";
    return (n / 1048576).toFixed(1) + " MiB";
  }
  // table fills t with a header row and one row per item; a column is [title, fn, numeric].
  function table(t, cols, items, rowClass) {
    t.replaceChildren();
    const head = el("tr");
    for (const [title, , num] of cols) head.appendChild(el("th", title, num ? "n" : ""));
    t.appendChild(head);
    if (items.length === 0) {
      const tr = el("tr");
      const td = el("td", "none", "muted");
      td.colSpan = cols.length;
      tr.appendChild(td);
      t.appendChild(tr);
      return;
    }
    for (const it of items) {
      const tr = el("tr", null, rowClass ? rowClass(it) : "");
      for (const [, fn, num, key] of cols) {
        const td = el("td", fn(it), num ? "n" : "");
        if (key) td.dataset.k = key(it);
        tr.appendChild(td);
      }
      t.appendChild(tr);
    }
  }
  async function get(path) {
    const r = await fetch(path, { cache: "no-store" });
    if (r.status === 404) return null;
    if (!r.ok) throw new Error(path + ": " + r.status);
    return r.json();
  }

  function card(k, v, key) {
    const c = el("div", null, "card");
    const val = el("div", v, "v");
    val.dataset.k = key;
    c.append(val, el("div", k, "k"));
    return c;
  }

  function renderRun(run) {
    const cards = document.getElementById("cards");
    cards.replaceChildren(
      card("completed", fmt(run.completed_total), "completed_total"),
      ...["scored", "failed", "omitted"].map((o) => card(o, fmt(run.completed[o] || 0), "completed." + o)),
      card("per minute (last minute)", fmt(run.completed_per_minute), "completed_per_minute"),
      card("in flight", fmt(run.in_flight), "in_flight"),
      card("stalled", fmt(run.stalled), "stalled"),
      card("servers", fmt(run.servers), "servers"));
    table(document.getElementById("failures"), [
      ["kind", (f) => f.name],
      ["rollouts", (f) => fmt(f.value), true, (f) => "failures." + f.name]], run.failures_by_kind);
    // The reward ranges of nemo.gym.rollout.reward.range, with their bounds as the header.
    const ranges = [["negative", "< 0"], ["zero", "0"], ["partial", "(0, 1)"], ["full", "1"], ["above_one", "> 1"]];
    table(document.getElementById("rewards"), [
      ["benchmark", (r) => r.dispatch || "–"],
      ...ranges.map(([g, title]) => [title, (r) => fmt(r.by_range[g] || 0), true, (r) => "rewards." + r.dispatch + "." + g]),
      ["total", (r) => fmt(r.total), true, (r) => "rewards." + r.dispatch + ".total"]], run.rewards);
    table(document.getElementById("tokens"), [
      ["from", (t) => (t.instrument === "gym.model_call.tokens" ? "model calls" : "rollouts")],
      ["type", (t) => t.type],
      ["model or server", (t) => t.model || t.server || "–"],
      ["tokens", (t) => fmt(t.tokens), true, (t) => "tokens." + t.instrument + "." + t.type + "." + (t.model || t.server || "")],
      ["samples", (t) => fmt(t.samples), true]], run.tokens);
    // Cost: shown when price series arrive (the gym receiver's prices), by the collector's formula.
    const costPanel = document.getElementById("cost-panel");
    costPanel.hidden = !run.cost;
    if (run.cost) {
      const c = run.cost;
      const total = document.getElementById("cost-total");
      total.textContent = usd(c.usd) + (c.per_scored_rollout == null ? "" : ", " + usd(c.per_scored_rollout) + " per scored rollout");
      total.dataset.k = "cost.usd";
      table(document.getElementById("cost"), [
        ["model", (m) => m.name || "–"], ["USD", (m) => usd(m.value), true, (m) => "cost." + m.name]], c.by_model);
      table(document.getElementById("cost-unpriced"), [
        ["model without a price", (t) => t.model || "(none named)"], ["type", (t) => t.type],
        ["tokens", (t) => fmt(t.tokens), true]], c.unpriced_tokens);
      table(document.getElementById("cost-prices"), [
        ["model", (p) => p.model], ["token type", (p) => p.token_type],
        ["USD per million", (p) => fmt(p.usd_per_million), true]], c.prices);
    }
    document.getElementById("oldest").textContent = run.oldest_in_flight_age_s == null ? "" :
      "oldest rollout in flight: " + fmt(run.oldest_in_flight_age_s) + " s";
    table(document.getElementById("flight"), [
      ["server", (f) => f.server || "–"], ["stage", (f) => f.stage || "–"],
      ["in flight", (f) => fmt(f.in_flight), true], ["stalled", (f) => fmt(f.stalled), true]],
      run.in_flight_by_stage, (f) => (f.stalled > 0 ? "stalled" : ""));
    const d = (x, f) => (x ? fmt(x[f]) : "–");
    table(document.getElementById("servers"), [
      ["service", (s) => s.service], ["instance", (s) => s.instance], ["host", (s) => s.host || "–"],
      ["loop lag mean ms", (s) => d(s.event_loop_lag_ms, "mean"), true, (s) => "lag_mean." + s.instance],
      ["loop lag p99 ms", (s) => d(s.event_loop_lag_ms, "p99"), true],
      ["GC pauses", (s) => d(s.gc_pause_ms, "count"), true, (s) => "gc_count." + s.instance],
      ["GC pause p99 ms", (s) => d(s.gc_pause_ms, "p99"), true],
      ["memory", (s) => bytes(s.process_memory_bytes ?? (s.process_tree_memory_mib != null ? s.process_tree_memory_mib * 1048576 : null)), true],
      ["CPU %", (s) => fmt(s.cpu_percent ?? s.process_tree_cpu_percent), true],
      ["GPU %", (s) => fmt(s.gpu_utilization_percent), true],
      ["GPU MiB", (s) => fmt(s.gpu_memory_used_mib), true]], run.server_list);
  }

  // rate turns a cumulative series into its rise per minute over the last minute at each
  // point (from the newest point a minute or more before it): steadier than point to point,
  // as a total rises at each export rather than at each point.
  function rate(t, v) {
    const out = [];
    let j = 0;
    for (let i = 0; i < v.length; i++) {
      while (j + 1 < i && t[j + 1] <= t[i] - 60) j++;
      const a = v[j], b = v[i];
      out.push(i === 0 || t[i] - t[j] < 60 || a == null || b == null || b < a ? null : ((b - a) / (t[i] - t[j])) * 60);
    }
    return out;
  }
  // compact writes an axis value short: 1.2M, 35k.
  function compact(n) {
    const a = Math.abs(n);
    if (a >= 1e9) return +(n / 1e9).toFixed(1) + "G";
    if (a >= 1e6) return +(n / 1e6).toFixed(1) + "M";
    if (a >= 1e3) return +(n / 1e3).toFixed(1) + "k";
    return String(+n.toFixed(2));
  }
  const COLORS = ["#1f77b4", "#ff7f0e", "#9467bd", "#8c564b", "#17becf", "#bcbd22", "#7f7f7f"];
  // The series whose meaning has a colour keep it on every chart.
  const NAMED = { scored: "#2ca02c", failed: "#d62728", omitted: "#7f7f7f", stalled: "#d62728", "in flight": "#1f77b4" };
  function renderChart(name, hist, cumulative) {
    const box = document.getElementById("chart-" + name);
    const ch = hist.charts[name] || { series: [] };
    const names = ch.series.map((s) => s.name).join("\u0000");
    const data = [hist.t, ...ch.series.map((s) => (cumulative ? rate(hist.t, s.values) : s.values))];
    let c = charts[name];
    if (c && c.names !== names) {
      c.plot.destroy();
      c = null;
    }
    if (!c) {
      const opts = {
        width: Math.max(box.clientWidth, 300), height: 180,
        series: [{}, ...ch.series.map((s, i) => ({ label: s.name, stroke: (Object.hasOwn(NAMED, s.name) && NAMED[s.name]) || COLORS[i % COLORS.length], spanGaps: false }))],
        axes: [{}, { size: 50, values: (u, vals) => vals.map(compact) }],
      };
      c = charts[name] = { names, plot: new uPlot(opts, data, box) };
    } else {
      c.plot.setData(data);
    }
  }

  async function refresh() {
    const list = await get("api/v1/runs");
    document.getElementById("as-of").textContent = "as of " + new Date(list.as_of).toLocaleTimeString();
    const sel = document.getElementById("run-select");
    const ids = list.runs.map((r) => r.id);
    if (!ids.includes(selected)) selected = ids[0] || "";
    if (sel.dataset.ids !== ids.join("\u0000")) {
      sel.replaceChildren(...list.runs.map((r) => { const o = el("option", r.id); o.value = r.id; return o; }));
      sel.dataset.ids = ids.join("\u0000");
    }
    sel.value = selected;
    document.getElementById("no-runs").hidden = ids.length > 0;
    document.getElementById("run").hidden = ids.length === 0;
    const st = list.status;
    document.getElementById("live-status").textContent =
      `runs kept ${st.runs} of ${st.limits.max_runs}; dropped: ${st.dropped.runs} runs, ${st.dropped.servers} servers, ` +
      `${st.dropped.series} series, ${(st.dropped.non_finite || 0) + (st.dropped.out_of_range || 0)} points not finite or out of range; ` +
      `charts: one point per ${st.limits.resolution_s} s over ${st.limits.horizon_s / 3600} h`;
    const health = get("api/v1/health");
    if (selected) {
      const id = encodeRun(selected);
      const [run, hist] = await Promise.all([get("api/v1/run?id=" + id), get("api/v1/run/history?id=" + id)]);
      if (run) renderRun(run.run);
      if (hist && typeof uPlot !== "undefined") {
        renderChart("completed", hist.history, true);
        renderChart("tokens", hist.history, true);
        renderChart("in_flight", hist.history, false);
      }
    }
    renderHealth((await health).collector);
    document.getElementById("status").textContent = "";
  }

  function renderHealth(c) {
    const t = document.getElementById("health");
    if (!c) {
      table(t, [["", (x) => x]], ["the collector's own metrics are not read (self_metrics is empty)"]);
      return;
    }
    if (c.error) {
      table(t, [["error reading " + c.url, (x) => x]], [c.error]);
      return;
    }
    table(t, [
      ["metric", (f) => f.title],
      ["total", (f) => fmt(f.total), true, (f) => "health." + f.name],
      ["by receiver, exporter or reason", (f) => f.by.map((b) => b.name + " " + fmt(b.value)).join(", ")]],
      c.families);
  }

  async function loop() {
    try {
      await refresh();
    } catch (e) {
      document.getElementById("status").textContent = "update failed: " + e.message;
    }
    setTimeout(loop, REFRESH_MS);
  }
  document.getElementById("run-select").addEventListener("change", (e) => {
    selected = e.target.value;
    location.hash = encodeRun(selected);
    for (const k of Object.keys(charts)) { charts[k].plot.destroy(); delete charts[k]; }
    refresh().catch((e) => pageError(e));
  });
  loop();
})();

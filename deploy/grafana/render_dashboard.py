#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Renders a Grafana dashboard to a PNG without Grafana: every panel's queries run against a
Prometheus server (its HTTP API), drawn with matplotlib in the dashboard's grid layout.

    /usr/bin/python3 deploy/grafana/render_dashboard.py --prometheus http://127.0.0.1:9090 \\
        --minutes 15 --out dashboard.png [--var instance=10.0.0.5:9478] [deploy/grafana/skbnf-dashboard.json]

Why: no Grafana server runs on the build machines, but people reviewing a change and the tests
still need to see the dashboard. Supported: row, timeseries (lines, bars, normal stacking,
byName/byRegexp overrides of stacking/fill/colour/line style, linear or log y axis) and stat
panels; the template
variables a Prometheus dashboard uses ($var, ${var}, [[var]], $__rate_interval, $__interval,
$__range). Panels of another type are drawn as a labelled empty box and reported.

The module is also the library the dashboard test uses to enumerate and expand every query
(`queries()`, `expand()`), so the test and the picture run exactly the same PromQL.
Debian's python3 + python3-matplotlib; standard library otherwise.
"""

import argparse
import json
import math
import re
import sys
import time
import urllib.parse
import urllib.request

GRID_COLS = 24
THEME = {
    "bg": "#111217",
    "panel": "#181b1f",
    "border": "#2c3235",
    "text": "#ccccdc",
    "muted": "#8e8e9a",
    "grid": "#2c3235",
}
# Grafana's classic palette, in order.
PALETTE = ["#73bf69", "#f2cc0c", "#8ab8ff", "#ff780a", "#f2495c", "#5794f2", "#b877d9",
           "#705da0", "#37872d", "#fade2a", "#447ebc", "#c15c17", "#890f02", "#0a437c",
           "#6d1f62", "#584477"]
NAMED_COLOURS = {"green": "#73bf69", "red": "#f2495c", "orange": "#ff9830", "yellow": "#fade2a",
                 "blue": "#5794f2", "purple": "#b877d9", "text": THEME["text"]}


# ---------------------------------------------------------------------------- queries

def panels(dash):
    """Every panel, rows' nested panels included, in dashboard order."""
    for p in dash.get("panels", []):
        yield p
        for q in p.get("panels", []) or []:
            yield q


def queries(dash):
    """(kind, name, expr, target) for every PromQL expression the dashboard runs: panel
    targets ("panel"), query variables ("variable", label_values(...) rewritten to PromQL) and
    Prometheus annotations ("annotation")."""
    out = []
    for p in panels(dash):
        for t in p.get("targets", []) or []:
            if t.get("expr"):
                out.append(("panel", "%s [%s]" % (p.get("title", "?"), t.get("refId", "?")),
                            t["expr"], t))
    for v in dash.get("templating", {}).get("list", []):
        if v.get("type") != "query":
            continue
        q = v.get("query")
        q = q.get("query") if isinstance(q, dict) else q
        out.append(("variable", v["name"], label_values_to_promql(q), v))
    for a in dash.get("annotations", {}).get("list", []):
        if a.get("expr"):
            out.append(("annotation", a.get("name", "?"), a["expr"], a))
    return out


_LABEL_VALUES = re.compile(r"^\s*label_values\(\s*(.*?)\s*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)\s*$")


def label_values_to_promql(q):
    """Grafana's label_values(metric{sel}, label) as the PromQL Grafana effectively asks
    (series matching the selector, grouped by the label)."""
    m = _LABEL_VALUES.match(q)
    if not m:
        return q  # a plain PromQL variable query
    return "count by (%s) (%s)" % (m.group(2), m.group(1))


def all_values(dash):
    """name -> the value Grafana substitutes when a variable is set to "All": its allValue
    (".*" for namespace/pod/node, so series without those labels, e.g. under compose, match)."""
    return {v["name"]: v["allValue"] for v in dash.get("templating", {}).get("list", [])
            if v.get("includeAll") and v.get("allValue")}


def expand(expr, variables=None, rate_interval="1m", interval="15s", range_s=900):
    """Substitutes Grafana's variables. `variables` maps name -> regex value; any other
    dashboard variable becomes ".+" (what the dashboards' "All" means). Pass
    {**all_values(dash), ...} to use each variable's own allValue."""
    variables = variables or {}
    builtins = {"__rate_interval": rate_interval, "__interval": interval,
                "__range": "%ds" % int(range_s), "__range_s": str(int(range_s))}

    def value(name):
        if name in builtins:
            return builtins[name]
        return variables.get(name, ".+")

    expr = re.sub(r"\$\{([a-zA-Z0-9_]+)(?::[a-z]+)?\}", lambda m: value(m.group(1)), expr)
    expr = re.sub(r"\[\[([a-zA-Z0-9_]+)\]\]", lambda m: value(m.group(1)), expr)
    return re.sub(r"\$([a-zA-Z_][a-zA-Z0-9_]*)", lambda m: value(m.group(1)), expr)


class Prometheus:
    def __init__(self, url):
        self.url = url.rstrip("/")

    def _get(self, path, params):
        url = self.url + path + "?" + urllib.parse.urlencode(params)
        try:
            with urllib.request.urlopen(url, timeout=30) as r:
                body = json.loads(r.read().decode())
        except urllib.error.HTTPError as e:  # 400 carries Prometheus' parse error
            body = json.loads(e.read().decode())
        if body.get("status") != "success":
            raise ValueError("%s: %s" % (body.get("errorType"), body.get("error")))
        return body["data"]

    def query(self, expr, at=None):
        params = {"query": expr}
        if at is not None:
            params["time"] = "%.3f" % at
        return self._get("/api/v1/query", params)

    def query_range(self, expr, start, end, step):
        return self._get("/api/v1/query_range", {"query": expr, "start": "%.3f" % start,
                                                 "end": "%.3f" % end, "step": "%.3f" % step})


def legend(fmt, metric):
    if not fmt or fmt == "__auto":
        name = metric.get("__name__", "")
        labels = ",".join('%s="%s"' % (k, v) for k, v in sorted(metric.items()) if k != "__name__")
        return "%s{%s}" % (name, labels) if labels else (name or "value")
    return re.sub(r"\{\{\s*([a-zA-Z0-9_]+)\s*\}\}", lambda m: metric.get(m.group(1), ""), fmt)


# ---------------------------------------------------------------------------- units

_SI = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")]
_UNIT_SUFFIX = {"pps": " p/s", "bps": "b/s", "ops": " ops/s", "Bps": "B/s", "bytes": "B"}


def fmt_tick(v, unit="short"):
    """Axis tick: 3 significant digits with an SI prefix (Grafana's axis style)."""
    if unit in ("percentunit", "percent", "s"):
        return fmt_value(v, unit, 0 if unit == "percentunit" else None)
    suffix = _UNIT_SUFFIX.get(unit, "")
    for scale, prefix in _SI:
        if abs(v) >= scale:
            return "%.3g %s%s" % (v / scale, prefix, suffix.strip())
    return "%.3g%s" % (v, suffix)


def fmt_value(v, unit="short", decimals=None):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if unit == "percentunit":
        return "%.*f%%" % (1 if decimals is None else decimals, v * 100)
    if unit == "percent":
        return "%.*f%%" % (1 if decimals is None else decimals, v)
    if unit == "s":
        a = abs(v)
        if a == 0:
            return "0 s"
        for scale, name in ((1, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")):
            if a >= scale:
                return "%.3g %s" % (v / scale, name)
        return "%.3g s" % v
    suffix = _UNIT_SUFFIX.get(unit, "")
    for scale, prefix in _SI:
        if abs(v) >= scale:
            return "%.*f %s%s" % (2 if decimals is None else decimals, v / scale, prefix,
                                  suffix.strip() if suffix else "")
    if decimals is not None:
        return "%.*f%s" % (decimals, v, suffix)
    return ("%.3g" % v) + suffix


# ---------------------------------------------------------------------------- drawing

def _override_props(panel, name):
    props = {}
    for o in panel.get("fieldConfig", {}).get("overrides", []):
        m = o.get("matcher", {})
        hit = ((m.get("id") == "byName" and m.get("options") == name) or
               (m.get("id") == "byRegexp" and re.fullmatch(m.get("options", ""), name)))
        if hit:
            for p in o.get("properties", []):
                props[p["id"]] = p.get("value")
    return props


def _colour(spec, i):
    if isinstance(spec, dict) and spec.get("mode") == "fixed":
        c = spec.get("fixedColor", "text")
        return NAMED_COLOURS.get(c, c)
    return PALETTE[i % len(PALETTE)]


def _threshold_colour(panel, v):
    steps = panel.get("fieldConfig", {}).get("defaults", {}).get("thresholds", {}).get("steps", [])
    colour = THEME["text"]
    for s in steps:
        if s.get("value") is None or (v is not None and not math.isnan(v) and v >= s["value"]):
            colour = NAMED_COLOURS.get(s.get("color"), s.get("color", colour))
    return colour


def fetch_panel(prom, panel, start, end, step, variables, rate_interval):
    """[(legend, [t...], [v...], target)] of one panel over [start, end]."""
    series = []
    for t in panel.get("targets", []) or []:
        if not t.get("expr") or t.get("hide"):
            continue
        expr = expand(t["expr"], variables, rate_interval=rate_interval,
                      interval="%ds" % max(1, int(step)), range_s=end - start)
        data = prom.query_range(expr, start, end, step)
        for r in data["result"]:
            ts = [float(p[0]) for p in r["values"]]
            vs = [float(p[1]) for p in r["values"]]
            series.append((legend(t.get("legendFormat"), r["metric"]), ts, vs, t))
    return series


def draw_timeseries(ax, panel, series, start, end, step, annotations=None):
    import matplotlib.dates as mdates
    from datetime import datetime, timezone
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    defaults = panel.get("fieldConfig", {}).get("defaults", {})
    custom = defaults.get("custom", {})
    unit = defaults.get("unit", "short")
    # Common time grid, so stacked series add up point by point.
    n = int(round((end - start) / step)) + 1
    grid = [start + i * step for i in range(n)]
    xs = [datetime.fromtimestamp(t, tz=timezone.utc) for t in grid]
    stack_base = [0.0] * n
    for i, (name, ts, vs, _) in enumerate(series):
        by_t = {round((t - start) / step): v for t, v in zip(ts, vs)}
        ys = [by_t.get(k, float("nan")) for k in range(n)]
        props = _override_props(panel, name)
        stacking = props.get("custom.stacking", custom.get("stacking", {})).get("mode", "none")
        fill = props.get("custom.fillOpacity", custom.get("fillOpacity", 0)) / 100.0
        style = props.get("custom.lineStyle", {}).get("fill", "solid")
        colour = _colour(props.get("color", defaults.get("color")), i)
        draw = props.get("custom.drawStyle", custom.get("drawStyle", "line"))
        if stacking == "normal":
            lo = list(stack_base)
            hi = [b + y for b, y in zip(lo, ys)]  # NaN (no sample) leaves a gap, as Grafana
            stack_base = [h if not math.isnan(h) else b for b, h in zip(lo, hi)]
            ax.fill_between(xs, lo, hi, color=colour, alpha=max(fill, 0.15), linewidth=0)
            ax.plot(xs, hi, color=colour, linewidth=1, label=name)
        elif draw == "bars":
            width = step / 86400.0 * 0.8
            ax.bar(xs, [0 if math.isnan(y) else y for y in ys], width=width, color=colour,
                   alpha=max(fill, 0.5), label=name)
        else:
            ax.plot(xs, ys, color=colour, linewidth=1.2,
                    linestyle="--" if style == "dash" else "-", label=name)
            if fill > 0:
                ax.fill_between(xs, 0, ys, color=colour, alpha=fill * 0.5, linewidth=0)
    scale = custom.get("scaleDistribution", {})
    if scale.get("type") == "log":
        # Grafana's log axis: powers of `log` (10); zeros and gaps are not drawn.
        from matplotlib.ticker import LogLocator, NullLocator
        ax.set_yscale("log", base=scale.get("log", 10), nonpositive="mask")
        positive = [v for _, _, vs, _ in series for v in vs if not math.isnan(v) and v > 0]
        if positive:
            ax.set_ylim(min(positive) / 2, max(positive) * 2)
        ax.yaxis.set_major_locator(LogLocator(base=scale.get("log", 10), numticks=6))
        ax.yaxis.set_minor_locator(NullLocator())
    elif "min" in defaults or "max" in defaults:
        ax.set_ylim(defaults.get("min"), defaults.get("max"))
    else:
        finite = [v for _, _, vs, _ in series for v in vs if not math.isnan(v)]
        ax.set_ylim(bottom=0, top=None if finite and max(finite) > 0 else 1)
    ax.set_xlim(xs[0], xs[-1])
    ax.xaxis.set_major_formatter(mdates.DateFormatter("%H:%M" if end - start > 600 else "%H:%M:%S"))
    ax.xaxis.set_major_locator(mdates.AutoDateLocator(minticks=3, maxticks=6))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: fmt_tick(v, unit)))
    if scale.get("type") != "log":
        ax.yaxis.set_major_locator(MaxNLocator(nbins=5))
    for t in annotations or []:
        ax.axvline(datetime.fromtimestamp(t, tz=timezone.utc), color="#ff9830", linewidth=0.8,
                   linestyle=(0, (4, 3)), alpha=0.9)
    ax.grid(True, color=THEME["grid"], linewidth=0.5)
    ax.tick_params(colors=THEME["muted"], labelsize=7)
    for s in ax.spines.values():
        s.set_visible(False)
    if series:
        handles, labels = ax.get_legend_handles_labels()
        keep = min(len(labels), 8)
        leg = ax.legend(handles[:keep], labels[:keep] + ([] if keep == len(labels) else []),
                        loc="upper left", fontsize=6, frameon=False, ncol=2 if keep > 4 else 1,
                        labelcolor=THEME["text"])
        if keep < len(labels):
            leg.set_title("(%d of %d series)" % (keep, len(labels)), prop={"size": 6})
            leg.get_title().set_color(THEME["muted"])


def draw_stat(ax, panel, prom, variables, rate_interval, at):
    defaults = panel.get("fieldConfig", {}).get("defaults", {})
    unit, decimals = defaults.get("unit", "short"), defaults.get("decimals")
    text_mode = panel.get("options", {}).get("textMode", "auto")
    items = []
    for t in panel.get("targets", []) or []:
        if not t.get("expr"):
            continue
        expr = expand(t["expr"], variables, rate_interval=rate_interval)
        for r in prom.query(expr, at)["result"]:
            v = float(r["value"][1])
            items.append((legend(t.get("legendFormat"), r["metric"]), v))
    ax.set_axis_off()
    if not items:
        ax.text(0.5, 0.5, "No data", ha="center", va="center", color=THEME["muted"], fontsize=12,
                transform=ax.transAxes)
        return 0
    n = len(items)
    for i, (name, v) in enumerate(items[:4]):
        y = 1 - (i + 0.5) / min(n, 4)
        if text_mode == "name":
            ax.text(0.5, y, name, ha="center", va="center", color=_threshold_colour(panel, v),
                    fontsize=13 if n == 1 else 10, fontweight="bold", transform=ax.transAxes)
        else:
            if n > 1:
                ax.text(0.03, y, name, ha="left", va="center", color=THEME["muted"], fontsize=7,
                        transform=ax.transAxes)
            ax.text(0.5 if n == 1 else 0.97, y, fmt_value(v, unit, decimals),
                    ha="center" if n == 1 else "right", va="center",
                    color=_threshold_colour(panel, v), fontsize=22 if n == 1 else 12,
                    fontweight="bold", transform=ax.transAxes)
    return n


def annotation_times(dash, prom, start, end, step, variables=None):
    """Start times of the dashboard's Prometheus annotations (each run of consecutive points
    of a series is one event, as Grafana shows it)."""
    times = []
    for a in dash.get("annotations", {}).get("list", []):
        if not a.get("expr") or not a.get("enable", True):
            continue
        expr = expand(a["expr"], variables, rate_interval="%ds" % max(4, int(4 * step)))
        for r in prom.query_range(expr, start, end, step)["result"]:
            last = None
            for t, _ in r["values"]:
                t = float(t)
                if last is None or t - last > step * 1.5:
                    times.append(t)
                last = t
    return sorted(times)


def render(dash, prom, out, minutes=15, variables=None, end=None, width_in=20.0):
    variables = {**all_values(dash), **(variables or {})}
    """Draws the dashboard; returns {panel title: number of series drawn} (rows excluded)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    end = end or time.time()
    start = end - minutes * 60
    step = max(1.0, round((end - start) / 240.0))
    rate_interval = "%ds" % max(60, int(4 * step))  # Grafana: max(4 x scrape, step + scrape)
    if minutes * 60 < 300:
        rate_interval = "%ds" % max(4, int(4 * step))
    all_panels = [p for p in panels(dash)]
    marks = annotation_times(dash, prom, start, end, step, variables)
    rows = max(p["gridPos"]["y"] + p["gridPos"]["h"] for p in all_panels)
    unit_w = width_in / GRID_COLS
    unit_h = 0.36
    title_h = 0.6
    height_in = rows * unit_h + title_h
    fig = plt.figure(figsize=(width_in, height_in), dpi=90, facecolor=THEME["bg"])
    fig.text(0.01, 1 - 0.35 / height_in, dash.get("title", ""), color=THEME["text"], fontsize=14,
             fontweight="bold", va="center")
    fig.text(0.99, 1 - 0.35 / height_in,
             "last %.3g min to %s UTC, from %s; dashed orange: strategy changes "
             "(rendered without Grafana by deploy/grafana/render_dashboard.py)"
             % (minutes, time.strftime("%H:%M:%S", time.gmtime(end)), prom.url), color=THEME["muted"], fontsize=8, ha="right", va="center")
    result = {}
    pad = 0.06
    for p in all_panels:
        g = p["gridPos"]
        x0 = g["x"] * unit_w + pad
        y0 = title_h + g["y"] * unit_h + pad
        w = g["w"] * unit_w - 2 * pad
        h = g["h"] * unit_h - 2 * pad
        fx, fw = x0 / width_in, w / width_in
        fy, fh = 1 - (y0 + h) / height_in, h / height_in
        if p.get("type") == "row":
            fig.text(fx, fy + fh / 2, p.get("title", ""), color=THEME["text"], fontsize=11,
                     fontweight="bold", va="center")
            continue
        box = fig.add_axes([fx, fy, fw, fh])
        box.set_facecolor(THEME["panel"])
        box.set_xticks([])
        box.set_yticks([])
        for s in box.spines.values():
            s.set_color(THEME["border"])
        box.text(0.01, 1 - 0.22 / h, p.get("title", ""), color=THEME["text"], fontsize=9,
                 fontweight="bold", va="center", transform=box.transAxes)
        inner = [fx + 0.45 / width_in, fy + 0.25 / height_in, fw - 0.55 / width_in,
                 fh - 0.6 / height_in]
        ax = fig.add_axes(inner)
        ax.set_facecolor(THEME["panel"])
        title = p.get("title", "?")
        try:
            if p.get("type") == "timeseries":
                series = fetch_panel(prom, p, start, end, step, variables, rate_interval)
                draw_timeseries(ax, p, series, start, end, step, marks)
                if not series:
                    ax.text(0.5, 0.5, "No data", ha="center", va="center", color=THEME["muted"],
                            transform=ax.transAxes)
                result[title] = len(series)
            elif p.get("type") == "stat":
                result[title] = draw_stat(ax, p, prom, variables, rate_interval, end)
            else:
                ax.set_axis_off()
                ax.text(0.5, 0.5, "panel type %r not rendered" % p.get("type"), ha="center",
                        color=THEME["muted"], transform=ax.transAxes)
                result[title] = 0
        except ValueError as e:  # a query Prometheus refused: show it in the panel
            ax.set_axis_off()
            ax.text(0.02, 0.5, "query error: %s" % e, color="#f2495c", fontsize=7, wrap=True,
                    transform=ax.transAxes)
            result[title] = 0
    fig.savefig(out, facecolor=THEME["bg"])
    plt.close(fig)
    return result


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dashboard", nargs="?", default=None,
                    help="dashboard JSON (default: skbnf-dashboard.json beside this script)")
    ap.add_argument("--prometheus", required=True, help="Prometheus base URL")
    ap.add_argument("--out", required=True, help="PNG to write")
    ap.add_argument("--minutes", type=float, default=15, help="time range (default 15)")
    ap.add_argument("--var", action="append", default=[], metavar="NAME=REGEX",
                    help="template variable value (default: all, i.e. .+)")
    args = ap.parse_args(argv)
    path = args.dashboard
    if path is None:
        import os
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "skbnf-dashboard.json")
    with open(path) as f:
        dash = json.load(f)
    variables = {}
    for v in args.var:
        if "=" not in v:
            ap.error("--var wants NAME=REGEX, got %r" % v)
        k, val = v.split("=", 1)
        variables[k] = val
    result = render(dash, Prometheus(args.prometheus), args.out, args.minutes, variables)
    empty = [t for t, n in result.items() if n == 0]
    print("%s: %d panels, %d with data%s" % (args.out, len(result), len(result) - len(empty),
                                             ("; no data: " + ", ".join(empty)) if empty else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())

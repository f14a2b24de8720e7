#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""deploy.dashboard_schema: deploy/grafana/skbnf-dashboard.json type-checks against Grafana's
published schema types (npm @grafana/schema, checked by `tsc --strict`).

The JSON is pasted into a TypeScript file as object literals with declared types, so tsc
checks every field name (excess properties are errors), every value's type and every enum:
  - the dashboard as a whole against `Dashboard` (rows, panels, templating, annotations; the
    Prometheus data source's own annotation fields (expr, step, titleFormat, ...) and a query
    variable's `definition` are declared here, @grafana/schema does not publish them);
  - each panel's `options` and `fieldConfig` against its plugin's published types
    (timeseries: TimeSeries Options + FieldConfig; stat: Stat Options);
  - each target against the Prometheus query model (refId, expr, legendFormat, ...), written
    here because @grafana/schema does not publish the Prometheus data source's query type.
Grafana's string enums (e.g. LegendDisplayMode) are accepted as their string values, as in
JSON (`Json<T>` below). A panel type without published types fails the test, so a new panel
type gets checked or a deliberate exception.

Environment: SKBNF_NODE_DIR (default /var/cache/skbnf/node; deploy/deps.sh installs there).
Also runs a negative control: a copy with a misspelt field and a bad enum must fail tsc.
And no query applies rate()/increase() to a snapshot histogram (rules_check.py's check, with
its planted violations): the in-flight age buckets are used as gauges.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from rules_check import check_rated_snapshot_histograms, rated_snapshot_histograms  # noqa: E402
DASHBOARD = os.path.join(ROOT, "deploy", "grafana", "skbnf-dashboard.json")
NODE_DIR = os.environ.get("SKBNF_NODE_DIR", "/var/cache/skbnf/node")
TSC = os.path.join(NODE_DIR, "node_modules", ".bin", "tsc")
CFG = "@grafana/schema/dist/esm/raw/composable/%s/panelcfg/x/%sPanelCfg_types.gen"

PREAMBLE = """\
import type { AnnotationQuery, Dashboard, FieldConfigSource, Panel, VariableModel } from '@grafana/schema';
import type * as TimeSeries from '%s';
import type * as Stat from '%s';

// JSON spelling of a schema type: string enums as their values, the rest unchanged.
type Json<T> = T extends string ? `${T}`
  : T extends number | boolean | null | undefined ? T
  : T extends Array<infer U> ? Array<Json<U>>
  : T extends object ? { [K in keyof T]: Json<T[K]> }
  : T;

// Grafana's Prometheus data source query model (public/app/plugins/datasource/prometheus).
interface PromQuery {
  refId: string;
  expr: string;
  datasource?: { type?: string; uid?: string };
  legendFormat?: string;
  range?: boolean;
  instant?: boolean;
  format?: 'time_series' | 'table' | 'heatmap';
  editorMode?: 'code' | 'builder';
  interval?: string;
  intervalFactor?: number;
  exemplar?: boolean;
  hide?: boolean;
}

// Fields the Prometheus data source adds to an annotation and a query variable.
interface PromAnnotationFields {
  expr?: string;
  step?: string;
  titleFormat?: string;
  textFormat?: string;
  tagKeys?: string;
  useValueForTime?: boolean;
}
interface PromVariableFields {
  definition?: string;
}

type PromDashboard = Json<Omit<Dashboard, 'annotations' | 'templating'>> & {
  annotations?: { list?: Array<Json<AnnotationQuery> & PromAnnotationFields> };
  templating?: { list?: Array<Json<VariableModel> & PromVariableFields> };
};

type Typed<O, F> = Json<Omit<Panel, 'options' | 'fieldConfig' | 'targets'>> & {
  options: Json<O>;
  fieldConfig: Json<FieldConfigSource<F>>;
  targets: PromQuery[];
};
""" % (CFG % ("timeseries", "TimeSeries"), CFG % ("stat", "Stat"))

PANEL_TYPES = {
    "timeseries": "Typed<TimeSeries.Options, TimeSeries.FieldConfig>",
    "stat": "Typed<Stat.Options, {}>",
}


def typescript_for(dash):
    out = [PREAMBLE, "export const dashboard: PromDashboard = %s;\n" % json.dumps(dash, indent=2)]
    n = 0
    for p in dash.get("panels", []):
        for q in [p] + list(p.get("panels", []) or []):
            if q.get("type") == "row":
                continue
            t = PANEL_TYPES.get(q.get("type"))
            if t is None:
                raise AssertionError("panel %r: type %r has no schema check here"
                                     % (q.get("title"), q.get("type")))
            out.append("export const panel_%d: %s = %s;\n" % (q.get("id", n), t,
                                                              json.dumps(q, indent=2)))
            n += 1
    return "\n".join(out), n


def tsc(source):
    """Runs tsc --strict --noEmit on one file; returns (exit code, output)."""
    d = tempfile.mkdtemp(prefix="dashboard-schema-", dir=NODE_DIR)  # finds ../node_modules
    try:
        with open(os.path.join(d, "dashboard.ts"), "w") as f:
            f.write(source)
        with open(os.path.join(d, "tsconfig.json"), "w") as f:
            json.dump({"compilerOptions": {
                "strict": True, "noEmit": True, "target": "es2022", "module": "esnext",
                "moduleResolution": "bundler", "skipLibCheck": True,
                "exactOptionalPropertyTypes": False, "types": []},
                "files": ["dashboard.ts"]}, f)
        p = subprocess.run([TSC, "-p", d], capture_output=True, text=True, timeout=300)
        return p.returncode, p.stdout + p.stderr
    finally:
        shutil.rmtree(d, ignore_errors=True)


class DashboardSchemaTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.access(TSC, os.X_OK):
            raise RuntimeError("%s missing: run deploy/deps.sh (npm typescript, @grafana/schema)"
                               % TSC)
        with open(DASHBOARD) as f:
            cls.dash = json.load(f)

    def test_dashboard_matches_grafana_schema(self):
        src, n = typescript_for(self.dash)
        self.assertGreaterEqual(n, 20)
        code, out = tsc(src)
        self.assertEqual(code, 0, "tsc found schema errors:\n" + out)

    def test_schema_check_catches_mistakes(self):
        # negative control: the check must be able to fail
        bad = json.loads(json.dumps(self.dash))
        panel = next(p for p in bad["panels"] if p["type"] == "timeseries")
        panel["options"]["legend"]["displayMode"] = "sideways"  # not a LegendDisplayMode
        panel["gridPos"]["width"] = 3  # misspelt field
        panel["targets"][0]["expresion"] = "up"  # misspelt query field
        bad["graphTooltip"] = "shared"  # wrong type
        src, _ = typescript_for(bad)
        code, out = tsc(src)
        self.assertNotEqual(code, 0)
        for needle in ("sideways", "width", "expresion", "DashboardCursorSync"):
            self.assertIn(needle, out)

    def test_snapshot_histograms_are_not_rated(self):
        self.assertEqual(check_rated_snapshot_histograms(), [], "the check misjudges these")
        exprs = [t["expr"] for p in self.dash.get("panels", [])
                 for q in [p] + list(p.get("panels", []) or []) for t in q.get("targets", [])]
        self.assertTrue(any("skbnf_pool_inflight_age_seconds" in e for e in exprs),
                        "no panel shows the in-flight ages: the check below checks nothing")
        rated = [c for e in exprs for c in rated_snapshot_histograms(e)]
        self.assertEqual(rated, [], "a snapshot histogram's buckets go down as well as up: "
                                    "use them as gauges")


if __name__ == "__main__":
    unittest.main(verbosity=2)

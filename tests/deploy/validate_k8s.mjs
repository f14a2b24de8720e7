// Validates Kubernetes manifests (a JSON array of objects, from the file named by argv[2])
// against the published models: npm kubernetes-models (core, apps, ...) and
// @kubernetes-models/prometheus-operator (ServiceMonitor, PrometheusRule) and
// @kubernetes-models/cert-manager (Certificate). The Multus
// NetworkAttachmentDefinition (no published model) is checked against its CRD's schema here:
// spec.config must be a string holding a CNI config object with cniVersion, name and type.
// Prints one line per problem; exit 1 if any. Run from a directory that sees node_modules
// (the test copies this file into $SKBNF_NODE_DIR).
import { readFileSync } from "node:fs";

const docs = JSON.parse(readFileSync(process.argv[2], "utf8"));
const groups = {
  "v1": "kubernetes-models/v1",
  "apps/v1": "kubernetes-models/apps/v1",
  "batch/v1": "kubernetes-models/batch/v1",
  "rbac.authorization.k8s.io/v1": "kubernetes-models/rbac.authorization.k8s.io/v1",
  "policy/v1": "kubernetes-models/policy/v1",
  "networking.k8s.io/v1": "kubernetes-models/networking.k8s.io/v1",
  "monitoring.coreos.com/v1": "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1",
  // generated from cert-manager's CRDs (Certificate: deploy/crds/crd-certificates.yaml)
  "cert-manager.io/v1": "@kubernetes-models/cert-manager/cert-manager.io/v1",
};

function checkNad(doc) {
  const errs = [];
  const spec = doc.spec;
  if (!spec || typeof spec !== "object") return ["spec missing"];
  for (const k of Object.keys(spec)) if (k !== "config") errs.push(`spec.${k}: unknown field`);
  if (typeof spec.config !== "string") return errs.concat(["spec.config must be a string"]);
  let cni;
  try { cni = JSON.parse(spec.config); } catch (e) { return errs.concat([`spec.config: not JSON: ${e.message}`]); }
  for (const k of ["cniVersion", "name", "type"]) {
    if (typeof cni[k] !== "string" || !cni[k]) errs.push(`spec.config.${k} missing`);
  }
  if (cni.name !== doc.metadata?.name) errs.push(`spec.config.name ${cni.name} != metadata.name`);
  return errs;
}

let bad = 0;
for (const doc of docs) {
  const where = `${doc.apiVersion}/${doc.kind} ${doc.metadata?.name}`;
  let errs = [];
  if (!doc.metadata?.name) errs.push("metadata.name missing");
  if (doc.apiVersion === "k8s.cni.cncf.io/v1" && doc.kind === "NetworkAttachmentDefinition") {
    errs = errs.concat(checkNad(doc));
  } else if (groups[doc.apiVersion]) {
    let mod;
    try {
      mod = await import(`${groups[doc.apiVersion]}/${doc.kind}`);
    } catch (e) {
      errs.push(`no model for ${doc.apiVersion} ${doc.kind}: ${e.message}`);
    }
    if (mod) {
      try {
        new mod[doc.kind](doc).validate();
      } catch (e) {
        errs.push(e.message);
      }
    }
  } else {
    errs.push(`unknown apiVersion ${doc.apiVersion}`);
  }
  for (const e of errs) console.log(`${where}: ${e}`);
  bad += errs.length;
  if (!errs.length) console.log(`ok ${where}`);
}
process.exit(bad ? 1 : 0);

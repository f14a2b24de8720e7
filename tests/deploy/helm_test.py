#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""deploy.helm: the chart helm/skbnf lints, renders and validates, and refuses bad values.

  - `helm lint --strict` with the default values and every file in tests/deploy/helm/;
  - `helm template` for the default values and each file (DaemonSet, af_packet without SR-IOV,
    ServiceMonitor + rules + dashboard, TLS); every rendered manifest is validated against the
    Kubernetes and prometheus-operator models (npm kubernetes-models,
    @kubernetes-models/prometheus-operator: runtime schema validation, and their TypeScript
    types through `tsc --strict`, which also rejects unknown fields), and the scenario's
    promises are asserted (kind, capabilities, resources, probes, arguments, ...);
  - the PrometheusRule and the dashboard ConfigMap carry exactly deploy/prometheus/
    skbnf-rules.yaml and deploy/grafana/skbnf-dashboard.json, also in the packaged chart
    (`helm package` resolves files/' links);
  - bad values fail at install with a message naming the field (values.schema.json).
Environment: SKBNF_NODE_DIR (helm, tsc and the models; deploy/deps.sh installs them).
"""

import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import textwrap
import unittest

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CHART = os.path.join(ROOT, "helm", "skbnf")
VALUES_DIR = os.path.join(HERE, "helm")
# The user-facing values files shipped with the chart: rendered, linted and validated too.
EXAMPLES_DIR = os.path.join(CHART, "examples")
NODE_DIR = os.environ.get("SKBNF_NODE_DIR", "/var/cache/skbnf/node")
HELM = os.path.join(NODE_DIR, "node_modules", ".bin", "helm")
TSC = os.path.join(NODE_DIR, "node_modules", ".bin", "tsc")
KUBE_VERSION = "1.29.0"
RULES = os.path.join(ROOT, "deploy", "prometheus", "skbnf-rules.yaml")
DASHBOARD = os.path.join(ROOT, "deploy", "grafana", "skbnf-dashboard.json")

# TypeScript types of each rendered kind (module, interface).
TS_TYPES = {
    ("v1", "ServiceAccount"): ("kubernetes-models/v1/ServiceAccount", "IServiceAccount"),
    ("v1", "ConfigMap"): ("kubernetes-models/v1/ConfigMap", "IConfigMap"),
    ("v1", "Service"): ("kubernetes-models/v1/Service", "IService"),
    ("apps/v1", "Deployment"): ("kubernetes-models/apps/v1/Deployment", "IDeployment"),
    ("apps/v1", "DaemonSet"): ("kubernetes-models/apps/v1/DaemonSet", "IDaemonSet"),
    ("monitoring.coreos.com/v1", "ServiceMonitor"):
        ("@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor",
         "IServiceMonitor"),
    ("policy/v1", "PodDisruptionBudget"):
        ("kubernetes-models/policy/v1/PodDisruptionBudget", "IPodDisruptionBudget"),
    ("monitoring.coreos.com/v1", "PrometheusRule"):
        ("@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule",
         "IPrometheusRule"),
    ("networking.k8s.io/v1", "NetworkPolicy"):
        ("kubernetes-models/networking.k8s.io/v1/NetworkPolicy", "INetworkPolicy"),
    # generated from cert-manager's Certificate CRD (npm @kubernetes-models/cert-manager)
    ("cert-manager.io/v1", "Certificate"):
        ("@kubernetes-models/cert-manager/cert-manager.io/v1/Certificate", "ICertificate"),
}
NAD_TS = """
// Multus NetworkAttachmentDefinition (k8s.cni.cncf.io/v1), from its CRD.
interface INetworkAttachmentDefinition {
  apiVersion: 'k8s.cni.cncf.io/v1';
  kind: 'NetworkAttachmentDefinition';
  metadata: import('@kubernetes-models/apimachinery/apis/meta/v1/ObjectMeta').IObjectMeta;
  spec: { config: string };
}
"""


def helm(*args, check=True):
    p = subprocess.run([HELM, *args], capture_output=True, text=True, timeout=120)
    err = "\n".join(l for l in p.stderr.splitlines() if "found symbolic link" not in l)
    if check and p.returncode != 0:
        raise AssertionError("helm %s failed:\n%s%s" % (" ".join(args), p.stdout, err))
    return p.returncode, p.stdout, err


def values_path(name):
    """tests/deploy/helm/<name>, else helm/skbnf/examples/<name>, else <name> as a path."""
    for d in (VALUES_DIR, EXAMPLES_DIR):
        if os.path.exists(os.path.join(d, name)):
            return os.path.join(d, name)
    return name


def values_files():
    return sorted(f for d in (VALUES_DIR, EXAMPLES_DIR) for f in os.listdir(d)
                  if f.endswith(".yaml"))


def render(values_file=None, *sets):
    args = ["template", "rel", CHART, "--namespace", "net", "--kube-version", KUBE_VERSION]
    if values_file:
        args += ["-f", values_path(values_file)]
    for s in sets:
        args += ["--set", s]
    _, out, _ = helm(*args)
    return [d for d in yaml.safe_load_all(out) if d]


def by_kind(docs, kind):
    return [d for d in docs if d["kind"] == kind]


def container(docs, name="skbnfd"):
    (w,) = [d for d in docs if d["kind"] in ("Deployment", "DaemonSet")]
    spec = w["spec"]["template"]["spec"]
    return w, spec, next(c for c in spec["containers"] if c["name"] == name)


class HelmTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        for tool in (HELM, TSC):
            if not os.access(tool, os.X_OK):
                raise RuntimeError("%s missing: run deploy/deps.sh" % tool)
        cls.scenarios = {None: render()}
        for f in values_files():
            cls.scenarios[f] = render(f)

    def test_lint_strict(self):
        for f in [None] + values_files():
            with self.subTest(values=f):
                args = ["lint", "--strict", CHART]
                if f:
                    args += ["-f", values_path(f)]
                code, out, err = helm(*args, check=False)
                self.assertEqual(code, 0, out + err)
                self.assertIn("0 chart(s) failed", out)

    def validate(self, docs):
        """(node exit, node output, tsc exit, tsc output) of the two model checks."""
        d = tempfile.mkdtemp(prefix="helm-validate-", dir=NODE_DIR)  # sees node_modules
        try:
            shutil.copy(os.path.join(HERE, "validate_k8s.mjs"), d)
            with open(os.path.join(d, "docs.json"), "w") as f:
                json.dump(docs, f)
            node = subprocess.run(["node", os.path.join(d, "validate_k8s.mjs"),
                                   os.path.join(d, "docs.json")],
                                  capture_output=True, text=True, timeout=120, cwd=d)
            # The same manifests against the models' TypeScript types: unknown fields fail.
            imports, consts = [], []
            for i, doc in enumerate(docs):
                key = (doc["apiVersion"], doc["kind"])
                if key == ("k8s.cni.cncf.io/v1", "NetworkAttachmentDefinition"):
                    t = "INetworkAttachmentDefinition"
                else:
                    self.assertIn(key, TS_TYPES, "no TypeScript type for %s" % (key,))
                    mod, t = TS_TYPES[key]
                    imports.append("import type { %s } from '%s';" % (t, mod))
                consts.append("export const m%d: %s = %s;" % (i, t, json.dumps(doc, indent=1)))
            with open(os.path.join(d, "manifests.ts"), "w") as f:
                f.write("\n".join(sorted(set(imports))) + NAD_TS + "\n".join(consts) + "\n")
            with open(os.path.join(d, "tsconfig.json"), "w") as f:
                json.dump({"compilerOptions": {"strict": True, "noEmit": True,
                                               "target": "es2022", "module": "esnext",
                                               "moduleResolution": "bundler",
                                               "skipLibCheck": True, "types": []},
                           "files": ["manifests.ts"]}, f)
            tsc = subprocess.run([TSC, "-p", d], capture_output=True, text=True, timeout=300)
            return (node.returncode, node.stdout + node.stderr, tsc.returncode,
                    tsc.stdout + tsc.stderr)
        finally:
            shutil.rmtree(d, ignore_errors=True)

    def test_manifests_validate_against_models(self):
        docs = [d for ds in self.scenarios.values() for d in ds]
        node_rc, node_out, tsc_rc, tsc_out = self.validate(docs)
        self.assertEqual(node_rc, 0, node_out)
        self.assertEqual(node_out.count("ok "), len(docs))
        self.assertEqual(tsc_rc, 0, "tsc:\n" + tsc_out)

    def test_model_checks_catch_mistakes(self):
        # negative control: a wrong type fails the runtime schema, an unknown field fails tsc
        w, _, c = container(json.loads(json.dumps(self.scenarios[None])))
        c["ports"][0]["containerPort"] = "metrics"
        w2, _, c2 = container(json.loads(json.dumps(self.scenarios[None])))
        c2["resourcess"] = {}
        node_rc, node_out, tsc_rc, tsc_out = self.validate([w, w2])
        self.assertNotEqual(node_rc, 0)
        self.assertIn("containerPort must be integer", node_out)
        self.assertNotEqual(tsc_rc, 0)
        self.assertIn("resourcess", tsc_out)

    def test_default_is_an_sriov_deployment(self):
        docs = self.scenarios[None]
        w, spec, c = container(docs)
        self.assertEqual(w["kind"], "Deployment")
        self.assertEqual(w["spec"]["strategy"]["type"], "Recreate")
        res = c["resources"]
        self.assertEqual(res["requests"], res["limits"])  # Guaranteed QoS
        self.assertEqual(res["limits"]["cpu"], "2")
        self.assertEqual(res["limits"]["intel.com/intel_sriov_dpdk"], "2")
        self.assertEqual(res["limits"]["hugepages-2Mi"], "1Gi")
        ann = w["spec"]["template"]["metadata"]["annotations"]
        self.assertEqual(ann["k8s.v1.cni.cncf.io/networks"], "sriov-dpdk-a,sriov-dpdk-b")
        self.assertIn("--pcidevice-env", c["args"])
        # the control API is a unix socket in a volume of skbnfd's own; no TCP control listener
        self.assertIn("--listen=unix:/run/skbnf/control.sock", c["args"])
        self.assertIn({"name": "control", "mountPath": "/run/skbnf"}, c["volumeMounts"])
        self.assertIn({"name": "SKBNF_ADDR", "value": "unix:/run/skbnf/control.sock"}, c["env"])
        # /metrics and the health-only listener on the pod IP (downward API), not every address
        self.assertIn("--metrics-addr=$(POD_IP):9478", c["args"])
        self.assertIn({"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                      c["env"])
        self.assertFalse([a for a in c["args"] if a.startswith("--roles")])  # own uid: admin
        self.assertIn("--loopback-role=none", c["args"])  # not even the demo's loopback admin
        # EAL's runtime directory (and the DPDK telemetry socket) in the pod volume "run"
        self.assertIn({"name": "RUNTIME_DIRECTORY", "value": "/var/run"}, c["env"])
        self.assertIn({"name": "run", "mountPath": "/var/run/dpdk"}, c["volumeMounts"])
        self.assertEqual(spec["terminationGracePeriodSeconds"], 30)
        self.assertNotIn("runtimeClassName", spec)
        self.assertEqual(by_kind(docs, "PodDisruptionBudget"), [])
        sc = c["securityContext"]
        self.assertFalse(sc["privileged"])
        self.assertFalse(sc["allowPrivilegeEscalation"])
        self.assertTrue(sc["readOnlyRootFilesystem"])
        self.assertEqual(sc["capabilities"], {"drop": ["ALL"], "add": ["IPC_LOCK"]})
        vols = {v["name"]: v for v in spec["volumes"]}
        self.assertEqual(vols["hugepages"]["emptyDir"]["medium"], "HugePages-2Mi")
        # the kubelet's own gRPC probe on the plaintext health-only listener: nothing is
        # exec'd inside the pod's exclusive cpuset
        self.assertIn("--health-listen=$(POD_IP):50052", c["args"])
        self.assertIn({"name": "health", "containerPort": 50052, "protocol": "TCP"}, c["ports"])
        for probe, service in (("startupProbe", "liveness"), ("readinessProbe", "readiness"),
                               ("livenessProbe", "liveness")):
            self.assertEqual(c[probe]["grpc"], {"port": 50052, "service": service}, probe)
            self.assertNotIn("exec", c[probe])
        # Multus' network-status annotation through the downward API, and the flags to read it
        (pni,) = [v for v in spec["volumes"] if v["name"] == "podnetinfo"]
        self.assertEqual(pni["downwardAPI"]["items"], [{
            "path": "network-status",
            "fieldRef": {"fieldPath":
                         "metadata.annotations['k8s.v1.cni.cncf.io/network-status']"}}])
        self.assertIn({"name": "podnetinfo", "mountPath": "/etc/podnetinfo", "readOnly": True},
                      c["volumeMounts"])
        self.assertIn("--network-status-file=/etc/podnetinfo/network-status", c["args"])
        self.assertIn("--network-status-timeout=30s", c["args"])
        conf = by_kind(docs, "ConfigMap")[0]["data"]["skbnfd.conf"]
        self.assertIn("eal --in-memory --huge-dir=/hugepages", conf)
        # ports named by network, in the order of the values (not of the PCIDEVICE_* env)
        self.assertIn("port net=sriov-dpdk-a\nport net=sriov-dpdk-b\n", conf)
        self.assertEqual([s["metadata"]["name"] for s in by_kind(docs, "Service")],
                         ["rel-skbnf-metrics"])  # no gRPC Service without TLS
        for kind in ("ServiceMonitor", "PrometheusRule", "NetworkAttachmentDefinition",
                     "Certificate"):
            self.assertEqual(by_kind(docs, kind), [])
        self.assertEqual(len(by_kind(docs, "NetworkPolicy")), 1)

    def test_daemonset(self):
        docs = self.scenarios["daemonset.yaml"]
        w, spec, c = container(docs)
        self.assertEqual(w["kind"], "DaemonSet")
        self.assertNotIn("replicas", w["spec"])
        self.assertEqual(w["spec"]["updateStrategy"], {"type": "OnDelete"})
        self.assertEqual(spec["terminationGracePeriodSeconds"], 60)
        self.assertEqual(spec["runtimeClassName"], "performance-dpdk")
        ann = w["spec"]["template"]["metadata"]["annotations"]
        for k in ("cpu-load-balancing.crio.io", "cpu-quota.crio.io", "irq-load-balancing.crio.io"):
            self.assertEqual(ann[k], "disable")
        self.assertEqual(spec["nodeSelector"],
                         {"feature.node.kubernetes.io/network-sriov.capable": "true"})
        lim = c["resources"]["limits"]
        self.assertEqual((lim["cpu"], lim["intel.com/intel_sriov_dpdk"], lim["hugepages-1Gi"]),
                         ("4", "2", "2Gi"))
        self.assertEqual(c["env"][-1], {"name": "TZ", "value": "UTC"})  # extraEnv, after ours
        self.assertIn({"name": "ca-bundle", "configMap": {"name": "node-ca"}}, spec["volumes"])
        self.assertIn({"name": "ca-bundle", "mountPath": "/etc/ssl/node", "readOnly": True},
                      c["volumeMounts"])
        self.assertEqual([x["name"] for x in spec["containers"]], ["skbnfd", "log-shipper"])
        (pdb,) = by_kind(docs, "PodDisruptionBudget")
        self.assertEqual(pdb["spec"]["minAvailable"], "50%")
        self.assertNotIn("maxUnavailable", pdb["spec"])
        self.assertEqual(pdb["spec"]["selector"]["matchLabels"],
                         w["spec"]["selector"]["matchLabels"])
        nads = by_kind(docs, "NetworkAttachmentDefinition")
        self.assertEqual([n["metadata"]["name"] for n in nads], ["sriov-a", "sriov-b"])
        for nad in nads:
            self.assertEqual(nad["metadata"]["annotations"]["k8s.v1.cni.cncf.io/resourceName"],
                             "intel.com/intel_sriov_dpdk")
            cni = json.loads(nad["spec"]["config"])
            self.assertEqual((cni["name"], cni["type"], cni["vlan"]),
                             (nad["metadata"]["name"], "sriov", 100))
        # probes.mode exec: skbnf_health with the service name, no health-only listener
        for probe, service in (("startupProbe", "liveness"), ("readinessProbe", "readiness"),
                               ("livenessProbe", "liveness")):
            self.assertEqual(c[probe]["exec"]["command"],
                             ["skbnf_health", "--addr=unix:/run/skbnf/control.sock",
                              "--service=" + service])
        self.assertFalse(any(a.startswith("--health-listen") for a in c["args"]))
        conf = by_kind(docs, "ConfigMap")[0]["data"]["skbnfd.conf"]
        self.assertIn("strategy recycle+magazine:size=64,prefetch", conf)
        self.assertIn("mbufs 65536", conf)
        self.assertIn("route 10.0.0.0/8 1 02:00:00:00:01:01", conf)

    def test_two_mlx5_pools(self):
        # helm/skbnf/examples/two-pool-mlx5.yaml: access and core VFs from two device plugin
        # pools; mlx5 (bifurcated) gets NET_RAW + NET_ADMIN (DPDK doc/guides/nics/mlx5.rst,
        # "Run as non-root") and no hostPath: the device plugin mounts /dev/infiniband itself
        # for isRdma resources.
        docs = self.scenarios["two-pool-mlx5.yaml"]
        w, spec, c = container(docs)
        self.assertEqual(w["kind"], "DaemonSet")
        self.assertEqual(w["spec"]["updateStrategy"],
                         {"type": "RollingUpdate",
                          "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}})
        lim = c["resources"]["limits"]
        self.assertEqual((lim["nvidia.com/mlx5_access"], lim["nvidia.com/mlx5_core"]), ("1", "1"))
        self.assertEqual(c["resources"]["requests"], lim)
        self.assertEqual(c["securityContext"]["capabilities"],
                         {"drop": ["ALL"], "add": ["IPC_LOCK", "NET_RAW", "NET_ADMIN"]})
        self.assertFalse(c["securityContext"]["privileged"])
        for v in spec["volumes"]:
            self.assertNotIn("hostPath", v)
        ann = w["spec"]["template"]["metadata"]["annotations"]
        self.assertEqual(ann["k8s.v1.cni.cncf.io/networks"], "access,core")
        nads = {n["metadata"]["name"]: n for n in by_kind(docs, "NetworkAttachmentDefinition")}
        self.assertEqual(sorted(nads), ["access", "core"])
        for name, res, vlan in (("access", "nvidia.com/mlx5_access", 100),
                                ("core", "nvidia.com/mlx5_core", 200)):
            self.assertEqual(nads[name]["metadata"]["annotations"]
                             ["k8s.v1.cni.cncf.io/resourceName"], res)
            self.assertEqual(json.loads(nads[name]["spec"]["config"])["vlan"], vlan)
        conf = by_kind(docs, "ConfigMap")[0]["data"]["skbnfd.conf"]
        self.assertIn("port net=access\nport net=core\n", conf)
        self.assertIn("--network-status-file=/etc/podnetinfo/network-status", c["args"])
        for probe, service in (("readinessProbe", "readiness"), ("livenessProbe", "liveness")):
            self.assertEqual(c[probe]["grpc"], {"port": 50052, "service": service})
        (pdb,) = by_kind(docs, "PodDisruptionBudget")
        self.assertEqual(pdb["spec"], {"maxUnavailable": 1, "selector": w["spec"]["selector"]})

    def test_one_network_attached_twice_by_interface(self):
        # Multus' name@interface: the two attachments of one network are told apart by their
        # interface names (skbnfd's `port net=access@net1`, server/ops/network_status.h)
        d = tempfile.mkdtemp(prefix="helm-values-")
        try:
            f = os.path.join(d, "v.yaml")
            with open(f, "w") as fh:
                yaml.safe_dump({"sriov": {"resources": [
                    {"name": "intel.com/sriov", "count": 2,
                     "networks": ["access@net1", "access@net2"]}],
                    "networkAttachmentDefinition": {"create": True}}}, fh)
            docs = render(f)
        finally:
            shutil.rmtree(d, ignore_errors=True)
        w, _, c = container(docs)
        self.assertEqual(w["spec"]["template"]["metadata"]["annotations"]
                         ["k8s.v1.cni.cncf.io/networks"], "access@net1,access@net2")
        conf = by_kind(docs, "ConfigMap")[0]["data"]["skbnfd.conf"]
        self.assertIn("port net=access@net1\nport net=access@net2\n", conf)
        nads = by_kind(docs, "NetworkAttachmentDefinition")
        self.assertEqual([n["metadata"]["name"] for n in nads], ["access"])  # one object

    def test_sriov_count_must_match_the_networks(self):
        def refused(values):
            d = tempfile.mkdtemp(prefix="helm-values-")
            try:
                f = os.path.join(d, "v.yaml")
                with open(f, "w") as fh:
                    yaml.safe_dump(values, fh)
                code, out, err = helm("template", "rel", CHART, "--kube-version",
                                      KUBE_VERSION, "-f", f, check=False)
                self.assertNotEqual(code, 0, "accepted: %s" % values)
                return err
            finally:
                shutil.rmtree(d, ignore_errors=True)
        err = refused({"sriov": {"resources": [
            {"name": "intel.com/sriov_access", "count": 2, "networks": ["access"]}]}})
        self.assertIn("sriov.resources[0] (intel.com/sriov_access): count is 2 but 1 network(s)"
                      " are listed [access]", err)
        err = refused({"sriov": {"resources": [
            {"name": "intel.com/sriov_access", "count": 1, "networks": ["access"]},
            {"name": "intel.com/sriov_core", "count": 1, "networks": ["access"]}]}})
        self.assertIn("sriov.resources[1] (intel.com/sriov_core): network access is listed twice",
                      err)
        self.assertIn("(access@net1, access@net2)", err)
        err = refused({"sriov": {"resources": [
            {"name": "intel.com/a", "count": 1, "networks": ["net-x"]},
            {"name": "intel.com/a", "count": 1, "networks": ["net-y"]}]}})
        self.assertIn("resource intel.com/a is listed twice", err)
        err = refused({"kind": "DaemonSet",
                       "updateStrategy": {"type": "RollingUpdate",
                                          "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 0}}})
        self.assertIn("maxUnavailable and maxSurge are both 0", err)
        err = refused({"probes": {"port": 9478}})
        self.assertIn("probes.port 9478 is also grpc.port or metrics.port", err)

    def test_af_packet_without_sriov(self):
        docs = self.scenarios["afpacket.yaml"]
        w, spec, c = container(docs)
        lim = c["resources"]["limits"]
        self.assertEqual(sorted(lim), ["cpu", "memory"])  # no VF, no hugepages
        self.assertEqual(c["securityContext"]["capabilities"]["add"],
                         ["IPC_LOCK", "NET_RAW", "NET_ADMIN"])
        self.assertNotIn("--pcidevice-env", c["args"])
        self.assertNotIn("hugepages", [v["name"] for v in spec["volumes"]])
        conf = by_kind(docs, "ConfigMap")[0]["data"]["skbnfd.conf"]
        self.assertIn("eal --vdev=net_af_packet0,iface=net1", conf)
        self.assertIn("eal --vdev=net_af_packet1,iface=net2", conf)
        self.assertIn("--no-huge", conf)
        self.assertEqual(w["spec"]["template"]["metadata"]["annotations"]
                         ["k8s.v1.cni.cncf.io/networks"], "macvlan-a,macvlan-b")

    def test_af_xdp_without_sriov_or_hugepages(self):
        for name in ("afxdp.yaml", "af-xdp.yaml"):
            docs = self.scenarios[name]
            w, spec, c = container(docs)
            lim = c["resources"]["limits"]
            self.assertEqual(sorted(lim), ["cpu", "memory"], name)  # no VF, no hugepages
            self.assertEqual(c["resources"]["requests"], lim, name)
            sc = c["securityContext"]
            self.assertIs(sc["privileged"], False, name)
            self.assertIs(sc["allowPrivilegeEscalation"], False, name)
            # exactly what tests/integration/af_xdp_test.sh runs skbnfd with
            self.assertEqual(sc["capabilities"], {"drop": ["ALL"], "add": [
                "IPC_LOCK", "NET_RAW", "NET_ADMIN", "BPF"]}, name)
            self.assertNotIn("--pcidevice-env", c["args"], name)
            self.assertIn("--config=/etc/skbnf/config/skbnfd.conf", c["args"], name)
            self.assertNotIn("hugepages", [v["name"] for v in spec["volumes"]], name)
            conf = by_kind(docs, "ConfigMap")[0]["data"]["skbnfd.conf"]
            self.assertIn("eal --no-huge -m 512 --no-pci --no-shconf", conf, name)
            self.assertNotIn("--huge-dir", conf, name)
        conf = by_kind(self.scenarios["afxdp.yaml"], "ConfigMap")[0]["data"]["skbnfd.conf"]
        prog = "xdp_prog=/usr/lib/x86_64-linux-gnu/bpf/xsk_def_xdp_prog.o"
        self.assertIn("eal --vdev=net_af_xdp0,iface=net1,start_queue=0,queue_count=2,%s,"
                      "busy_budget=0" % prog, conf)
        self.assertIn("eal --vdev=net_af_xdp1,iface=net2,start_queue=0,queue_count=2,%s,"
                      "busy_budget=0" % prog, conf)
        self.assertIn("rx_queues 2", conf)
        w, _, _ = container(self.scenarios["afxdp.yaml"])
        self.assertEqual(w["spec"]["template"]["metadata"]["annotations"]
                         ["k8s.v1.cni.cncf.io/networks"], "macvlan-a,macvlan-b")

    def test_af_xdp_refusals(self):
        cases = [(["afXdp.enabled=true"], "afXdp.enabled"),  # with sriov on
                 (["sriov.enabled=false", "afPacket.enabled=true", "afXdp.enabled=true"],
                  "afXdp.enabled"),
                 (["sriov.enabled=false", "afXdp.enabled=true", "afXdp.devargs[0]=iface=eth0"],
                  "afXdp.devargs.0"),
                 (["sriov.enabled=false", "afXdp.enabled=true", "afXdp.xdpProg=prog.o"],
                  "afXdp.xdpProg"),
                 # --no-huge: the memory limit must hold EAL's -m and the process
                 (["sriov.enabled=false", "afXdp.enabled=true", "resources.memory=600Mi"],
                  "resources.memory 600Mi is less than afXdp.ealMemoryMB (512 MiB"),
                 (["sriov.enabled=false", "afXdp.enabled=true", "afXdp.ealMemoryMB=1024"],
                  "set resources.memory to at least 1152Mi"),
                 (["sriov.enabled=false", "afXdp.enabled=true", "afXdp.queueCount=2"],
                  "afXdp.queueCount is 2 but dpdk.rxQueues is 1")]
        for sets, field in cases:
            with self.subTest(sets=sets):
                args = ["template", "rel", CHART, "--kube-version", KUBE_VERSION]
                for s in sets:
                    args += ["--set", s]
                code, _, err = helm(*args, check=False)
                self.assertNotEqual(code, 0, "accepted: %s" % sets)
                self.assertIn(field, err)

    def test_monitoring_from_the_deploy_files(self):
        docs = self.scenarios["monitoring.yaml"]
        (sm,) = by_kind(docs, "ServiceMonitor")
        self.assertEqual(sm["spec"]["jobLabel"], "app.kubernetes.io/name")
        self.assertEqual(sm["spec"]["endpoints"][0]["port"], "metrics")
        self.assertEqual(sm["metadata"]["labels"]["release"], "kube-prometheus-stack")
        metrics_svc = next(s for s in by_kind(docs, "Service")
                           if s["metadata"]["name"] == "rel-skbnf-metrics")
        for k, v in sm["spec"]["selector"]["matchLabels"].items():
            self.assertEqual(metrics_svc["metadata"]["labels"][k], v)
        # namespace, pod and node on every series: the dashboard's variables use them
        relabel = {r["targetLabel"]: r["sourceLabels"]
                   for r in sm["spec"]["endpoints"][0]["relabelings"]}
        self.assertEqual(relabel, {"namespace": ["__meta_kubernetes_namespace"],
                                   "pod": ["__meta_kubernetes_pod_name"],
                                   "node": ["__meta_kubernetes_pod_node_name"]})
        (rule,) = by_kind(docs, "PrometheusRule")
        with open(RULES) as f:
            self.assertEqual(rule["spec"], yaml.safe_load(f))  # the same file, not a copy
        alerts = [r for g in rule["spec"]["groups"] for r in g["rules"] if "alert" in r]
        self.assertGreaterEqual(len(alerts), 10)
        for a in alerts:
            self.assertTrue(a["annotations"]["runbook_url"].startswith(
                "https://github.com/skbnf/skbnf/blob/main/deploy/runbooks/"), a["alert"])

    def test_kube_prometheus_stack_example(self):
        # helm/skbnf/examples/kube-prometheus-stack.yaml: the labels a default
        # kube-prometheus-stack selects by, and runbooks at the configured base URL
        docs = self.scenarios["kube-prometheus-stack.yaml"]
        (sm,) = by_kind(docs, "ServiceMonitor")
        (rule,) = by_kind(docs, "PrometheusRule")
        for obj in (sm, rule):
            self.assertEqual(obj["metadata"]["labels"]["release"], "kube-prometheus-stack")
        base = "https://git.example.net/netops/skbnf/-/blob/main/deploy/runbooks/"
        alerts = [r for g in rule["spec"]["groups"] for r in g["rules"] if "alert" in r]
        self.assertGreaterEqual(len(alerts), 10)
        for a in alerts:
            url = a["annotations"]["runbook_url"]
            self.assertTrue(url.startswith(base), url)
            self.assertTrue(os.path.exists(os.path.join(ROOT, "deploy", "runbooks",
                                                        url[len(base):])), url)
        # everything else of the rules file is unchanged
        with open(RULES) as f:
            self.assertEqual(yaml.safe_dump(rule["spec"]).replace(base, "X/"),
                             yaml.safe_dump(yaml.safe_load(f)).replace(
                                 "https://github.com/skbnf/skbnf/blob/main/deploy/runbooks/",
                                 "X/"))
        (cm,) = [d for d in by_kind(docs, "ConfigMap") if d["metadata"]["name"].endswith(
            "-dashboard")]
        self.assertEqual(cm["metadata"]["labels"]["grafana_dashboard"], "1")
        (cm,) = [d for d in by_kind(docs, "ConfigMap") if d["metadata"]["name"].endswith(
            "-dashboard")]
        self.assertEqual(cm["metadata"]["labels"]["grafana_dashboard"], "1")
        self.assertEqual(cm["metadata"]["namespace"], "monitoring")
        with open(DASHBOARD) as f:
            self.assertEqual(json.loads(cm["data"]["skbnf-dashboard.json"]), json.load(f))

    def test_tls(self):
        docs = self.scenarios["tls.yaml"]
        w, spec, c = container(docs)
        args = c["args"]
        # the socket stays; the TLS listener is on the pod IP, roles from client certificates
        for a in ("--listen=unix:/run/skbnf/control.sock,$(POD_IP):50051",
                  "--roles=dns:ops.example.net=admin,dns:ci.example.net=operate,"
                  "uri:spiffe://cluster.local/ns/monitoring/sa/skbnf-reader=read,gid:2000=read",
                  "--tls-cert=/etc/skbnf/tls/tls.crt", "--tls-key=/etc/skbnf/tls/tls.key",
                  "--tls-client-ca=/etc/skbnf/client-ca/ca.crt", "--loopback-role=none"):
            self.assertIn(a, args)
        self.assertFalse([a for a in args if a.startswith("--tls-client-names")])
        vols = {v["name"]: v for v in spec["volumes"]}
        self.assertEqual(vols["tls"]["secret"]["secretName"], "skbnf-grpc-tls")
        # the client CA is not the server's issuer: a ConfigMap of its own
        self.assertEqual(vols["client-ca"]["configMap"],
                         {"name": "ops-client-ca", "items": [{"key": "ca.crt", "path": "ca.crt"}]})
        # the kubelet's gRPC probe (no TLS) asks the plaintext health-only listener, which
        # serves grpc.health.v1 and nothing else
        self.assertEqual(c["readinessProbe"]["grpc"], {"port": 50052, "service": "readiness"})
        self.assertIn("--health-listen=$(POD_IP):50052", args)
        # exec probes (probes.mode exec) use the control socket
        _, _, ce = container(render("tls.yaml", "probes.mode=exec"))
        self.assertEqual(ce["readinessProbe"]["exec"]["command"],
                         ["skbnf_health", "--addr=unix:/run/skbnf/control.sock",
                          "--service=readiness"])
        (grpc,) = [s for s in by_kind(docs, "Service") if s["metadata"]["name"].endswith("-grpc")]
        self.assertEqual(grpc["spec"]["ports"][0]["appProtocol"], "grpc")
        (pre,) = spec["initContainers"]
        self.assertEqual(pre["args"][0], "--preflight")
        self.assertEqual(pre["args"][1:], args)
        self.assertEqual(pre["env"], c["env"])  # $(POD_IP) resolves there too
        self.assertEqual(pre["resources"], c["resources"])
        # cert-manager Certificate for the server (shape: cert-manager's Certificate CRD,
        # validated by @kubernetes-models/cert-manager in test_manifests_validate_against_models)
        (cert,) = by_kind(docs, "Certificate")
        self.assertEqual(cert["spec"]["secretName"], "skbnf-grpc-tls")
        self.assertEqual(cert["spec"]["issuerRef"],
                         {"name": "net-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"})
        self.assertEqual(cert["spec"]["dnsNames"], ["rel-skbnf-grpc", "rel-skbnf-grpc.net",
                                                    "rel-skbnf-grpc.net.svc", "skbnf.example.net"])
        self.assertIn("server auth", cert["spec"]["usages"])
        self.assertEqual(cert["spec"]["privateKey"]["rotationPolicy"], "Always")
        (sm,) = by_kind(docs, "ServiceMonitor")
        self.assertNotIn("scheme", sm["spec"]["endpoints"][0])  # metrics.tls off: http
        (ms,) = [s for s in by_kind(docs, "Service") if s["metadata"]["name"].endswith("-metrics")]
        self.assertEqual(ms["spec"]["ports"][0]["appProtocol"], "http")

    def test_metrics_tls_renders_flags_mounts_and_an_https_service_monitor(self):
        # metrics-tls.yaml (validated against the models with the other scenarios): skbnfd's
        # flags and mounts, the Service's appProtocol and the ServiceMonitor's tlsConfig
        # (prometheus-operator's SafeTLSConfig: ca, cert, keySecret, serverName).
        docs = self.scenarios["metrics-tls.yaml"]
        _, spec, c = container(docs)
        for flag in ("--metrics-tls-cert=/etc/skbnf/metrics-tls/tls.crt",
                     "--metrics-tls-key=/etc/skbnf/metrics-tls/tls.key",
                     "--metrics-tls-client-ca=/etc/skbnf/metrics-client-ca/ca.crt"):
            self.assertIn(flag, c["args"])
        self.assertIn({"name": "metrics-tls", "mountPath": "/etc/skbnf/metrics-tls",
                       "readOnly": True}, c["volumeMounts"])
        self.assertIn({"name": "metrics-client-ca", "mountPath": "/etc/skbnf/metrics-client-ca",
                       "readOnly": True}, c["volumeMounts"])
        vols = {v["name"]: v for v in spec["volumes"]}
        self.assertEqual(vols["metrics-tls"]["secret"],
                         {"secretName": "skbnf-metrics-tls", "defaultMode": 0o440})
        self.assertEqual(vols["metrics-client-ca"]["secret"]["secretName"], "prometheus-client-ca")
        (ms,) = [s for s in by_kind(docs, "Service") if s["metadata"]["name"].endswith("-metrics")]
        self.assertEqual(ms["spec"]["ports"][0]["appProtocol"], "https")
        (sm,) = by_kind(docs, "ServiceMonitor")
        ep = sm["spec"]["endpoints"][0]
        self.assertEqual(ep["scheme"], "https")
        self.assertEqual(ep["tlsConfig"], {
            "serverName": "rel-skbnf-metrics.net.svc",
            "ca": {"secret": {"name": "skbnf-metrics-tls", "key": "ca.crt"}},
            "cert": {"secret": {"name": "prometheus-skbnf-client", "key": "tls.crt"}},
            "keySecret": {"name": "prometheus-skbnf-client", "key": "tls.key"}})
        # TLS without mTLS: no client CA flag, no client certificate in the ServiceMonitor
        docs = render(None, "metrics.tls.enabled=true", "metrics.tls.secretName=s",
                      "serviceMonitor.enabled=true")
        _, _, c = container(docs)
        self.assertIn("--metrics-tls-cert=/etc/skbnf/metrics-tls/tls.crt", c["args"])
        self.assertFalse([a for a in c["args"] if a.startswith("--metrics-tls-client-ca")])
        (sm,) = by_kind(docs, "ServiceMonitor")
        self.assertEqual(set(sm["spec"]["endpoints"][0]["tlsConfig"]), {"serverName", "ca"})

    def test_readme_client_certificate_is_a_certificate(self):
        # deploy/README.md's client Certificate, against cert-manager's CRD-generated model
        with open(os.path.join(ROOT, "deploy", "README.md")) as f:
            text = f.read()
        blocks = [textwrap.dedent(b) for b in re.findall(r"```yaml\n(.*?)```", text, re.S)]
        (cert,) = [yaml.safe_load(b) for b in blocks if "kind: Certificate" in b]
        self.assertEqual(cert["spec"]["dnsNames"], ["ops.example.net"])
        self.assertIn("client auth", cert["spec"]["usages"])
        node_rc, node_out, tsc_rc, tsc_out = self.validate([cert])
        self.assertEqual(node_rc, 0, node_out)
        self.assertEqual(tsc_rc, 0, tsc_out)
        bad = json.loads(json.dumps(cert))
        bad["spec"]["usages"] = ["client-auth"]  # not a cert-manager KeyUsage
        node_rc, node_out, _, _ = self.validate([bad])
        self.assertNotEqual(node_rc, 0, node_out)

    def test_network_policy(self):
        # networking.k8s.io/v1 NetworkPolicy (Kubernetes API reference; the models validate it):
        # Prometheus to the metrics port and nothing else by default; the node's probes are let
        # in by Kubernetes itself (node traffic is always allowed, network-policies docs), more
        # peers with probesFrom; with TLS the gRPC port from grpcFrom.
        (np,) = by_kind(self.scenarios[None], "NetworkPolicy")
        w, _, _ = container(self.scenarios[None])
        self.assertEqual(np["spec"]["podSelector"]["matchLabels"],
                         w["spec"]["selector"]["matchLabels"])
        self.assertEqual(np["spec"]["policyTypes"], ["Ingress"])
        self.assertEqual(np["spec"]["ingress"], [{
            "ports": [{"port": 9478, "protocol": "TCP"}],
            "from": [{"namespaceSelector": {"matchLabels": {
                "kubernetes.io/metadata.name": "monitoring"}},
                "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}}}]}])
        (np,) = by_kind(self.scenarios["tls.yaml"], "NetworkPolicy")
        rules = {r["ports"][0]["port"]: r.get("from") for r in np["spec"]["ingress"]}
        self.assertEqual(sorted(rules), [9478, 50051, 50052])
        self.assertEqual(rules[50052], [{"ipBlock": {"cidr": "10.0.0.0/16"}}])
        self.assertEqual(rules[50051], [{"namespaceSelector": {"matchLabels": {
            "kubernetes.io/metadata.name": "ops"}}}])
        self.assertEqual(by_kind(render(None, "networkPolicy.enabled=false"), "NetworkPolicy"),
                         [])

    def test_remote_access_needs_mtls_roles(self):
        def refused(*sets):
            args = ["template", "rel", CHART, "--kube-version", KUBE_VERSION]
            for s in sets:
                args += ["--set", s]
            code, out, err = helm(*args, check=False)
            self.assertNotEqual(code, 0, "accepted: %s" % (sets,))
            return err
        tls = ("tls.enabled=true", "tls.secretName=s")
        # no roles: refused, saying what to write
        err = refused(*tls)
        self.assertIn("tls.enabled=true needs tls.clientNames", err)
        self.assertIn("clientNames:", err)
        self.assertIn("dns:ops.example.net", err)
        self.assertIn("role: admin", err)
        # the old form (bare names): refused with the new form for that name
        err = refused(*tls, "tls.clientNames[0]=ops.example.net")
        self.assertIn('tls.clientNames[0] is "ops.example.net", a bare name: give it a role, e.g.'
                      ' - {name: "dns:ops.example.net", role: admin}', err.replace('\\"', '"'))
        err = refused(*tls, "tls.clientNames[0].name=ops.example.net",
                      "tls.clientNames[0].role=admin")
        self.assertIn("tls.clientNames", err)
        err = refused(*tls, "tls.clientNames[0].name=dns:a", "tls.clientNames[0].role=root")
        self.assertIn("tls.clientNames", err)
        err = refused(*tls, "tls.clientNames[0].name=dns:a", "tls.clientNames[0].role=read",
                      "tls.clientCA.secretName=x", "tls.clientCA.configMapName=y")
        self.assertIn("tls.clientCA: secretName and configMapName are both set", err)
        err = refused(*tls, "tls.clientNames[0].name=dns:a", "tls.clientNames[0].role=read",
                      "tls.certManager.enabled=true")
        self.assertIn("tls.certManager.issuerRef.name", err)
        err = refused("control.roles[0].name=dns:a", "control.roles[0].role=read")
        self.assertIn("control.roles", err)
        # metrics TLS: a Secret is needed; a client CA needs TLS, and (with the ServiceMonitor)
        # Prometheus' client certificate
        err = refused("metrics.tls.enabled=true")
        self.assertIn("metrics.tls.enabled=true needs metrics.tls.secretName", err)
        err = refused("metrics.tls.clientCA.secretName=ca")
        self.assertIn("metrics.tls.clientCA.secretName is set but metrics.tls.enabled is false",
                      err)
        err = refused("metrics.tls.enabled=true", "metrics.tls.secretName=s",
                      "metrics.tls.clientCA.secretName=ca", "serviceMonitor.enabled=true")
        self.assertIn("set metrics.tls.clientCertSecretName", err)
        # the client CA from a Secret of its own
        _, spec, c = container(render(None, *tls, "tls.clientNames[0].name=dns:a",
                                      "tls.clientNames[0].role=read",
                                      "tls.clientCA.secretName=client-ca", "tls.clientCA.key=ca.pem"))
        self.assertIn("--tls-client-ca=/etc/skbnf/client-ca/ca.pem", c["args"])
        self.assertIn({"name": "client-ca", "secret": {"secretName": "client-ca", "items": [
            {"key": "ca.pem", "path": "ca.pem"}]}}, spec["volumes"])
        # default client CA: the server Secret's ca.crt
        _, _, c = container(render(None, *tls, "tls.clientNames[0].name=dns:a",
                                   "tls.clientNames[0].role=read"))
        self.assertIn("--tls-client-ca=/etc/skbnf/tls/ca.crt", c["args"])
        self.assertIn("--roles=dns:a=read", c["args"])

    def test_ipv6_pod_ip_in_brackets(self):
        _, _, c = container(render(None, "podIPFamily=IPv6", "tls.enabled=true",
                                   "tls.secretName=s", "tls.clientNames[0].name=dns:a",
                                   "tls.clientNames[0].role=read"))
        self.assertIn("--metrics-addr=[$(POD_IP)]:9478", c["args"])
        self.assertIn("--health-listen=[$(POD_IP)]:50052", c["args"])
        self.assertIn("--listen=unix:/run/skbnf/control.sock,[$(POD_IP)]:50051", c["args"])

    def test_packaged_chart_carries_the_deploy_files(self):
        d = tempfile.mkdtemp(prefix="helm-package-")
        try:
            helm("package", CHART, "--destination", d)
            (tgz,) = [f for f in os.listdir(d) if f.endswith(".tgz")]
            with tarfile.open(os.path.join(d, tgz)) as t:
                for member, src in (("skbnf/files/skbnf-rules.yaml", RULES),
                                    ("skbnf/files/skbnf-dashboard.json", DASHBOARD)):
                    info = t.getmember(member)
                    self.assertTrue(info.isfile(), member + " is not a regular file")
                    with open(src, "rb") as f:
                        self.assertEqual(t.extractfile(info).read(), f.read(), member)
        finally:
            shutil.rmtree(d, ignore_errors=True)

    def notes(self, *sets):
        """NOTES.txt as `helm install` prints it (helm template skips NOTES): rendered through
        tpl in a copy of the chart."""
        d = tempfile.mkdtemp(prefix="helm-notes-")
        try:
            chart = os.path.join(d, "skbnf")
            shutil.copytree(CHART, chart, symlinks=False)
            shutil.copy(os.path.join(chart, "templates", "NOTES.txt"),
                        os.path.join(chart, "files", "NOTES.txt"))
            with open(os.path.join(chart, "templates", "zz-notes.yaml"), "w") as f:
                f.write('apiVersion: v1\nkind: ConfigMap\nmetadata: {name: notes}\n'
                        'data:\n  notes: {{ tpl (.Files.Get "files/NOTES.txt") . | quote }}\n')
            args = ["template", "rel", chart, "--namespace", "net", "--kube-version",
                    KUBE_VERSION, "--show-only", "templates/zz-notes.yaml"]
            for s in sets:
                args += ["--set", s]
            _, out, _ = helm(*args)
            return yaml.safe_load(out)["data"]["notes"]
        finally:
            shutil.rmtree(d, ignore_errors=True)

    def test_notes_say_how_to_reach_grpc_and_the_dashboard(self):
        n = self.notes()
        self.assertIn("2 SR-IOV VF(s) of intel.com/intel_sriov_dpdk", n)
        self.assertIn("in this order: sriov-dpdk-a,sriov-dpdk-b", n)
        self.assertIn("gRPC probes on port 50052", n)
        # the safe way: skbnfctl in the container over the unix socket; no port-forward
        self.assertIn("kubectl -n net exec deployment/rel-skbnf -c skbnfd -- skbnfctl stats", n)
        self.assertIn("kubectl -n net exec deployment/rel-skbnf -c skbnfd -- skbnfctl strategy "
                      "set recycle+magazine", n)
        self.assertIn("a unix socket (/run/skbnf/control.sock)", n)
        self.assertNotIn("port-forward deployment", n)
        self.assertNotIn("--addr=127.0.0.1", n)
        self.assertIn("import deploy/grafana/skbnf-dashboard.json", n)
        self.assertIn("kubectl -n net logs <pod> | grep preflight", n)
        self.assertIn("Strategy and routes change live", n)
        self.assertIn("NetworkPolicy rel-skbnf: only Prometheus (metrics port) and the node's", n)
        n = self.notes("tls.enabled=true", "tls.secretName=grpc-tls", "dashboard.enabled=true",
                       "kind=DaemonSet", "tls.clientNames[0].name=dns:ops.example.net",
                       "tls.clientNames[0].role=admin")
        self.assertIn("mTLS on rel-skbnf-grpc.net.svc:50051", n)
        self.assertIn("dns:ops.example.net -> admin", n)
        self.assertIn("--tls-cert=client.crt", n)
        self.assertIn("--tls-server-name=rel-skbnf-grpc.net.svc", n)
        self.assertIn("ca.crt of secret grpc-tls", n)
        self.assertIn("ConfigMap rel-skbnf-dashboard", n)
        self.assertNotIn("port-forward svc", n)
        self.assertNotIn("port-forward daemonset", n)
        n = self.notes("sriov.enabled=false")
        self.assertIn("embedded demo", n)
        self.assertNotIn("change live", n)  # the demo has no config file
        n = self.notes("preflight.initContainer=true")
        self.assertIn("logs <pod> -c preflight", n)

    def test_demo_without_ports_needs_no_hugepages(self):
        docs = render(None, "sriov.enabled=false")
        w, spec, c = container(docs)
        self.assertEqual(sorted(c["resources"]["limits"]), ["cpu", "memory"])
        self.assertNotIn("hugepages", [v["name"] for v in spec["volumes"]])
        self.assertFalse(any(a.startswith("--config") for a in c["args"]))  # the demo

    def test_preflight_is_the_normal_start_up(self):
        w, spec, c = container(self.scenarios[None])
        self.assertNotIn("--skip-preflight", c["args"])  # skbnfd checks at start, refuses on error
        self.assertNotIn("initContainers", spec)
        w, spec, c = container(render(None, "preflight.enabled=false"))
        self.assertIn("--skip-preflight", c["args"])
        self.assertNotIn("initContainers", spec)
        w, spec, c = container(render(None, "preflight.initContainer=true"))
        (pre,) = spec["initContainers"]
        self.assertEqual(pre["args"], ["--preflight"] + c["args"])

    def test_only_restart_settings_roll_the_pods(self):
        def checksum(*sets):
            w, _, _ = container(render(None, *sets))
            return w["spec"]["template"]["metadata"]["annotations"]["checksum/restart-config"]
        base = checksum()
        # applied live by skbnfd's config watcher: the ConfigMap changes, the pods stay
        self.assertEqual(checksum("dpdk.strategy=recycle+magazine"), base)
        self.assertEqual(checksum("dpdk.routes[0].prefix=10.0.0.0/8", "dpdk.routes[0].port=1",
                                  "dpdk.routes[0].mac=02:00:00:00:00:01"), base)
        # needs a restart: the pods roll
        self.assertNotEqual(checksum("dpdk.mbufs=65536"), base)
        self.assertNotEqual(checksum("dpdk.mode=io"), base)

    def test_bad_values_are_refused_naming_the_field(self):
        cases = [
            (["kind=StatefulSet"], "kind"),
            (["resources.cpu=1500m"], "resources.cpu"),
            (["hugepages.size=4Mi"], "hugepages.size"),
            (["sriov.resources[0].name=no-slash", "sriov.resources[0].count=1",
              "sriov.resources[0].networks[0]=a"], "sriov.resources.0.name"),
            (["sriov.resources[0].name=intel.com/x", "sriov.resources[0].count=0",
              "sriov.resources[0].networks[0]=a"], "sriov.resources.0.count"),
            (["sriov.driver=mlx4"], "sriov.driver"),
            (["probes.mode=http"], "probes.mode"),
            (["updateStrategy.type=Recreate"], "updateStrategy.type"),
            (["strategy.type=OnDelete"], "strategy.type"),
            (["podDisruptionBudget.maxUnavailable=many"], "podDisruptionBudget.maxUnavailable"),
            (["terminationGracePeriodSeconds=-1"], "terminationGracePeriodSeconds"),
            (["runtimeClassName=Bad_Name"], "runtimeClassName"),
            (["prometheusRule.runbookBaseUrl=runbooks/"], "prometheusRule.runbookBaseUrl"),
            (["afPacket.enabled=true"], "afPacket.enabled"),  # with sriov on
            (["tls.enabled=true"], "tls.secretName"),
            (["dpdk.mode=bridge"], "dpdk.mode"),
            (["dpdk.poolOps=stack"], "dpdk.poolOps"),
            (["grpc.port=70000"], "grpc.port"),
            (["serviceMonitor.interval=often"], "serviceMonitor.interval"),
            (["extraCapabilities={SYS_ADMIN}"], "extraCapabilities"),
            (["extraCapabilities={SYS_PTRACE}"], "extraCapabilities"),  # an allowlist
            (["metrics.service.type=NodePort"], "metrics.service.type"),
            (["networkPolicy.metricsFrom[0].ports=x"], "networkPolicy.metricsFrom.0"),
            (["podIPFamily=ipv6"], "podIPFamily"),
            (["dpdk.routes[0].prefix=10.0.0.0", "dpdk.routes[0].port=1",
              "dpdk.routes[0].mac=02:00:00:00:00:01"], "dpdk.routes.0.prefix"),
            (["sriov.resourcename=intel.com/x"], "resourcename"),  # misspelt key
            (["sidecars[0].image=x"], "sidecars.0"),  # a container without a name
            (["preflight.enabled=yes"], "preflight.enabled"),
            (["preflight.initcontainer=true"], "initcontainer"),  # misspelt key
        ]
        for sets, field in cases:
            with self.subTest(sets=sets):
                args = ["template", "rel", CHART, "--kube-version", KUBE_VERSION]
                for s in sets:
                    args += ["--set", s]
                code, out, err = helm(*args, check=False)
                self.assertNotEqual(code, 0, "accepted: %s" % sets)
                self.assertIn("values don't meet the specifications", err)
                self.assertIn(field, err)


if __name__ == "__main__":
    unittest.main(verbosity=2)

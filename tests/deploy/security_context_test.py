#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""deploy.security_context: least privilege of the container and the chart, as rendered.

For the default values and every scenario in tests/deploy/helm/ (and a non-root override), every
container the chart renders (skbnfd and the preflight init container):
  - is not privileged, cannot escalate, has a read-only root filesystem;
  - drops every capability and adds only what its data path needs: IPC_LOCK (DPDK locks its
    memory) and, for net_af_packet only, NET_RAW + NET_ADMIN; for net_af_xdp exactly NET_RAW +
    NET_ADMIN + BPF (+ IPC_LOCK): the set tests/integration/af_xdp_test.sh starts skbnfd with;
  - says runAsNonRoot exactly when it does not run as uid 0 (root is the chart's default only
    because vfio device nodes and hugetlbfs mounts handed in by the kubelet belong to root);
and the pod has the RuntimeDefault seccomp profile, no host namespaces, no hostPath volume and no
service-account token. Capabilities that would undo this (SYS_ADMIN, ALL) are refused by
values.schema.json. The image's own default user (deploy/Dockerfile) is not root.
Environment: SKBNF_NODE_DIR (helm; deploy/deps.sh installs it).
"""

import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import helm_test as h  # noqa: E402  (render, helm, container helpers)

DATA_PATH_CAPS = {"IPC_LOCK"}
AF_PACKET_CAPS = {"NET_RAW", "NET_ADMIN"}
AF_XDP_CAPS = {"IPC_LOCK", "NET_RAW", "NET_ADMIN", "BPF"}


def workload(docs):
    (w,) = [d for d in docs if d["kind"] in ("Deployment", "DaemonSet")]
    return w, w["spec"]["template"]["spec"]


class SecurityContextTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.access(h.HELM, os.X_OK):
            raise unittest.SkipTest("helm not installed (deploy/deps.sh)")
        cls.scenarios = {None: h.render()}
        for f in h.values_files():
            cls.scenarios[f] = h.render(f)
        cls.scenarios["af_xdp non-root"] = h.render(
            "afxdp.yaml", "securityContext.runAsUser=10001", "securityContext.runAsGroup=10001",
            "preflight.initContainer=true")
        cls.scenarios["non-root"] = h.render(
            "afpacket.yaml", "securityContext.runAsUser=10001",
            "securityContext.runAsGroup=10001", "preflight.initContainer=true")

    def check_container(self, where, c, af_packet, af_xdp=False):
        sc = c.get("securityContext")
        self.assertIsNotNone(sc, where)
        self.assertIs(sc["privileged"], False, where)
        self.assertIs(sc["allowPrivilegeEscalation"], False, where)
        self.assertIs(sc["readOnlyRootFilesystem"], True, where)
        self.assertEqual(sc["capabilities"]["drop"], ["ALL"], where)
        added = set(sc["capabilities"].get("add", []))
        allowed = DATA_PATH_CAPS | (AF_PACKET_CAPS if af_packet else set())
        if af_xdp:
            self.assertEqual(added, AF_XDP_CAPS, where)
        else:
            self.assertLessEqual(added, allowed, where)
        self.assertIn("IPC_LOCK", added, where)
        self.assertEqual(sc["runAsNonRoot"], sc["runAsUser"] != 0, where)

    def test_every_container_of_every_scenario(self):
        for name, docs in self.scenarios.items():
            w, spec = workload(docs)
            args = " ".join(spec["containers"][0]["args"])
            # NET_RAW + NET_ADMIN: af_packet, and mlx5 VFs (DPDK's mlx5 guide, "Run as non-root")
            af_packet = "--vdev=net_af_packet" in str(docs) or name == "two-pool-mlx5.yaml"
            af_xdp = "--vdev=net_af_xdp" in str(docs)
            # the chart's own containers; sidecars are the user's (values: sidecars)
            containers = [c for c in spec["containers"] + spec.get("initContainers", [])
                          if c["name"] in ("skbnfd", "preflight")]
            self.assertTrue(containers)
            for c in containers:
                self.check_container("%s/%s" % (name, c["name"]), c, af_packet, af_xdp)
            self.assertEqual(spec["securityContext"]["seccompProfile"]["type"], "RuntimeDefault",
                             name)
            for host in ("hostNetwork", "hostPID", "hostIPC"):
                self.assertFalse(spec.get(host, False), (name, host))
            for v in spec.get("volumes", []):
                self.assertNotIn("hostPath", v, (name, v["name"]))
            self.assertIs(spec["automountServiceAccountToken"], False, name)
            # Plaintext gRPC only on loopback; off-host only with TLS and client certificates.
            if "--listen=127.0.0.1:" not in args:
                self.assertIn("--tls-client-ca=", args, name)
            self.assertNotIn("--insecure-remote", args, name)

    def test_default_is_sriov_with_ipc_lock_only(self):
        _, spec = workload(self.scenarios[None])
        caps = spec["containers"][0]["securityContext"]["capabilities"]
        self.assertEqual(caps, {"drop": ["ALL"], "add": ["IPC_LOCK"]})

    def test_non_root_override(self):
        _, spec = workload(self.scenarios["non-root"])
        for c in spec["containers"] + spec["initContainers"]:
            sc = c["securityContext"]
            self.assertEqual((sc["runAsUser"], sc["runAsGroup"], sc["runAsNonRoot"]),
                             (10001, 10001, True), c["name"])

    def test_tls_client_names_reach_skbnfd(self):
        _, spec = workload(self.scenarios["tls.yaml"])
        self.assertIn("--tls-client-names=ops.example.net,ci.example.net",
                      spec["containers"][0]["args"])

    def test_schema_refuses_capabilities_that_undo_the_drop(self):
        for cap in ("SYS_ADMIN", "ALL"):
            rc, out, err = h.helm("template", "rel", h.CHART, "--set",
                                  "extraCapabilities[0]=%s" % cap, check=False)
            self.assertNotEqual(rc, 0, cap)
            self.assertIn("extraCapabilities", out + err, cap)
        rc, out, err = h.helm("template", "rel", h.CHART, "-f",
                              os.path.join(h.VALUES_DIR, "tls.yaml"), "--set",
                              "tls.clientNames[0]=a\\,b", check=False)
        self.assertNotEqual(rc, 0)
        self.assertIn("clientNames", out + err)

    def test_image_default_user_is_not_root(self):
        with open(os.path.join(h.ROOT, "deploy", "Dockerfile")) as f:
            text = f.read()
        last_stage = text[text.rindex("\nFROM "):]
        users = re.findall(r"^USER\s+(\S+)", last_stage, re.M)
        self.assertTrue(users, "the runtime stage sets no USER")
        uid = users[-1].split(":")[0]
        self.assertTrue(uid.isdigit(), "numeric USER (runAsNonRoot can verify it): %s" % uid)
        self.assertNotEqual(int(uid), 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)

#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""deploy.security_context: least privilege of the container and the chart, as rendered.

For the default values and every scenario in tests/deploy/helm/ (sidecars.yaml: non-root with
fsGroup/supplementalGroups, two sidecars and extra volumes), every container the chart renders
(skbnfd and the preflight init container):
  - is not privileged, cannot escalate, has a read-only root filesystem;
  - drops every capability and adds only what its data path needs: IPC_LOCK (DPDK locks its
    memory) and, for net_af_packet only, NET_RAW + NET_ADMIN; for net_af_xdp exactly NET_RAW +
    NET_ADMIN + BPF (+ IPC_LOCK): the set tests/integration/af_xdp_test.sh starts skbnfd with;
  - says runAsNonRoot exactly when it does not run as uid 0;
and the whole pod, sidecars and extra volumes included, is checked against the Pod Security
Standards (tests/deploy/pss.py: the rule list of kubernetes.io/docs/concepts/security/
pod-security-standards/): "restricted" with no violation but the documented ones of skbnfd's own
containers (Capabilities: IPC_LOCK & co. are outside even "baseline"'s list; Running as Non-root
when root), sidecars with none at all; the checker itself fails planted violations. The
control API: a unix socket in a volume only skbnfd mounts, TCP only with TLS, client CA and
roles. extraCapabilities is an allowlist; privileged/escalating/root sidecars, hostPath or
hostPort, and sidecars mounting skbnfd's private volumes are refused. The image's own default
user (deploy/Dockerfile) is not root.
Environment: SKBNF_NODE_DIR (helm; deploy/deps.sh installs it).
"""

import json
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import helm_test as h  # noqa: E402  (render, helm, container helpers)
import pss  # noqa: E402

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
            # The control API: the unix socket in the volume "control", which only skbnfd
            # mounts; a TCP listener only with TLS, a client CA and roles for certificates.
            listen = [a for a in spec["containers"][0]["args"] if a.startswith("--listen=")]
            self.assertEqual(len(listen), 1, name)
            addrs = listen[0][len("--listen="):].split(",")
            self.assertEqual(addrs[0], "unix:/run/skbnf/control.sock", name)
            if addrs[1:]:
                self.assertEqual(addrs[1:], ["$(POD_IP):50051"], name)
                for flag in ("--tls-cert=", "--tls-client-ca=", "--roles=dns:"):
                    self.assertIn(flag, args, name)
            self.assertNotIn("--insecure-remote", args, name)
            # loopback (the pod's containers, kubectl port-forward) is never an identity
            self.assertEqual([a for a in spec["containers"][0]["args"]
                              if "loopback" in a], ["--loopback-role=none"], name)
            self.assertFalse(spec.get("shareProcessNamespace", False), name)
            for c in spec["containers"] + spec.get("initContainers", []):
                mounts = {m["name"] for m in c.get("volumeMounts", [])}
                if c["name"] not in ("skbnfd", "preflight"):
                    self.assertFalse(mounts & {"control", "run", "tls", "client-ca",
                                               "metrics-tls", "metrics-client-ca", "hugepages"},
                                     (name, c["name"]))

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

    def test_tls_roles_reach_skbnfd(self):
        _, spec = workload(self.scenarios["tls.yaml"])
        self.assertIn("--roles=dns:ops.example.net=admin,dns:ci.example.net=operate,"
                      "uri:spiffe://cluster.local/ns/monitoring/sa/skbnf-reader=read,"
                      "gid:2000=read", spec["containers"][0]["args"])

    def test_pod_security_standards(self):
        # every scenario's pod, sidecars and extra volumes included, against "restricted";
        # what breaks it is only skbnfd's own documented needs
        for name, docs in self.scenarios.items():
            _, spec = workload(docs)
            own = {"skbnfd", "preflight"}
            allowed = set()
            for c in spec["containers"] + spec.get("initContainers", []):
                if c["name"] not in own:
                    continue
                allowed.add(("Capabilities", c["name"]))  # IPC_LOCK (& co.): values.yaml
                if c["securityContext"]["runAsUser"] == 0:
                    allowed |= {("Running as Non-root", c["name"]),
                                ("Running as Non-root user", c["name"])}
            for level in pss.LEVELS:
                got = set(pss.violations(spec, level))
                self.assertLessEqual(got, allowed, (name, level))
                for rule, where in got:
                    self.assertIn(where, own, (name, level, rule))
            self.assertEqual([v for v in pss.violations(spec, "baseline")
                              if v[0] != "Capabilities"], [], name)
        # the sidecars scenario: non-root, and its sidecars and volumes meet "restricted"
        _, spec = workload(self.scenarios["sidecars.yaml"])
        self.assertEqual([c["name"] for c in spec["containers"]],
                         ["skbnfd", "log-shipper", "exporter"])
        self.assertEqual(pss.violations(spec, "restricted"), [("Capabilities", "skbnfd")])
        self.assertEqual((spec["securityContext"]["fsGroup"],
                          spec["securityContext"]["supplementalGroups"]), (10001, [2001]))
        shipper = spec["containers"][1]["securityContext"]
        self.assertEqual(shipper, {"privileged": False, "allowPrivilegeEscalation": False,
                                   "readOnlyRootFilesystem": True, "runAsNonRoot": True,
                                   "capabilities": {"drop": ["ALL"]}})
        self.assertEqual(spec["containers"][2]["securityContext"]["capabilities"],
                         {"add": ["NET_BIND_SERVICE"], "drop": ["ALL"]})

    def test_pss_checker_catches_planted_violations(self):
        # negative control: each planted violation is reported by the rule the docs name
        _, clean = workload(self.scenarios["sidecars.yaml"])
        base = set(pss.violations(clean, "restricted"))
        plants = [
            ("Host Namespaces", lambda s: s.update(hostPID=True)),
            # hostPath breaks baseline's rule and restricted's volume types
            ("HostPath Volumes+Volume Types", lambda s: s["volumes"].append(
                {"name": "h", "hostPath": {"path": "/"}})),
            ("Volume Types", lambda s: s["volumes"].append(
                {"name": "n", "nfs": {"server": "x", "path": "/"}})),
            ("Privileged Containers", lambda s: s["containers"][1]["securityContext"].update(
                privileged=True)),
            ("Capabilities", lambda s: s["containers"][1]["securityContext"]["capabilities"]
             .update(add=["SYS_ADMIN"])),
            ("Host Ports", lambda s: s["containers"][2]["ports"][0].update(hostPort=80)),
            ("Privilege Escalation", lambda s: s["containers"][1]["securityContext"].pop(
                "allowPrivilegeEscalation")),
            ("Running as Non-root", lambda s: s["containers"][1]["securityContext"].pop(
                "runAsNonRoot")),
            ("Running as Non-root user", lambda s: s["containers"][2]["securityContext"].update(
                runAsUser=0)),
            ("Seccomp", lambda s: s["securityContext"].pop("seccompProfile")),
            ("Seccomp", lambda s: s["containers"][1]["securityContext"].update(
                seccompProfile={"type": "Unconfined"})),
            ("SELinux", lambda s: s["securityContext"].update(
                seLinuxOptions={"type": "spc_t"})),
            ("/proc Mount Type", lambda s: s["containers"][1]["securityContext"].update(
                procMount="Unmasked")),
            ("Sysctls", lambda s: s["securityContext"].update(
                sysctls=[{"name": "kernel.msgmax", "value": "1"}])),
            ("AppArmor", lambda s: s["containers"][1]["securityContext"].update(
                appArmorProfile={"type": "Unconfined"})),
            ("HostProcess", lambda s: s["securityContext"].update(
                windowsOptions={"hostProcess": True})),
        ]
        for rule, plant in plants:
            spec = json.loads(json.dumps(clean))
            plant(spec)
            new = set(pss.violations(spec, "restricted")) - base
            self.assertTrue(new, rule)
            self.assertEqual({r for r, _ in new}, set(rule.split("+")), rule)

    def test_capabilities_are_an_allowlist(self):
        for cap in ("PERFMON", "SYS_NICE", "NET_RAW"):
            _, spec = workload(h.render(None, "extraCapabilities[0]=%s" % cap))
            add = spec["containers"][0]["securityContext"]["capabilities"]["add"]
            self.assertEqual(add, ["IPC_LOCK", cap])
        _, spec = workload(h.render(None, "extraCapabilities[0]=IPC_LOCK"))  # no duplicate
        self.assertEqual(spec["containers"][0]["securityContext"]["capabilities"]["add"],
                         ["IPC_LOCK"])
        for cap in ("SYS_ADMIN", "ALL", "SYS_PTRACE", "SYS_RAWIO", "DAC_OVERRIDE", "ipc_lock"):
            rc, out, err = h.helm("template", "rel", h.CHART, "--kube-version", h.KUBE_VERSION,
                                  "--set", "extraCapabilities[0]=%s" % cap, check=False)
            self.assertNotEqual(rc, 0, cap)
            self.assertIn("extraCapabilities", out + err, cap)

    def test_sidecars_and_extra_volumes_cannot_undo_it(self):
        sc = "sidecars[0].name=s,sidecars[0].image=i"
        cases = [
            ([sc, "sidecars[0].securityContext.privileged=true"], "sidecars.0.securityContext"),
            ([sc, "sidecars[0].securityContext.allowPrivilegeEscalation=true"],
             "sidecars.0.securityContext"),
            ([sc, "sidecars[0].securityContext.runAsUser=0"], "sidecars.0.securityContext"),
            ([sc, "sidecars[0].securityContext.runAsNonRoot=false"],
             "sidecars.0.securityContext"),
            ([sc, "sidecars[0].securityContext.capabilities.add[0]=NET_ADMIN"],
             "sidecars.0.securityContext"),
            ([sc, "sidecars[0].securityContext.seccompProfile.type=Unconfined"],
             "sidecars.0.securityContext"),
            ([sc, "sidecars[0].ports[0].containerPort=80,sidecars[0].ports[0].hostPort=80"],
             "sidecars.0.ports.0"),
            (["extraVolumes[0].name=root,extraVolumes[0].hostPath.path=/"], "extraVolumes.0"),
            (["extraVolumes[0].name=n,extraVolumes[0].nfs.server=x"], "extraVolumes.0"),
            # skbnfd's private volumes stay its own (render-time checks, naming the volume)
            ([sc, "sidecars[0].volumeMounts[0].name=control",
              "sidecars[0].volumeMounts[0].mountPath=/run/skbnf"],
             "sidecars[0] (s) mounts volume control"),
            ([sc, "sidecars[0].volumeMounts[0].name=run",
              "sidecars[0].volumeMounts[0].mountPath=/var/run/dpdk"],
             "sidecars[0] (s) mounts volume run"),
            (["extraVolumes[0].name=control,extraVolumes[0].emptyDir.medium=Memory"],
             "extraVolumes[0]: the name control is the chart's own volume"),
            (["sidecars[0].name=skbnfd,sidecars[0].image=i"], "the name skbnfd"),
        ]
        for sets, field in cases:
            with self.subTest(sets=sets):
                args = ["template", "rel", h.CHART, "--kube-version", h.KUBE_VERSION]
                for s in sets:
                    args += ["--set", s]
                rc, out, err = h.helm(*args, check=False)
                self.assertNotEqual(rc, 0, "accepted: %s" % sets)
                self.assertIn(field, err)

    def test_non_root_needs_fs_group_for_secrets(self):
        non_root = ("securityContext.runAsUser=10001", "securityContext.runAsGroup=10001")
        tls = ("tls.enabled=true", "tls.secretName=s", "tls.clientNames[0].name=dns:a",
               "tls.clientNames[0].role=read")
        h.render(None, *non_root)  # hugepages (--in-memory: memfd) need no fsGroup
        args = ["template", "rel", h.CHART, "--kube-version", h.KUBE_VERSION]
        for s in non_root + tls:
            args += ["--set", s]
        rc, _, err = h.helm(*args, check=False)
        self.assertNotEqual(rc, 0)
        self.assertIn("securityContext.fsGroup is not set: the TLS Secret's files (mode 0440)", err)
        self.assertIn("set securityContext.fsGroup (e.g. 10001)", err)
        _, spec = workload(h.render(None, *non_root, *tls, "securityContext.fsGroup=10001"))
        self.assertEqual(spec["securityContext"]["fsGroup"], 10001)

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
